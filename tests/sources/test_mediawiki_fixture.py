"""The test MediaWiki serves what tests/servers/wiki_pages.py says it holds: checked with plain
HTTP requests against api.php (no crawler code)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pytest
import requests

import mediawiki as mw  # tests/servers, put on sys.path by conftest.py


def _query(wiki, **params) -> dict:
    r = requests.get(wiki.api_url, params={**params, "action": "query", "format": "json",
                                           "formatversion": "2"}, timeout=30)
    r.raise_for_status()
    data = r.json()
    assert "error" not in data, data
    return data["query"]


def _stamp(instant: dt.datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_siteinfo(mediawiki):
    q = _query(mediawiki, meta="siteinfo", siprop="general|namespaces|rightsinfo|statistics")
    general = q["general"]
    assert general["sitename"] == "TestWiki"
    assert general["generator"].startswith("MediaWiki 1.")
    assert general["server"] == mediawiki.base_url
    assert general["script"] == "/index.php"
    names = {int(k): v["name"] for k, v in q["namespaces"].items()}
    assert (names[6], names[10], names[14]) == ("File", "Template", "Category")
    assert q["rightsinfo"] == {"url": mw.RIGHTS_URL, "text": mw.RIGHTS_TEXT}
    # every dumped page, and nothing else (the install's Main Page is deleted)
    assert q["statistics"]["pages"] == 15


def test_all_pages_imported(mediawiki, wiki_pages):
    for ns in (0, 10):
        listed = _query(mediawiki, list="allpages", apnamespace=ns, aplimit="max")["allpages"]
        assert sorted(p["title"] for p in listed) == sorted(wiki_pages.titles(ns=ns)), ns
    assert len(wiki_pages.PAGES) == 15
    assert len(wiki_pages.titles("article")) == 5
    assert wiki_pages.titles("redirect") == ["Harrowgate Light", "Harrowgate lighthouse"]


def test_revision_timestamps_and_texts_as_dumped(mediawiki, wiki_pages):
    for page in wiki_pages.PAGES:
        revs = mediawiki.revisions(page.title)
        assert [r["timestamp"] for r in revs] == [_stamp(r.timestamp) for r in page.revisions]
        assert [r["user"] for r in revs] == [f"imported>{r.user}" for r in page.revisions]
    title = "Harrowgate Lighthouse"
    pid = mediawiki.page_id(title)
    ids = mediawiki.revision_ids(title)
    assert len(ids) == 4 and ids == sorted(ids)
    assert mediawiki.revision_id(title, wiki_pages.page(title).revisions[2].timestamp) == ids[2]
    q = _query(mediawiki, prop="revisions", revids="|".join(map(str, ids)),
               rvprop="ids|content", rvslots="main")
    (page,) = q["pages"]
    assert page["pageid"] == pid
    texts = {r["revid"]: r["slots"]["main"]["content"] for r in page["revisions"]}
    # an import stores the dumped text byte for byte (no pre-save transform)
    assert [texts[i] for i in ids] == [r.text for r in wiki_pages.page(title).revisions]


def test_rvstart_is_inclusive_so_strictly_before_asks_one_second_earlier(mediawiki, wiki_pages):
    title, t = "Veloria moth", wiki_pages.ROUND_INSTANT

    def newest_at_or_before(instant: dt.datetime) -> str:
        (page,) = _query(mediawiki, prop="revisions", titles=title, rvlimit=1, rvdir="older",
                         rvstart=_stamp(instant), rvprop="timestamp")["pages"]
        return page["revisions"][0]["timestamp"]

    assert newest_at_or_before(t) == "2023-01-01T00:00:00Z"
    strictly = wiki_pages.revision_before(title, t)
    assert newest_at_or_before(t - dt.timedelta(seconds=1)) == _stamp(strictly.timestamp)
    assert strictly.timestamp == wiki_pages.ts("2019-05-20T14:00:00Z")
    assert wiki_pages.revision_before(title, wiki_pages.ts("2019-01-01T00:00:00Z")) is None


def test_redirects_resolve(mediawiki):
    q = _query(mediawiki, titles="Harrowgate Light|Harrowgate lighthouse", redirects=1)
    assert {(r["from"], r["to"]) for r in q["redirects"]} == {
        ("Harrowgate Light", "Harrowgate Lighthouse"),
        ("Harrowgate lighthouse", "Harrowgate Lighthouse")}
    assert [p["title"] for p in q["pages"]] == ["Harrowgate Lighthouse"]
    (target,) = _query(mediawiki, titles="Harrowgate Lighthouse", prop="redirects")["pages"]
    assert sorted(r["title"] for r in target["redirects"]) == [
        "Harrowgate Light", "Harrowgate lighthouse"]


def test_disambiguation_by_template_or_category_and_no_page_property(mediawiki):
    pages = {p["title"]: p for p in _query(
        mediawiki, titles="Quenby|Corrin|Harrowgate Lighthouse",
        prop="templates|categories|pageprops")["pages"]}
    assert [t["title"] for t in pages["Quenby"]["templates"]] == ["Template:Disambiguation"]
    assert "categories" not in pages["Quenby"]
    assert [c["title"] for c in pages["Corrin"]["categories"]] == [
        "Category:Disambiguation pages"]
    assert "templates" not in pages["Corrin"]
    # no Disambiguator extension here: the page property is never set
    assert all("disambiguation" not in p.get("pageprops", {}) for p in pages.values())
    flagship = pages["Harrowgate Lighthouse"]
    assert {t["title"] for t in flagship["templates"]} == {
        "Template:Infobox", "Template:Cite web", "Template:Reflist"}
    assert "Category:Harrowshire buildings" in {c["title"] for c in flagship["categories"]}


def test_creations_are_listed_in_recent_changes(mediawiki, wiki_pages):
    q = _query(mediawiki, list="recentchanges", rctype="new", rcnamespace=0, rclimit="max",
               rcprop="title|timestamp")
    got = {c["title"]: c["timestamp"] for c in q["recentchanges"]}
    assert got == {t: _stamp(wiki_pages.creation(t)) for t in wiki_pages.titles(ns=0)}


def test_maxlag_minus_two_gives_a_real_maxlag_error(mediawiki):
    r = requests.get(mediawiki.api_url, timeout=30, params={
        "action": "query", "meta": "siteinfo", "format": "json", "maxlag": -2})
    assert r.status_code == 200
    assert r.json()["error"]["code"] == "maxlag"
    assert r.headers["MediaWiki-API-Error"] == "maxlag"
    assert int(r.headers["Retry-After"]) > 0
    assert "X-Database-Lag" in r.headers


def test_through_the_fault_proxy(mediawiki, wiki_proxy):
    wiki_proxy.fail_next("503", retry_after=2)
    r = requests.get(wiki_proxy.api_url, timeout=30,
                     params={"action": "query", "meta": "siteinfo", "format": "json"})
    assert (r.status_code, r.headers["Retry-After"]) == (503, "2")
    r = requests.get(wiki_proxy.api_url, timeout=30,
                     params={"action": "query", "meta": "siteinfo", "format": "json"})
    assert r.json()["query"]["general"]["sitename"] == "TestWiki"
    assert (wiki_proxy.received, wiki_proxy.forwarded) == (2, 1)


def test_start_failure_names_the_script(tmp_path):
    # a fake MediaWiki folder whose install.php fails, run by the real php
    if shutil.which("php") is None:
        pytest.skip("php is not installed")
    root = tmp_path / "fake-mediawiki"
    (root / "maintenance").mkdir(parents=True)
    (root / "maintenance" / "install.php").write_text(
        '<?php fwrite(STDERR, "no database for you\\n"); exit(3);\n')
    wiki = mw.MediaWiki(root=root, workdir=tmp_path / "work")
    with pytest.raises(mw.MediaWikiError, match=r"(?s)install\.php.*exited 3.*no database for you"
                       ) as failure:
        wiki.start()
    assert "--pass ***" in str(failure.value)  # the admin password is not shown
    assert not wiki.running


def test_unavailable_reason_names_what_is_missing(tmp_path):
    assert "'no-such-php-binary' is not on PATH" in mw.unavailable_reason("no-such-php-binary")
    if mw.unavailable_reason() is None:
        assert f"no MediaWiki at {tmp_path}" in mw.unavailable_reason(root=tmp_path)
    with pytest.raises(mw.MediaWikiError, match="not on PATH"):
        mw.MediaWiki(php="no-such-php-binary").start()


def test_stop_kills_the_server_and_its_workers_and_removes_its_folder(mediawiki):
    # a second, short-lived wiki with PHP worker processes (they outlive a plain kill)
    wiki = mw.MediaWiki(workers=2).start()
    try:
        assert wiki.startup_seconds < 60
        workdir, pgid = wiki.workdir, os.getpgid(wiki._proc.pid)
        assert wiki.page_id("Veloria moth") > 0
        members = [p for p in Path("/proc").iterdir() if p.name.isdigit()
                   and _pgid(p) == pgid]
        assert len(members) >= 3  # the parent and two workers
    finally:
        wiki.stop()
    assert not wiki.running
    assert not workdir.exists()
    deadline = time.monotonic() + 5  # orphaned workers are reaped by init, not by us
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    assert not _group_alive(pgid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _pgid(proc_dir: Path) -> int | None:
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def test_install_script_is_a_no_op_when_everything_is_present(install_script):
    if mw.unavailable_reason() is not None:
        pytest.skip(f"would install packages: {mw.unavailable_reason()}")
    # twenty times: the check once failed about one run in three (php -m | grep -q under
    # pipefail, php dying of the pipe grep had closed)
    for _ in range(20):
        res = install_script()
        assert res.returncode == 0, res.stderr
        assert "nothing to do" in res.stdout and "+ apt-get" not in res.stdout, res.stdout


def test_install_script_dry_run_when_mediawiki_is_missing(tmp_path, install_script):
    if shutil.which("apt-get") is None or shutil.which("php") is None:
        pytest.skip("needs apt-get and php to plan an install")
    policy = tmp_path / "policy-rc.d"
    res = install_script("--dry-run", MEDIAWIKI_ROOT=str(tmp_path / "none"),
                         POLICY_RC_D=str(policy))
    assert res.returncode == 0, res.stderr
    assert f"missing: MediaWiki at {tmp_path / 'none'}" in res.stdout
    lines = res.stdout.splitlines()
    install = "+ apt-get install -y --no-install-recommends mediawiki php-sqlite3 php-cli"
    assert install in lines
    # the service guard is made before the install and removed after it
    made = next(i for i, x in enumerate(lines) if x.startswith("+ sh -c") and str(policy) in x)
    assert made < lines.index(install) < lines.index(f"+ rm -f {policy}")
    assert not policy.exists()  # a dry run changes nothing
    assert install_script("--bogus").returncode == 2


def test_the_proxys_faults_are_retried_by_the_polite_session_and_mwclient_reads_through_it(
        mediawiki, wiki_proxy):
    # the faults the crawler tests script are ones copyprobe.web retries, and mwclient speaks to
    # the test wiki (host "127.0.0.1:PORT", path "/") through that session
    mwclient = pytest.importorskip("mwclient")
    from copyprobe.web import WebSettings, polite_session

    session = polite_session(WebSettings(
        user_agent="copyprobe-test/0 (test@example.org)", max_requests_per_second=None,
        backoff_base=0.01, backoff_max=0.05))
    wiki_proxy.fail_next("429", retry_after=0)
    wiki_proxy.fail_next("drop")
    wiki_proxy.fail_next("503")
    site = mwclient.Site(wiki_proxy.host, path=wiki_proxy.path, scheme="http", pool=session,
                         clients_useragent="copyprobe-test/0 (test@example.org)")
    assert site.site["sitename"] == "TestWiki"
    assert session.stats["retries"] == 3
    first = next(iter(site.pages["Veloria moth"].revisions(dir="newer", max_items=1)))
    assert first["timestamp"][:3] == (2019, 5, 20)  # mwclient gives a time.struct_time
    assert wiki_proxy.faults_served == 3 and wiki_proxy.forwarded == wiki_proxy.received - 3
