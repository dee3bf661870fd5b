"""Web pages from a URL list (news articles, documentation pages), one document per page.

Reference: docs/materials.md.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import re
import urllib.robotparser
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pandas as pd
import trafilatura
from trafilatura.utils import load_html

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.materials.common import (
    ItemProblem,
    int_param,
    resolve_path,
    seeded_sample,
    str_param,
    word_count,
)
from copyprobe.sources.materials.rights import (
    Notice,
    best_notice,
    find_notices,
    parse_notice,
    parse_year,
    strip_notices,
)
from copyprobe import web
from copyprobe.web import (
    CACHE_HEADER,
    FetchError,
    WebSettings,
    polite_session,
    user_agent,
    user_agent_required,
)

KIND = "web_pages"
ROW_COLUMNS = ("category", "holder", "year", "notice", "title", "published", "licence")
_PARAMS = {"urls", "user_agent", "max_requests_per_second", "cache_dir", "max_retries",
           "timeout", "category", "min_words", "strip_notices", "limit", "sample_seed",
           "on_error", "respect_robots"}
_HTML_TYPES = ("text/html", "application/xhtml+xml", "application/xml", "text/xml")
_META_RIGHTS = ("copyright", "dcterms.rights", "dc.rights", "rights")
_SKIP_TAGS = ("script", "style", "noscript", "template", "svg")


@dataclass(frozen=True)
class UrlRow:
    """One entry of the URL list: the URL, where it was listed, and its optional columns."""

    url: str
    where: str  # "urls[2]", "list.csv row 3 (line 4)", "urls.txt line 7"
    columns: dict[str, Any] = field(default_factory=dict)


def check_url(url: Any, where: str) -> str:
    if not isinstance(url, str) or not url.strip():
        raise SourceError(f"source {KIND}: {where}: {url!r} is not a URL")
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SourceError(f"source {KIND}: {where}: {url!r} is not an http(s) URL with a host")
    return url


def _row(url: Any, where: str, cols: Mapping[str, Any]) -> UrlRow:
    """A checked list entry: the URL, and the year and published columns parsed."""
    out = {k: (v.strip() if isinstance(v, str) else v) for k, v in cols.items()
           if k in ROW_COLUMNS and v is not None and str(v).strip()}
    try:
        if "year" in out:
            out["year"] = parse_year(out["year"])
        if "published" in out:
            p = out["published"]
            out["published"] = p if isinstance(p, dt.date) else dt.date.fromisoformat(str(p))
    except ValueError as exc:
        raise SourceError(f"source {KIND}: {where}: {exc}") from None
    return UrlRow(check_url(url, where), where, out)


def read_url_list(value: Any) -> list[UrlRow]:
    """The URL list from the ``urls`` param: an inline list, a CSV or a one-per-line file."""
    if isinstance(value, (list, tuple)):
        rows = []
        for i, item in enumerate(value):
            where = f"param 'urls'[{i}]"
            if isinstance(item, Mapping):
                unknown = sorted(set(item) - {"url", *ROW_COLUMNS})
                if unknown:
                    raise SourceError(f"source {KIND}: {where}: unknown key(s) {unknown}; known: "
                                      f"{['url', *ROW_COLUMNS]}")
                rows.append(_row(item.get("url"), where, item))
            else:
                rows.append(_row(item, where, {}))
        if not rows:
            raise SourceError(f"source {KIND}: param 'urls' is an empty list")
        return rows
    if isinstance(value, str) and urlsplit(value.strip()).scheme in ("http", "https"):
        raise SourceError(f"source {KIND}: param 'urls' = {value!r} is a URL: give a list of "
                          "URLs or the path of a list file")
    path = resolve_path(KIND, value, "urls")
    if not path.is_file():
        raise SourceError(f"source {KIND}: URL list {path} does not exist")
    if path.suffix.lower() == ".csv":
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        except Exception as exc:  # pandas raises many kinds
            raise SourceError(f"source {KIND}: cannot read URL list {path}: {exc}") from exc
        df.columns = [str(c).strip() for c in df.columns]
        if "url" not in df.columns:
            raise SourceError(f"source {KIND}: URL list {path} lacks the column 'url' (has "
                              f"{list(df.columns)})")
        rows = []
        for i, rec in enumerate(df.to_dict("records"), start=1):
            where = f"URL list {path} row {i} (line {i + 1})"
            rows.append(_row(rec["url"], where, rec))
    else:
        try:
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"source {KIND}: cannot read URL list {path}: {exc}") from exc
        rows = [_row(ln, f"URL list {path} line {i}", {})
                for i, ln in enumerate(lines, start=1)
                if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise SourceError(f"source {KIND}: URL list {path} lists no URL")
    return rows


# --------------------------------------------------------------------- page metadata

def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page_notice(tree: Any) -> tuple[Notice | None, str]:
    """The copyright line of a parsed page (lxml tree) and where it was found."""
    for el in tree.iter("meta"):
        name = (el.get("name") or el.get("property") or "").strip().lower()
        if name in _META_RIGHTS:
            content = _norm(el.get("content") or "")
            n = parse_notice(content)
            if n is not None:
                return n, f'<meta name="{name}">'
    best: tuple[int, Notice] | None = None
    for el in tree.iter():
        if not isinstance(el.tag, str) or el.tag in _SKIP_TAGS or el.tag in ("html", "head"):
            continue
        if any(a.tag in _SKIP_TAGS for a in el.iterancestors()):
            continue
        text = _norm(" ".join(el.itertext()))
        if not text or len(text) > 400:
            continue
        n = parse_notice(text)
        if n is not None and (best is None or len(text) < best[0]):
            best = (len(text), n)
    return (best[1], "page text") if best else (None, "")


def _header_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        t = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


# ------------------------------------------------------------------------------ source

class WebPages(Source):
    """Main text and metadata of the pages of a URL list."""

    name = KIND
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if params.get("urls") is None:
            raise SourceError(f"source {KIND}: param 'urls' (a list of URLs or a list file) is "
                              "required")
        self.urls_param = params["urls"]
        ua = user_agent(params.get("user_agent"))
        if ua is None:
            raise SourceError(user_agent_required(KIND))
        self.user_agent = ua
        rate = params.get("max_requests_per_second", 1.0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
            raise SourceError(f"source {KIND}: param 'max_requests_per_second' = {rate!r} must "
                              "be a positive number")
        self.rate = float(rate)
        cache = params.get("cache_dir", web.DEFAULT_CACHE_DIR)
        self.cache_dir = None if cache is None else resolve_path(KIND, cache, "cache_dir")
        self.max_retries = int_param(KIND, params, "max_retries", 5, 0)
        timeout = params.get("timeout", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise SourceError(f"source {KIND}: param 'timeout' = {timeout!r} must be a positive "
                              "number of seconds")
        self.timeout = float(timeout)
        self.category = str_param(KIND, params, "category", "web")
        self.min_words = int_param(KIND, params, "min_words", 50, 0)
        strip = params.get("strip_notices", True)
        if not isinstance(strip, bool):
            raise SourceError(f"source {KIND}: param 'strip_notices' = {strip!r} must be true "
                              "or false")
        self.strip_notices = strip
        self.limit = int_param(KIND, params, "limit", None, 1, allow_none=True)
        self.sample_seed = int_param(KIND, params, "sample_seed", 0, -(2**63), allow_none=True)
        self.on_error = str_param(KIND, params, "on_error", "skip", ("skip", "raise"))
        robots = params.get("respect_robots", True)
        if not isinstance(robots, bool):
            raise SourceError(f"source {KIND}: param 'respect_robots' = {robots!r} must be true "
                              "or false")
        self.respect_robots = robots
        self._robots: dict[str, urllib.robotparser.RobotFileParser | str] = {}

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The URL list file (none for an inline list)."""
        urls = params.get("urls")
        if isinstance(urls, str) and urlsplit(urls.strip()).scheme not in ("http", "https"):
            return [str(resolve_path(KIND, urls, "urls"))]
        return []

    def session(self) -> Any:
        return polite_session(WebSettings(
            user_agent=self.user_agent, cache_dir=self.cache_dir,
            max_requests_per_second=self.rate, max_retries=self.max_retries,
            timeout=self.timeout))

    def _problem(self, url: str, why: str) -> None:
        if self.on_error == "raise":
            raise SourceError(f"source {KIND}: {url}: {why}")
        self.skip(url, why)

    def documents(self) -> Iterable[Document]:
        rows = read_url_list(self.urls_param)
        unique: list[UrlRow] = []
        first: dict[str, str] = {}
        for r in rows:
            if r.url in first:
                self.skip(r.url, f"listed twice ({first[r.url]} and {r.where})")
                continue
            first[r.url] = r.where
            unique.append(r)
        chosen = seeded_sample(unique, self.limit, self.sample_seed)
        session = self.session()
        pages: dict[str, str] = {}  # final URL -> requested URL
        for row in chosen:
            try:
                doc = self._page(session, row)
            except ItemProblem as exc:
                self._problem(row.url, str(exc))
                continue
            if doc.page_id in pages:
                self.skip(row.url, f"the same page as {pages[doc.page_id]} ({doc.page_id})")
                continue
            pages[doc.page_id] = row.url
            yield doc

    def robots_allow(self, session: Any, url: str) -> None:
        """Raise :class:`ItemProblem` when the site's robots.txt forbids ``url`` to us.

        As RFC 9309 says: an unavailable robots.txt (4xx) allows everything, an unreachable one
        (5xx, retries spent) forbids everything. Read once per site, through the same session.
        """
        parts = urlsplit(url)
        site = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        if site not in self._robots:
            robots_url = site + "/robots.txt"
            try:
                resp = session.get(robots_url)
            except FetchError as exc:
                self._robots[site] = f"robots.txt unreachable ({exc}): the site is not crawled"
            else:
                parser = urllib.robotparser.RobotFileParser(robots_url)
                if resp.status_code >= 500:
                    self._robots[site] = (f"robots.txt answered HTTP {resp.status_code}: the site "
                                          "is not crawled")
                else:
                    parser.parse([] if resp.status_code >= 400 else resp.text.splitlines())
                    self._robots[site] = parser
        rules = self._robots[site]
        if isinstance(rules, str):
            raise ItemProblem(rules)
        if not rules.can_fetch(self.user_agent, url):
            raise ItemProblem(f"disallowed by {site}/robots.txt for user agent "
                              f"{self.user_agent!r}")

    def _page(self, session: Any, row: UrlRow) -> Document:
        if self.respect_robots:
            self.robots_allow(session, row.url)
        try:
            resp = session.get(row.url)
        except FetchError as exc:
            raise ItemProblem(str(exc)) from None
        except Exception as exc:  # an invalid answer requests cannot read
            raise ItemProblem(f"GET {row.url}: {type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            raise ItemProblem(f"HTTP {resp.status_code} {resp.reason or ''}".strip())
        ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype and ctype not in _HTML_TYPES:
            raise ItemProblem(f"not an HTML page (Content-Type {ctype})")
        body = resp.content
        if not body.strip():
            raise ItemProblem("empty answer")
        extracted = trafilatura.bare_extraction(
            body, url=resp.url, with_metadata=True, include_comments=False,
            include_tables=True, date_extraction_params={"extensive_search": False,
                                                         "original_date": True})
        main = _norm_lines(getattr(extracted, "text", None) or "") if extracted else ""
        removed: list[Notice] = []
        if self.strip_notices and main:
            main, removed = strip_notices(main)
        n = word_count(main)
        if n == 0:
            raise ItemProblem("no main text found")
        if n < self.min_words:
            raise ItemProblem(f"main text has {n} words, fewer than min_words={self.min_words}")
        meta = {k: getattr(extracted, k, None) for k in
                ("title", "author", "date", "sitename", "license", "description", "hostname")}
        tree = load_html(body)
        notice, notice_where = page_notice(tree) if tree is not None else (None, "")
        if notice is None and not self.strip_notices:
            notice = best_notice([x for _, x in find_notices(main)])
            notice_where = "main text" if notice else ""
        if notice is None and removed:
            notice, notice_where = best_notice(removed), "main text"
        return self._document(row, resp, body, main, meta, notice, notice_where, removed,
                              fetched_from_cache=resp.headers.get(CACHE_HEADER) == "hit")

    def _document(self, row: UrlRow, resp: Any, body: bytes, text: str, meta: dict[str, Any],
                  notice: Notice | None, notice_where: str, removed: list[Notice],
                  fetched_from_cache: bool) -> Document:
        cols = row.columns
        published: dt.date | None = None
        basis = "none: the page's metadata gives no date"
        if meta.get("date"):
            try:
                published = dt.date.fromisoformat(str(meta["date"])[:10])
                basis = "page metadata (trafilatura/htmldate, no search of the text)"
            except ValueError:
                pass
        if cols.get("published"):
            published, basis = cols["published"], f"{row.where} (column published)"
        year_col = cols.get("year")
        holder, year, line = "", None, ""
        rights_basis = ""
        if cols.get("holder") or year_col is not None or cols.get("notice"):
            holder, year, line = str(cols.get("holder", "")), year_col, str(cols.get("notice", ""))
            rights_basis = row.where
        elif notice is not None:
            holder, year, line = notice.holder, notice.year, notice.notice
            rights_basis = notice_where
        fetched = _header_time(resp.headers.get("Date")) or dt.datetime.now(dt.timezone.utc)
        sha = hashlib.sha256(body).hexdigest()
        prov = {
            "requested_url": row.url,
            "listed": row.where,
            "final_url": resp.url,
            "status": resp.status_code,
            "content_type": resp.headers.get("Content-Type", ""),
            "sha256": sha,
            "bytes": len(body),
            "from_cache": fetched_from_cache,
            "extractor": f"trafilatura {trafilatura.__version__}",
            "rights_basis": rights_basis,
            "notices_in_text": [x.notice for x in removed],
            **{k: v for k, v in meta.items() if v},
        }
        return Document(
            doc_id="web:" + text_id(row.url),
            title=str(cols.get("title") or meta.get("title") or resp.url),
            text=text,
            published=published,
            date_basis=basis,
            url=resp.url,
            licence=str(cols.get("licence") or meta.get("license") or ""),
            provenance=prov,
            page_id=resp.url,
            revision_id=sha,
            revision_timestamp=fetched,
            category=str(cols.get("category") or self.category),
            rights_holder=holder,
            rights_year=year,
            rights_notice=line,
        )


def _norm_lines(text: str) -> str:
    lines = [re.sub(r"[ \t\u00a0]+", " ", ln).strip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln)
