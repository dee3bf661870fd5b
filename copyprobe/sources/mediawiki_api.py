"""The MediaWiki Action API as the ``wikipedia`` source uses it: mwclient over a polite session.

Reference: docs/wikipedia.md.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import mwclient
import mwclient.listing
import requests

from copyprobe.web import WebSettings, polite_session, retry_after_seconds

#: Seconds of replication lag above which the server should refuse our requests (the value
#: Wikimedia recommends for bots, https://www.mediawiki.org/wiki/Manual:Maxlag_parameter).
MAXLAG = 5
#: Wait this long after a maxlag answer that carries no Retry-After header.
DEFAULT_LAG_WAIT = 5.0
#: Titles, page ids or revision ids per query (the API's limit for clients without bot rights).
MAX_BATCH = 50
#: Items per request of a list (creation log, recent changes, all pages): the API's limit.
MAX_LIST_CHUNK = 500


def maxlag_delay(resp: requests.Response) -> float | None:
    """Seconds to wait when ``resp`` is a maxlag refusal, else None (the session's hook)."""
    if resp.headers.get("X-Database-Lag") is None:
        return None
    return retry_after_seconds(resp.headers.get("Retry-After")) or DEFAULT_LAG_WAIT


def cacheable(resp: requests.Response) -> bool:
    """Whether an answer may be kept in the disk cache: JSON without an API error."""
    try:
        data = json.loads(resp.content)
    except ValueError:
        return False
    return isinstance(data, dict) and "error" not in data


class PoliteSite(mwclient.Site):
    """An mwclient ``Site`` that sends ``maxlag`` on every API call."""

    def raw_api(self, action: str, http_method: str = "POST", *args: Any,
                **kwargs: Any) -> Any:
        kwargs.setdefault("maxlag", self.max_lag)
        return super().raw_api(action, http_method, *args, **kwargs)


def split_api_url(api_url: str) -> tuple[str, str, str, str]:
    """``https://en.wikipedia.org/w/api.php`` -> (scheme, host, path, ext) for mwclient."""
    parts = urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {api_url!r}")
    folder, _, script = parts.path.rpartition("/")
    name, dot, ext = script.partition(".")
    if name != "api":
        raise ValueError(f"the URL does not end in api.php (or api.<ext>): {api_url!r}")
    return parts.scheme, parts.netloc, folder + "/", dot + ext


def mwclient_version() -> str:
    return str(mwclient.__version__)


def parse_ts(value: str) -> dt.datetime:
    """An API timestamp (``2020-01-02T03:04:05Z``) as an aware UTC datetime."""
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def api_ts(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Revision:
    revid: int
    timestamp: dt.datetime
    wikitext: str | None  # None when content was not asked for (or is hidden)


@dataclass(frozen=True)
class PageInfo:
    """A page as the API describes it now."""

    title: str
    page_id: int | None  # None: the page does not exist
    redirect: bool = False
    disambiguation: bool = False  # the ``disambiguation`` page property
    categories: tuple[str, ...] = ()
    latest_revid: int | None = None


class Wiki:
    """One MediaWiki, reached through ``api_url`` with the given HTTP settings."""

    def __init__(self, api_url: str, settings: WebSettings, *, batch: int = MAX_BATCH,
                 list_chunk: int = MAX_LIST_CHUNK, maxlag: int = MAXLAG,
                 sleep: Any = None) -> None:
        scheme, host, path, ext = split_api_url(api_url)
        extra = {} if sleep is None else {"sleep": sleep}
        self.session = polite_session(settings, retry_on=maxlag_delay, cacheable=cacheable,
                                      **extra)
        self.api_url = api_url
        self.batch = max(1, min(batch, MAX_BATCH))
        self.list_chunk = max(1, min(list_chunk, MAX_LIST_CHUNK))
        self.site = PoliteSite(host, path=path, ext=ext, scheme=scheme, pool=self.session,
                               max_lag=maxlag, max_retries=0)
        info = self.site.get("query", meta="siteinfo", siprop="general|rightsinfo")["query"]
        self.general: dict[str, Any] = dict(info["general"])
        self.rights: dict[str, Any] = dict(info.get("rightsinfo", {}))
        self._scheme = scheme

    # --- site facts --------------------------------------------------------------------------
    @property
    def licence(self) -> str:
        """The wiki's content licence as siteinfo names it (e.g. "Creative Commons
        Attribution-Share Alike 4.0"); empty when the wiki names none."""
        return str(self.rights.get("text") or self.rights.get("url") or "")

    def permalink(self, title: str, revid: int) -> str:
        """A permanent link to one revision: ``<server><script>?title=...&oldid=<revid>``."""
        server = str(self.general.get("server", ""))
        if server.startswith("//"):  # protocol-relative (Wikimedia sites)
            server = f"{self._scheme}:{server}"
        script = str(self.general.get("script", "/index.php"))
        return f"{server}{script}?title={quote(title.replace(' ', '_'))}&oldid={revid}"

    # --- queries -----------------------------------------------------------------------------
    def query(self, **params: Any) -> Iterator[dict[str, Any]]:
        """Each answer of a ``query`` action, following ``continue`` to the end."""
        args = dict(params)
        while True:
            data = self.site.get("query", **args)
            yield data
            more = data.get("continue")
            if not more:
                return
            args.update(more)

    def page_infos(self, titles: Iterable[str] = (), page_ids: Iterable[int] = (),
                   ) -> tuple[list[PageInfo], dict[str, str]]:
        """Describe pages by title (redirects resolved) or by id (not resolved). Returns the
        pages (in the order first met) and ``{asked title: final title}`` for titles that were
        normalised or redirected."""
        titles = list(titles)
        pages: dict[str, dict[str, Any]] = {}
        redirects: dict[str, str] = {}
        normalized: dict[str, str] = {}
        for key, values in (("titles", list(titles)), ("pageids", [str(i) for i in page_ids])):
            for i in range(0, len(values), self.batch):
                chunk = values[i:i + self.batch]
                # titles resolve redirects; page ids describe the pages themselves
                follow = {"redirects": 1} if key == "titles" else {}
                for data in self.query(**{key: "|".join(chunk)}, **follow,
                                       prop="info|pageprops|categories",
                                       ppprop="disambiguation", cllimit=self.batch):
                    q = data.get("query", {})
                    for n in q.get("normalized", []):
                        normalized[n["from"]] = n["to"]
                    for r in q.get("redirects", []):
                        redirects[r["from"]] = r["to"]
                    for p in (q.get("pages") or {}).values():
                        # a missing page id comes back without a title
                        name = p.get("title") or f"#{p.get('pageid')}"
                        have = pages.setdefault(name, {"title": name, **p, "categories": []})
                        have["categories"] += [c["title"] for c in p.get("categories", [])]
        out = []
        for p in pages.values():
            out.append(PageInfo(
                title=p["title"], page_id=None if "missing" in p or "invalid" in p
                else int(p["pageid"]),
                redirect="redirect" in p,
                disambiguation="disambiguation" in p.get("pageprops", {}),
                categories=tuple(dict.fromkeys(p["categories"])),
                latest_revid=int(p["lastrevid"]) if "lastrevid" in p else None))
        # an asked title is normalised first (e.g. its first letter), then redirected
        resolved = {t: redirects.get(normalized.get(t, t), normalized.get(t, t)) for t in titles}
        return out, {k: v for k, v in resolved.items() if v != k}

    def first_revision(self, page_id: int) -> Revision | None:
        return self._one_revision(page_id, rvdir="newer", content=False)

    def revision_before(self, page_id: int, before: dt.datetime | None) -> Revision | None:
        """The last revision strictly before ``before`` (None: the latest revision).

        ``rvstart`` is inclusive, so the API is asked from one second earlier; API timestamps
        have whole seconds.
        """
        start = None if before is None else api_ts(before - dt.timedelta(seconds=1))
        return self._one_revision(page_id, rvdir="older", content=True, rvstart=start)

    def _one_revision(self, page_id: int, *, rvdir: str, content: bool,
                      rvstart: str | None = None) -> Revision | None:
        args: dict[str, Any] = {"prop": "revisions", "pageids": str(page_id), "rvlimit": 1,
                                "rvdir": rvdir, "rvprop": "ids|timestamp"
                                + ("|content" if content else "")}
        if content:
            args["rvslots"] = "main"
        if rvstart is not None:
            args["rvstart"] = rvstart
        data = self.site.get("query", **args)  # one revision: no continuation wanted
        page = next(iter((data.get("query", {}).get("pages") or {}).values()), {})
        revs = page.get("revisions") or []
        return _revision(revs[0]) if revs else None

    def revisions_by_id(self, revids: Iterable[int]) -> dict[int, tuple[str, int, Revision]]:
        """``{revid: (title, page_id, revision)}`` for the given revision ids (missing ones
        are left out)."""
        ids = [str(r) for r in revids]
        out: dict[int, tuple[str, int, Revision]] = {}
        for i in range(0, len(ids), self.batch):
            for data in self.query(prop="revisions", revids="|".join(ids[i:i + self.batch]),
                                   rvprop="ids|timestamp|content", rvslots="main"):
                for p in (data.get("query", {}).get("pages") or {}).values():
                    for r in p.get("revisions", []):
                        rev = _revision(r)
                        out[rev.revid] = (p["title"], int(p["pageid"]), rev)
        return out

    # --- discovery of pages created in a window ----------------------------------------------
    def created_by_log(self, after: dt.datetime, before: dt.datetime) -> list[tuple[str, int]]:
        """(title, page id) of page creations logged in ``[after, before)`` in namespace 0."""
        items = mwclient.listing.List(
            self.site, "logevents", "le", api_chunk_size=self.list_chunk, letype="create",
            lenamespace="0", ledir="newer", lestart=api_ts(after),
            leend=api_ts(before - dt.timedelta(seconds=1)), leprop="title|ids|timestamp")
        return [(e["title"], int(e.get("pageid") or 0)) for e in items]

    def created_by_recentchanges(self, after: dt.datetime, before: dt.datetime,
                                 ) -> list[tuple[str, int]]:
        """(title, page id) of new pages in namespace 0 that recent changes list in the window
        (a wiki keeps recent changes for ``$wgRCMaxAge``, 90 days by default)."""
        items = mwclient.listing.List(
            self.site, "recentchanges", "rc", api_chunk_size=self.list_chunk, rctype="new",
            rcnamespace="0", rcdir="newer", rcstart=api_ts(after),
            rcend=api_ts(before - dt.timedelta(seconds=1)), rcprop="title|ids|timestamp")
        return [(e["title"], int(e.get("pageid") or 0)) for e in items]

    def all_pages(self) -> list[tuple[str, int]]:
        """(title, page id) of every page of namespace 0, redirects included."""
        items = mwclient.listing.List(self.site, "allpages", "ap", api_chunk_size=self.list_chunk,
                                      apnamespace="0", apfilterredir="all")
        return [(e["title"], int(e["pageid"])) for e in items]


def _revision(r: dict[str, Any]) -> Revision:
    slot = (r.get("slots") or {}).get("main", r)
    text = slot.get("*", slot.get("content"))
    return Revision(revid=int(r["revid"]), timestamp=parse_ts(r["timestamp"]),
                    wikitext=None if text is None else str(text))
