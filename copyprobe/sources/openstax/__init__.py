"""OpenStax textbooks: one document per book section, from one of three readers.

Reference: docs/openstax.md.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.openstax.book import (
    BOOK_KEYS,
    BookSpec,
    SkipPage,
    licence_name,
    page_url,
)
from copyprobe.sources.openstax.toc import SECTION_RE, TocPage
from copyprobe.web import user_agent, user_agent_required

READERS = ("archive", "cnxml", "msr_csv")
_PARAMS = {"reader", "books", "sections", "min_words", "limit", "sample_seed", "user_agent",
           "release_url", "archive_url", "catalogue_url", "max_requests_per_second",
           "cache_dir"}
_WEB_PARAMS = {"user_agent", "release_url", "archive_url", "catalogue_url",
               "max_requests_per_second", "cache_dir"}
DATE_BASIS = {"config": "book publication date (given in config)",
              "catalogue": "book publication date (openstax.org catalogue publish_date)"}


def _book_specs(books: Any, reader: str) -> list[BookSpec]:
    if not isinstance(books, list) or not books:
        raise SourceError("source openstax: param 'books' must be a non-empty list of "
                          "{slug, uuid, version, published, path, ...}")
    out = []
    for i, b in enumerate(books):
        where = f"source openstax: books[{i}]"
        if not isinstance(b, Mapping):
            raise SourceError(f"{where}: must be a mapping, got {b!r}")
        extra = sorted(set(b) - BOOK_KEYS)
        if extra:
            raise SourceError(f"{where}: unknown key(s) {extra}; known: {sorted(BOOK_KEYS)}")
        published = None
        if b.get("published") is not None:
            try:
                published = dt.date.fromisoformat(str(b["published"]))
            except ValueError:
                raise SourceError(f"{where}.published: not a date (YYYY-MM-DD): "
                                  f"{b['published']!r}") from None
        spec = BookSpec(index=i, published=published,
                        **{k: str(b[k]) for k in BOOK_KEYS - {"published"} if b.get(k)})
        if reader in ("cnxml", "msr_csv"):
            for key in ("path", "published"):
                if not b.get(key):
                    raise SourceError(f"{where}: the {reader} reader needs {key!r}")
        if reader == "archive" and b.get("path"):
            raise SourceError(f"{where}: 'path' is for the cnxml and msr_csv readers")
        out.append(spec)
    return out


class OpenStax(Source):
    """Sections of OpenStax textbooks from the archive API, CNXML repositories or MSR CSVs."""

    name = "openstax"
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.reader = params.get("reader")
        if self.reader not in READERS:
            raise SourceError(f"source openstax: param 'reader' must be one of {list(READERS)}, "
                              f"got {self.reader!r}")
        self.books = _book_specs(params.get("books"), self.reader)
        self.sections = params.get("sections", "numbered")
        if self.sections not in ("numbered", "all"):
            raise SourceError("source openstax: param 'sections' must be 'numbered' or 'all', "
                              f"got {self.sections!r}")
        self.min_words = int(params.get("min_words", 1))
        self.limit = params.get("limit")
        self.sample_seed = int(params.get("sample_seed", 0))
        web = sorted(k for k in _WEB_PARAMS if k in params)
        if self.reader != "archive" and web:
            raise SourceError(f"source openstax: param(s) {web} are for the archive reader only")
        self.user_agent = user_agent(params.get("user_agent"))
        if self.reader == "archive" and self.user_agent is None:
            raise SourceError(user_agent_required("openstax", " by the archive reader"))

    @classmethod
    def max_documents(cls, params: Mapping[str, Any]) -> int | None:
        """``limit`` sections per book."""
        limit = params.get("limit")
        return None if limit is None else int(limit) * len(params.get("books") or [])

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """msr_csv: the CSV files; cnxml from a plain folder: its books.xml, collections and
        modules (a pinned commit does not change); archive: none."""
        files: list[str] = []
        for b in params.get("books") or []:
            if not isinstance(b, Mapping) or not b.get("path"):
                continue
            if params.get("reader") == "msr_csv":
                files.append(str(b["path"]))
            elif params.get("reader") == "cnxml" and not b.get("version"):
                root = Path(b["path"])
                files += [str(p) for p in sorted(root.glob("META-INF/books.xml"))]
                files += [str(p) for p in sorted(root.glob("collections/*.collection.xml"))]
                files += [str(p) for p in sorted(root.glob("modules/*/index.cnxml"))]
        return files

    def _sample(self, items: list[Any]) -> Iterator[Any]:
        """Items in the order they are tried: book order, or a seeded order with ``limit``."""
        if self.limit is None:
            return iter(items)
        return iter(random.Random(self.sample_seed).sample(items, len(items)))

    def documents(self) -> Iterable[Document]:
        if self.reader == "msr_csv":
            yield from self._msr_csv()
            return
        client = self._client() if self.reader == "archive" else None
        for spec in self.books:
            if self.reader == "archive":
                from copyprobe.sources.openstax.archive import ArchiveBook

                book: Any = ArchiveBook(spec, client)
            else:
                from copyprobe.sources.openstax.cnxml import CnxmlBook

                book = CnxmlBook(spec)
            yield from self._book(book)

    def _client(self) -> Any:
        from copyprobe.sources.openstax.archive import CATALOGUE_URL, RELEASE_URL, ArchiveClient
        from copyprobe.web import DEFAULT_CACHE_DIR, WebSettings, polite_session

        p = self.params
        session = polite_session(WebSettings(
            user_agent=str(self.user_agent), cache_dir=p.get("cache_dir", DEFAULT_CACHE_DIR),
            max_requests_per_second=float(p.get("max_requests_per_second", 1.0))))
        return ArchiveClient(session, release_url=str(p.get("release_url") or RELEASE_URL),
                             archive_url=str(p.get("archive_url") or ""),
                             catalogue_url=str(p.get("catalogue_url") or CATALOGUE_URL))

    def _book(self, book: Any) -> Iterator[Document]:
        info = book.info
        order = {id(p): i for i, p in enumerate(book.pages)}
        candidates = []
        for page in book.pages:
            if self.sections == "numbered" and not page.numbered:
                self.skip(f"{info.slug or info.uuid}: {page.entry.id} ({page.entry.title})",
                          "not a numbered section (sections: numbered)")
                continue
            candidates.append(page)
        kept: list[tuple[TocPage, Any]] = []
        for page in self._sample(candidates):
            if self.limit is not None and len(kept) >= self.limit:
                break
            try:
                sec = book.section(page)
            except SkipPage as exc:
                self.skip(f"{info.slug or info.uuid}: {page.entry.id} ({page.entry.title})",
                          str(exc))
                continue
            words = len(sec.text.split())
            if words < self.min_words:
                self.skip(sec.ref, f"{words} words, fewer than min_words {self.min_words}")
                continue
            kept.append((page, sec))
        kept.sort(key=lambda x: order[id(x[0])])
        for page, sec in kept:
            name = page.entry.title
            yield Document(
                doc_id=text_id("openstax", sec.page_id, info.version),
                title=" ".join(x for x in (info.title, page.section_id, name) if x),
                text=sec.text,
                published=info.published,
                date_basis=DATE_BASIS[info.published_from],
                url=page_url(info.slug, page),
                licence=licence_name(info.licence_url) or book.spec.licence,
                page_id=sec.page_id,
                revision_id=info.version,
                provenance={
                    "reader": self.reader, "book_uuid": info.uuid, "book_slug": info.slug,
                    "book_title": info.title, "version": info.version,
                    "section_id": page.section_id, "section_name": name,
                    "chapter": page.chapter, "chapter_title": page.chapter_title,
                    "licence_url": info.licence_url, "published_from": info.published_from,
                    "read_from": sec.ref, **info.extra, **sec.extra,
                },
            )

    def _msr_csv(self) -> Iterator[Document]:
        """Each book's CSV file through the msr_csv source, in this source's document shape."""
        from copyprobe.sources.msr_csv import MsrCsv

        for spec in self.books:
            p = Path(spec.path)
            title = spec.title or p.stem
            assert spec.published is not None  # required for this reader (checked above)
            entry = {"published": spec.published.isoformat(), "title": title}
            entry.update({k: v for k, v in (("book", spec.slug), ("licence", spec.licence)) if v})
            inner = MsrCsv(path=str(p.parent), files={p.name: entry}, min_words=self.min_words)
            docs = []
            for d in inner.documents():
                sid = str(d.provenance["section_id"])
                if self.sections == "numbered" and not SECTION_RE.match(sid):
                    self.skip(f"{p.name} row {d.provenance['row']} (section {sid})",
                              "not a numbered section (sections: numbered)")
                    continue
                docs.append(d)
            self.skipped.extend(inner.skipped)
            order = {id(d): i for i, d in enumerate(docs)}
            chosen = list(self._sample(docs))[: self.limit] if self.limit is not None else docs
            for d in sorted(chosen, key=lambda d: order[id(d)]):
                sid = str(d.provenance["section_id"])
                name = d.title.removeprefix(f"{title} {sid}").strip()
                d.page_id = f"{spec.slug or p.stem}:{d.provenance['section_url']}"
                d.revision_id = str(d.provenance["file_sha256"])
                d.provenance = {**d.provenance, "reader": "msr_csv", "book_slug": spec.slug,
                                "book_uuid": spec.uuid, "book_title": title,
                                "section_name": name, "read_from": str(p)}
                d.date_basis = DATE_BASIS["config"]
                yield d
