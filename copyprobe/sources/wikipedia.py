"""Source ``wikipedia``: articles of any MediaWiki (default: the English Wikipedia) through its
API, each pinned to a revision, dated by its creation (first revision).

Reference: docs/wikipedia.md.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from copyprobe import web
from copyprobe.sources.base import Document, Source, SourceError
from copyprobe.sources.mediawiki_api import split_api_url
from copyprobe.sources.wikitext import (
    DEFAULT_CUT_AT,
    category_names,
    is_redirect,
    template_names,
    to_text,
)
from copyprobe.web import user_agent, user_agent_required

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://en.wikipedia.org/w/api.php"
DEFAULT_MIN_WORDS = 50
#: Hosts whose operators require a User-Agent with contact details
#: (https://meta.wikimedia.org/wiki/User-Agent_policy).
UA_REQUIRED_HOSTS = ("wikipedia.org", "wikimedia.org")
LIST_PREFIXES = ("List of ", "Lists of ")
DISCOVERY = ("auto", "logevents", "recentchanges", "allpages")
DATE_BASIS = "first revision"


def _instant(value: Any, key: str) -> dt.datetime:
    """An ISO date (midnight UTC) or instant (naive = UTC) as an aware UTC datetime."""
    if isinstance(value, dt.datetime):
        t = value
    elif isinstance(value, dt.date):
        t = dt.datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip()
        try:
            t = dt.datetime.fromisoformat(text)
        except ValueError:
            raise SourceError(f"source wikipedia: param {key!r}: not an ISO date or instant: "
                              f"{value!r}") from None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def read_titles(path: str | Path) -> list[str]:
    """The titles of a titles file (one per line; blank lines and ``#`` comments ignored)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"source wikipedia: param 'titles': cannot read {path}: {exc}") from None
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


class Wikipedia(Source):
    name = "wikipedia"
    known_params = frozenset({
        "api_url", "titles", "created_after", "created_before", "limit", "sample_seed",
        "revision_before", "min_words", "cut_at", "user_agent", "max_requests_per_second",
        "max_retries", "manifest", "cache_dir", "discovery", "batch_size"})

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = params
        self.api_url = str(p.get("api_url") or DEFAULT_API_URL)
        try:
            split_api_url(self.api_url)
        except ValueError as exc:
            raise SourceError(f"source wikipedia: param 'api_url': {exc}") from None
        host = (urlsplit(self.api_url).hostname or "").lower()
        ua = user_agent(p.get("user_agent"))
        if ua is None and any(host == h or host.endswith("." + h) for h in UA_REQUIRED_HOSTS):
            raise SourceError(user_agent_required(
                "wikipedia", f" for {host} (Wikimedia's User-Agent policy)"))
        self.user_agent = ua or "copyprobe (MediaWiki crawler; no contact given)"
        modes = [k for k in ("titles", "manifest") if p.get(k) is not None]
        if p.get("created_after") is not None or p.get("created_before") is not None:
            modes.append("created_after/created_before")
        if len(modes) != 1:
            raise SourceError("source wikipedia: give exactly one of 'titles', 'created_after' "
                              f"with 'created_before', or 'manifest' (got {modes or 'none'})")
        if modes[0].startswith("created"):
            for key in ("created_after", "created_before"):
                if p.get(key) is None:
                    raise SourceError(f"source wikipedia: param {key!r} is required with the "
                                      "other end of the creation window")
            self.window = (_instant(p["created_after"], "created_after"),
                           _instant(p["created_before"], "created_before"))
            if self.window[0] >= self.window[1]:
                raise SourceError("source wikipedia: param 'created_after' must be before "
                                  "'created_before'")
        else:
            self.window = None
        rule = p.get("revision_before", "cutoff")
        rule = "cutoff" if rule is None else rule
        self.revision_rule: str | dt.datetime = (
            rule if rule in ("cutoff", "latest") else _instant(rule, "revision_before"))
        self.discovery = str(p.get("discovery") or "auto")
        if self.discovery not in DISCOVERY:
            raise SourceError(f"source wikipedia: param 'discovery': {self.discovery!r} is not "
                              f"one of {', '.join(DISCOVERY)}")
        self.limit = p.get("limit")
        self.sample_seed = p.get("sample_seed", 0)
        self.min_words = int(p.get("min_words", DEFAULT_MIN_WORDS))
        cut = p.get("cut_at", DEFAULT_CUT_AT)
        self.cut_at = DEFAULT_CUT_AT if cut is None else str(cut)  # "" cuts nothing
        self.cache_dir = p.get("cache_dir", web.DEFAULT_CACHE_DIR)
        #: Hooks for tests: the session's sleep (None: time.sleep) and the maxlag sent.
        self.sleep: Any = None
        self.maxlag: int | None = None

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        files = [params["manifest"]] if params.get("manifest") else []
        if isinstance(params.get("titles"), str):
            files.append(params["titles"])
        return files

    # --- the crawl ---------------------------------------------------------------------------
    def _wiki(self) -> Any:
        import mwclient.client

        from copyprobe.sources import mediawiki_api
        from copyprobe.web import WebSettings

        settings = WebSettings(
            user_agent=f"{self.user_agent} {mwclient.client.USER_AGENT}",
            cache_dir=self.cache_dir,
            max_requests_per_second=self.params.get("max_requests_per_second", 1.0),
            max_retries=int(self.params.get("max_retries", 5)))
        size = self.params.get("batch_size")
        return mediawiki_api.Wiki(
            self.api_url, settings, sleep=self.sleep,
            batch=int(size or mediawiki_api.MAX_BATCH),
            list_chunk=int(size or mediawiki_api.MAX_LIST_CHUNK),
            maxlag=mediawiki_api.MAXLAG if self.maxlag is None else self.maxlag)

    def documents(self) -> Iterable[Document]:
        import mwclient.errors
        import requests

        from copyprobe.web import FetchError

        if self.revision_rule == "cutoff" and not self.cutoffs and not self.params.get("manifest"):
            raise SourceError("source wikipedia: revision_before 'cutoff' needs the models' "
                              "cutoffs and none were given: set revision_before to a date or "
                              "'latest'")
        try:
            wiki = self._wiki()
            self._provenance = {"api_url": self.api_url, "mwclient": _mwclient_version(),
                                "revision_before": self._rule_text()}
            if self.params.get("manifest"):
                yield from self._from_manifest(wiki, self.params["manifest"])
            else:
                yield from self._crawl(wiki)
        except FetchError as exc:
            raise SourceError(f"source wikipedia: {exc}") from None
        except (mwclient.errors.MwClientError, requests.HTTPError) as exc:
            raise SourceError(f"source wikipedia: {self.api_url}: {type(exc).__name__}: "
                              f"{exc}") from None

    def _rule_text(self) -> str:
        if isinstance(self.revision_rule, dt.datetime):
            return f"last revision strictly before {self.revision_rule.isoformat()}"
        if self.revision_rule == "latest":
            return "latest revision at the crawl"
        return "last revision strictly before each model cutoff (latest for pages created later)"

    def _crawl(self, wiki: Any) -> Iterator[Document]:
        refs: list[Any]
        if self.window is None:
            refs, how = self._titles_candidates(wiki), "titles"
            describe = list  # described already (a title list is short)
        else:
            refs, how = self._window_candidates(wiki)
            describe = functools.partial(self._described, wiki)
        if self.limit is not None:
            random.Random(self.sample_seed).shuffle(refs)
        taken = 0
        for i in range(0, len(refs), wiki.batch):  # pages are described a batch at a time
            for info, asked in describe(refs[i:i + wiki.batch]):
                if self.limit is not None and taken >= self.limit:
                    return
                docs = list(self._page_documents(wiki, info, asked, how))
                taken += bool(docs)
                yield from docs

    def _titles_candidates(self, wiki: Any) -> list[tuple[Any, str]]:
        raw = self.params["titles"]
        titles = read_titles(raw) if isinstance(raw, str) else [str(t) for t in raw]
        infos, resolved = wiki.page_infos(titles=titles)
        by_title = {i.title: i for i in infos}
        out, seen = [], set()
        for t in titles:
            final = resolved.get(t, t)
            if final in seen:
                self.skip(t, f"duplicate: resolves to {final!r}, listed already"
                          if final != t else "duplicate: listed twice")
                continue
            seen.add(final)
            info = by_title.get(final)
            if info is None or info.page_id is None:
                self.skip(t, "missing page")
                continue
            out.append((info, t))
        return out

    def _window_candidates(self, wiki: Any) -> tuple[list[tuple[str, int]], str]:
        """(title, page id) of pages created in the window, by title, and how they were found."""
        after, before = self.window
        methods = [self.discovery] if self.discovery != "auto" else [
            "logevents", "recentchanges", "allpages"]
        found: list[tuple[str, int]] = []  # (title, page id); id 0: deleted since
        how = methods[-1]
        for how in methods:
            if how == "logevents":
                found = wiki.created_by_log(after, before)
            elif how == "recentchanges":
                found = wiki.created_by_recentchanges(after, before)
            else:
                found = []
                for title, page_id in wiki.all_pages():
                    first = wiki.first_revision(page_id)
                    if first is not None and after <= first.timestamp < before:
                        found.append((title, page_id))
            if found:
                break
        log.info("wikipedia: %d pages created in the window found by %s", len(found), how)
        unique: dict[Any, tuple[str, int]] = {}  # one entry per page (by id, or title if 0)
        for title, pid in sorted(found):
            unique.setdefault(pid or title, (title, pid))
        return sorted(unique.values()), how

    def _described(self, wiki: Any, found: list[tuple[str, int]]) -> list[tuple[Any, str]]:
        """Candidates ``(PageInfo, title)``; pages deleted since their creation are skipped."""
        infos, _ = wiki.page_infos(page_ids=[pid for _, pid in found if pid])
        by_id = {i.page_id: i for i in infos if i.page_id is not None}
        out = []
        for title, pid in found:
            if pid not in by_id:
                self.skip(title, "missing page (created in the window, deleted since)")
            else:
                out.append((by_id[pid], title))
        return out

    def _page_documents(self, wiki: Any, info: Any, asked: str, how: str,
                        ) -> Iterator[Document]:
        title = info.title
        if title.startswith(LIST_PREFIXES):
            self.skip(title, "list page (title starts with 'List of' or 'Lists of')")
            return
        if info.redirect:
            self.skip(title, "redirect")
            return
        if info.disambiguation:
            self.skip(title, "disambiguation page (page property 'disambiguation')")
            return
        cats = [c for c in info.categories if "disambiguation" in c.lower()]
        if cats:
            self.skip(title, f"disambiguation page (category {cats[0]!r})")
            return
        first = wiki.first_revision(info.page_id)
        if first is None:
            self.skip(title, "page has no revisions")
            return
        if self.window is not None and not (self.window[0] <= first.timestamp < self.window[1]):
            self.skip(title, f"first revision {first.timestamp.isoformat()} lies outside the "
                             "creation window")
            return
        prov = {**self._provenance, "selected_by": how,
                **({"requested_title": asked} if asked != title else {})}
        for ref, instant, as_of, doc_id in self._targets(info, first.timestamp):
            rev = wiki.revision_before(info.page_id, instant)
            if rev is None:
                self.skip(ref, f"no revision before {instant.isoformat()}")
                continue
            doc = self._document(wiki, title, info.page_id, rev, first.timestamp, as_of,
                                 doc_id, prov, ref)
            if doc is not None:
                yield doc

    def _targets(self, info: Any, created: dt.datetime,
                 ) -> list[tuple[str, dt.datetime | None, dt.date | None, str]]:
        """(skip ref, revision strictly before this instant or None = latest, as_of, doc_id)."""
        base = f"wikipedia:{info.page_id}"
        if self.revision_rule == "latest":
            return [(info.title, None, None, base)]
        if isinstance(self.revision_rule, dt.datetime):
            return [(info.title, self.revision_rule, None, base)]
        out = []
        for c in self.cutoffs:
            instant = dt.datetime(c.year, c.month, c.day, tzinfo=dt.UTC)
            out.append((f"{info.title}@{c.isoformat()}", instant if created < instant else None,
                        c, f"{base}@{c.isoformat()}"))
        return out

    def _document(self, wiki: Any, title: str, page_id: int, rev: Any,
                  created: dt.datetime, as_of: dt.date | None, doc_id: str,
                  prov: Mapping[str, Any], ref: str, filters: bool = True) -> Document | None:
        if rev.wikitext is None:
            self.skip(ref, f"revision {rev.revid}: text hidden or not returned")
            return None
        if filters:
            if is_redirect(rev.wikitext):
                self.skip(ref, f"revision {rev.revid} is a redirect")
                return None
            marks = [f"template {t!r}" for t in template_names(rev.wikitext)
                     if "disambig" in t.lower()]
            marks += [f"category {c!r}" for c in category_names(rev.wikitext)
                      if "disambiguation" in c.lower()]
            if marks:
                self.skip(ref, f"disambiguation page ({marks[0]})")
                return None
        text = to_text(rev.wikitext, self.cut_at)
        words = len(text.split())
        if filters and words < self.min_words:
            self.skip(ref, f"stub: {words} words, fewer than min_words={self.min_words}")
            return None
        return Document(
            doc_id=doc_id, title=title, text=text, published=created.date(),
            date_basis=DATE_BASIS, url=wiki.permalink(title, rev.revid), licence=wiki.licence,
            provenance={**prov, "revision_timestamp": rev.timestamp.isoformat()},
            page_id=str(page_id), revision_id=str(rev.revid),
            revision_timestamp=rev.timestamp, as_of=as_of)

    # --- rerun from a manifest ---------------------------------------------------------------
    def _from_manifest(self, wiki: Any, path: str) -> Iterator[Document]:
        rows = _read_manifest(path)
        fetched = wiki.revisions_by_id(int(r) for r in rows["revision_id"])
        prov = {**self._provenance, "selected_by": f"manifest {path}"}
        for row in rows.itertuples(index=False):
            revid = int(row.revision_id)
            if revid not in fetched:
                self.skip(f"revision {revid}", "revision not found (deleted or hidden)")
                continue
            title, page_id, rev = fetched[revid]
            published = _date_or_none(row.published)
            created = (dt.datetime(published.year, published.month, published.day,
                                   tzinfo=dt.UTC) if published else None)
            if created is None:
                first = wiki.first_revision(page_id)
                created = first.timestamp if first else rev.timestamp
            doc = self._document(wiki, title, page_id, rev, created, _date_or_none(row.as_of),
                                 str(row.doc_id), prov, f"revision {revid}", filters=False)
            if doc is None:
                continue
            if getattr(row, "text_sha256", None):
                import hashlib

                if hashlib.sha256(doc.text.encode("utf-8")).hexdigest() != row.text_sha256:
                    log.warning("revision %s (%s): the text differs from the manifest's hash "
                                "(a changed converter or cut_at?)", revid, title)
            yield doc


def _read_manifest(path: str) -> pd.DataFrame:
    try:
        rows = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # missing file; not Parquet (ArrowInvalid)
        raise SourceError(f"source wikipedia: param 'manifest': cannot read {path}: "
                          f"{exc}") from None
    need = {"doc_id", "revision_id", "published", "as_of"}
    if not need <= set(rows.columns):
        raise SourceError(f"source wikipedia: manifest {path}: missing column(s) "
                          f"{sorted(need - set(rows.columns))}")
    for i, r in enumerate(rows["revision_id"]):
        if not str(r).strip().isdigit():
            raise SourceError(f"source wikipedia: manifest {path}, row {i}: revision_id "
                              f"{r!r} is not a revision number")
    return rows


def _date_or_none(value: Any) -> dt.date | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return pd.Timestamp(value).date()


def _mwclient_version() -> str:
    from copyprobe.sources.mediawiki_api import mwclient_version

    return mwclient_version()
