"""A real MediaWiki for tests: Debian's ``mediawiki`` package with SQLite, served by
``php -S`` on 127.0.0.1, holding exactly the pages of :mod:`wiki_pages` (imported from an
export-0.11 XML dump, so every revision keeps its timestamp).

Start-up, in a fresh temporary folder (about 2-8 s once the packages are installed):

1. ``maintenance/install.php`` with ``MW_CONFIG_FILE`` pointing at the folder's own
   ``LocalSettings.php`` (the variable is read by maintenance scripts and the web server alike);
2. settings appended to that file: Debian's paths under /var (cache, logs) moved into the
   folder, ``$wgRCMaxAge`` of a century (else recent changes older than 90 days are dropped),
   a CC BY-SA 4.0 rights text, the Cite and ParserFunctions extensions;
3. the install's "Main Page" deleted, so the wiki holds only the dumped pages;
4. ``importDump.php`` (with link updates, so categories, templates and redirects are queryable),
   ``rebuildrecentchanges.php``, ``initSiteStats.php --update``, ``runJobs.php``;
5. ``php -S 127.0.0.1:PORT -t /usr/share/mediawiki`` in its own process group (PHP's worker
   processes outlive a plain kill of the parent, so the whole group is killed at stop), then a
   wait until ``api.php`` answers.

Page and revision ids are renumbered by the import: ask :meth:`MediaWiki.page_id` and
:meth:`MediaWiki.revision_ids`. Imported editors appear as ``imported>Name``. The wiki has no
Disambiguator extension, so no page has the ``disambiguation`` page property.

``python tests/servers/mediawiki.py`` starts one and keeps it running until Ctrl-C.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

# the page set next to this file (the tests folder is not a package, so it is loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import wiki_pages  # noqa: E402

MEDIAWIKI_ROOT = Path("/usr/share/mediawiki")

_SETTINGS = """
# --- copyprobe test fixture: everything under {work} ---
$wgServer = "{server}";
$wgCacheDirectory = "{work}/cache";
$wgUploadDirectory = "{work}/images";
$wgDBerrorLog = "{work}/logs/dberror.log";
$wgDebugLogGroups = [
    'exception' => "{work}/logs/exception.log",
    'error' => "{work}/logs/error.log",
    'fatal' => "{work}/logs/fatal.log",
];
# keep recent changes for every imported revision (the default keeps 90 days)
$wgRCMaxAge = 100 * 365 * 24 * 3600;
$wgRightsText = "{rights_text}";
$wgRightsUrl = "{rights_url}";
$wgShowExceptionDetails = true;
# jobs run by runJobs.php at start-up, not during test requests
$wgJobRunRate = 0;
wfLoadExtension( 'Cite' );
wfLoadExtension( 'ParserFunctions' );
"""

RIGHTS_TEXT = "Creative Commons Attribution-Share Alike 4.0"
RIGHTS_URL = "https://creativecommons.org/licenses/by-sa/4.0/"


class MediaWikiError(RuntimeError):
    """The wiki could not be installed, filled or started (the message says which step)."""


def unavailable_reason(php: str = "php", root: Path = MEDIAWIKI_ROOT) -> str | None:
    """Why a MediaWiki cannot be started here, or None when it can."""
    if shutil.which(php) is None:
        return f"{php!r} is not on PATH (scripts/install-test-services installs php-cli)"
    if not (root / "maintenance" / "install.php").is_file():
        return f"no MediaWiki at {root} (scripts/install-test-services installs Debian's mediawiki)"
    modules = subprocess.run([php, "-m"], capture_output=True, text=True).stdout.lower().split()
    if "pdo_sqlite" not in modules:
        return "php has no pdo_sqlite module (scripts/install-test-services installs php-sqlite3)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MediaWiki:
    """A running test wiki (use as a context manager, or :meth:`start` / :meth:`stop`).

    ``pages``: what to import (default :data:`wiki_pages.PAGES`); ``workdir``: where the
    database, settings and logs go (default a temporary folder, removed at stop);
    ``workers``: PHP_CLI_SERVER_WORKERS (1 = one request at a time).
    """

    def __init__(self, pages: Any = None, *, workdir: str | Path | None = None,
                 port: int | None = None, workers: int = 1, php: str = "php",
                 root: Path = MEDIAWIKI_ROOT, startup_timeout: float = 60.0) -> None:
        self.pages = wiki_pages.PAGES if pages is None else tuple(pages)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else None
        self.port = port
        self.workers = workers
        self.php = php
        self.root = Path(root)
        self.startup_timeout = startup_timeout
        self.timings: dict[str, float] = {}
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen | None = None

    # --- addresses ---------------------------------------------------------------------------
    scheme = "http"
    path = "/"

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` (mwclient's ``Site(host, path="/", scheme="http")``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api.php"

    @property
    def index_url(self) -> str:
        return f"{self.base_url}/index.php"

    # --- life cycle --------------------------------------------------------------------------
    def start(self) -> MediaWiki:
        if self._proc is not None:
            return self
        reason = unavailable_reason(self.php, self.root)
        if reason:
            raise MediaWikiError(reason)
        t0 = time.monotonic()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="copyprobe-mediawiki-"))
        if self.port is None:
            self.port = free_port()
        try:
            self._install()
            self._fill()
            self._serve()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # the group's workers are gone too once the group is signalled; reap the leader
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> MediaWiki:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # --- steps -------------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["MW_CONFIG_FILE"] = str(self.workdir / "conf" / "LocalSettings.php")
        env["PHP_CLI_SERVER_WORKERS"] = str(self.workers)
        if self.workers <= 1:
            env.pop("PHP_CLI_SERVER_WORKERS")
        return env

    def _maintenance(self, script: str, *args: str) -> str:
        t0 = time.monotonic()
        cmd = [self.php, f"maintenance/{script}", *args]
        res = subprocess.run(cmd, cwd=self.root, env=self._env(), capture_output=True,
                             text=True, timeout=300)
        self.timings[script] = self.timings.get(script, 0.0) + time.monotonic() - t0
        if res.returncode != 0:
            tail = (res.stdout + res.stderr).strip()[-2000:]
            shown = ["***" if i and cmd[i - 1] == "--pass" else a for i, a in enumerate(cmd)]
            raise MediaWikiError(f"{' '.join(shown)} (in {self.root}) exited "
                                 f"{res.returncode}:\n{tail}")
        return res.stdout

    def _install(self) -> None:
        w = self.workdir
        for sub in ("db", "conf", "cache", "images", "logs"):
            (w / sub).mkdir(parents=True, exist_ok=True)
        self._maintenance(
            "install.php", "--dbtype", "sqlite", "--dbpath", str(w / "db"),
            "--dbname", "testwiki", "--server", self.base_url, "--scriptpath", "",
            "--confpath", str(w / "conf"), "--pass", secrets.token_urlsafe(16) + "-Aa1",
            "TestWiki", "Admin")
        with open(w / "conf" / "LocalSettings.php", "a", encoding="utf-8") as f:
            f.write(_SETTINGS.format(work=w, server=self.base_url, rights_text=RIGHTS_TEXT,
                                     rights_url=RIGHTS_URL))

    def _fill(self) -> None:
        w = self.workdir
        (w / "delete.txt").write_text("Main Page\n", encoding="utf-8")
        self._maintenance("deleteBatch.php", "-r", "test wiki: only the dumped pages",
                          str(w / "delete.txt"))
        dump = wiki_pages.write_dump(w / "pages.xml", self.pages)
        self._maintenance("importDump.php", str(dump))
        self._maintenance("rebuildrecentchanges.php")
        self._maintenance("initSiteStats.php", "--update")
        self._maintenance("runJobs.php")

    def _serve(self) -> None:
        t0 = time.monotonic()
        log = open(self.workdir / "logs" / "php-server.log", "wb")
        self._proc = subprocess.Popen(
            [self.php, "-S", self.host, "-t", str(self.root)], cwd=self.root, env=self._env(),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + self.startup_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise MediaWikiError(f"php -S {self.host} exited {self._proc.returncode}: "
                                     f"{self._server_log()}")
            try:
                general = self.api(action="query", meta="siteinfo")["query"]["general"]
                if general.get("sitename") == "TestWiki":
                    self.timings["serve"] = time.monotonic() - t0
                    return
            except (OSError, ValueError, KeyError) as exc:
                last = exc
            time.sleep(0.1)
        raise MediaWikiError(f"{self.api_url} did not answer within {self.startup_timeout} s "
                             f"(last error: {last}); server log: {self._server_log()}")

    def _server_log(self) -> str:
        try:
            return (self.workdir / "logs" / "php-server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    # --- queries (plain HTTP, no crawler code) -----------------------------------------------
    def api(self, timeout: float = 30.0, **params: Any) -> dict:
        """GET api.php with ``params`` (format=json added); the decoded answer."""
        query = urllib.parse.urlencode({**params, "format": "json", "formatversion": "2"})
        with urllib.request.urlopen(f"{self.api_url}?{query}", timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def page_id(self, title: str) -> int:
        """The page id the import gave ``title`` (KeyError if the wiki has no such page)."""
        page = self.api(action="query", titles=title)["query"]["pages"][0]
        if page.get("missing") or "pageid" not in page:
            raise KeyError(f"no page {title!r} on the test wiki")
        return int(page["pageid"])

    def revisions(self, title: str) -> list[dict]:
        """``[{"revid", "parentid", "timestamp", "user"}, ...]`` of ``title``, oldest first."""
        page = self.api(action="query", prop="revisions", titles=title, rvdir="newer",
                        rvlimit="max", rvprop="ids|timestamp|user")["query"]["pages"][0]
        if page.get("missing"):
            raise KeyError(f"no page {title!r} on the test wiki")
        return page["revisions"]

    def revision_ids(self, title: str) -> list[int]:
        """Revision ids of ``title``, oldest first (same order as ``wiki_pages`` lists them)."""
        return [int(r["revid"]) for r in self.revisions(title)]

    def revision_id(self, title: str, timestamp: Any) -> int:
        """The id of ``title``'s revision made at ``timestamp`` (datetime or ISO text)."""
        if not isinstance(timestamp, str):
            timestamp = timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
        for r in self.revisions(title):
            if r["timestamp"] == timestamp:
                return int(r["revid"])
        raise KeyError(f"{title!r} has no revision at {timestamp} on the test wiki")


if __name__ == "__main__":
    with MediaWiki() as wiki:
        print(f"TestWiki at {wiki.api_url} (started in {wiki.startup_seconds:.1f} s: "
              f"{ {k: round(v, 2) for k, v in wiki.timings.items()} }); Ctrl-C stops it",
              flush=True)
        try:
            while wiki.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
