"""The archive reader: a book as openstax.org's reader (REX) fetches it, over HTTP.

Reference: docs/openstax.md.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from copyprobe.sources.base import SourceError
from copyprobe.sources.openstax.book import BookInfo, BookSpec, Section, SkipPage
from copyprobe.sources.openstax.text import page_text
from copyprobe.sources.openstax.toc import Entry, TocPage, number_pages

RELEASE_URL = "https://openstax.org/rex/release.json"
CATALOGUE_URL = "https://openstax.org/apps/cms/api/v2/pages/"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)


class ArchiveClient:
    """The servers of one source: release file, archive and catalogue, through one session."""

    def __init__(self, session: Any, *, release_url: str = RELEASE_URL, archive_url: str = "",
                 catalogue_url: str = CATALOGUE_URL) -> None:
        self.session = session
        self.release_url = release_url
        self.archive_url = archive_url.rstrip("/")
        self.catalogue_url = catalogue_url
        self._release: dict[str, Any] | None = None

    def release(self) -> dict[str, Any]:
        if self._release is None:
            data = self.session.get_json(self.release_url)
            if not isinstance(data, dict) or "archiveUrl" not in data:
                raise SourceError(f"source openstax: {self.release_url}: not a release file "
                                  "(no 'archiveUrl')")
            self._release = data
        return self._release

    def book_release(self, uuid: str) -> dict[str, Any]:
        books = self.release().get("books") or {}
        return books.get(uuid) or {}

    def archive_for(self, uuid: str) -> str:
        """The archive base URL serving this book (config, the book's override, or release's)."""
        if self.archive_url:
            return self.archive_url
        rel = self.release()
        path = self.book_release(uuid).get("archiveOverride") or rel["archiveUrl"]
        return urljoin(self.release_url, path).rstrip("/")

    def catalogue(self, slug: str) -> dict[str, Any]:
        """The catalogue's record of a book (``cnx_id``, ``publish_date``, ``title``)."""
        data = self.session.get_json(self.catalogue_url, params={
            "type": "books.Book", "fields": "cnx_id,publish_date,title", "slug": slug})
        items = data.get("items") if isinstance(data, dict) else None
        if not items:
            raise SourceError(f"source openstax: the catalogue {self.catalogue_url} has no book "
                              f"with slug {slug!r}")
        return items[0]


def _title(html: str) -> tuple[str, str]:
    """(number, name) of a tree title: baked titles are HTML with ``os-number``/``os-text``."""
    if "<" not in (html or ""):
        return "", " ".join((html or "").split())
    frag = lxml.html.fragment_fromstring(html, create_parent="div")
    number = " ".join("".join(frag.xpath('string(.//*[contains(concat(" ", @class, " "), '
                                         '" os-number ")])')).split())
    text = frag.xpath('.//*[contains(concat(" ", @class, " "), " os-text ")]')
    name = " ".join((text[0].text_content() if text else frag.text_content()).split())
    return number, name


def _entries(contents: list[dict[str, Any]]) -> list[Entry]:
    out = []
    for item in contents:
        number, name = _title(str(item.get("title", "")))
        if "contents" in item:
            out.append(Entry(id=str(item.get("id", "")), title=name,
                             children=_entries(item["contents"] or [])))
        else:
            page_id = str(item.get("id", "")).split("@")[0]
            out.append(Entry(id=page_id, title=name, slug=str(item.get("slug") or ""),
                             number=number))
    return out


class ArchiveBook:
    """One book from the archive: its info, numbered pages and each page's text."""

    def __init__(self, spec: BookSpec, client: ArchiveClient) -> None:
        self.spec = spec
        self.client = client
        if not (spec.uuid or spec.slug):
            raise SourceError(f"source openstax: {spec.key}: give the book's 'slug' or 'uuid'")
        record: dict[str, Any] | None = None
        uuid = spec.uuid
        if not uuid:
            record = client.catalogue(spec.slug)
            uuid = str(record.get("cnx_id") or "")
            if not uuid:
                raise SourceError(f"source openstax: {spec.key}: the catalogue gives no "
                                  "cnx_id (book uuid); set 'uuid'")
        version = spec.version or str(client.book_release(uuid).get("defaultVersion") or "")
        if not version:
            raise SourceError(f"source openstax: {spec.key}: book {uuid} is not in "
                              f"{client.release_url}; set 'version'")
        self.base = client.archive_for(uuid)
        self.prefix = f"{self.base}/contents/{uuid}@{version}"
        self.tree_url = f"{self.prefix}.json"
        book = client.session.get_json(self.tree_url)
        tree = book.get("tree") if isinstance(book, dict) else None
        if not isinstance(tree, dict):
            raise SourceError(f"source openstax: {self.tree_url}: not a book tree (no 'tree')")
        slug = spec.slug or str(tree.get("slug") or book.get("slug") or "")
        published, origin = spec.published, "config"
        if published is None:
            if not slug:
                raise SourceError(f"source openstax: {spec.key}: no slug to look up the "
                                  "publication date; set 'published' or 'slug'")
            record = record or client.catalogue(slug)
            published, origin = _date(record.get("publish_date"), spec), "catalogue"
        licence = book.get("license") or {}
        self.info = BookInfo(
            uuid=uuid, slug=slug,
            title=spec.title or " ".join(str(book.get("title") or "").split()),
            version=str(book.get("version") or version),
            licence_url=str(licence.get("url") or "") if isinstance(licence, dict) else "",
            published=published, published_from=origin,
            extra={"archive": self.base, "revised": str(book.get("revised") or "")})
        self.pages: list[TocPage] = number_pages(_entries(tree.get("contents") or []))

    def section(self, page: TocPage) -> Section:
        url = f"{self.prefix}:{page.entry.id}.json"
        data = self.client.session.get_json(url)
        html = data.get("content") if isinstance(data, dict) else None
        if not isinstance(html, str) or not html.strip():
            raise SkipPage(f"{url}: empty page (no 'content')")
        try:
            root = etree.fromstring(html.encode("utf-8"), _PARSER)
        except etree.XMLSyntaxError as exc:
            raise SkipPage(f"{url}: content is not well-formed XHTML ({exc})") from None
        body = root.find("{*}body")
        text, lines = page_text(page.entry.title, body if body is not None else root)
        if lines == 0:
            raise SkipPage(f"{url}: empty page (no text after extraction)")
        return Section(text=text, page_id=f"{self.info.uuid}:{page.entry.id}", ref=url,
                       extra={"page_url": url, "revised": str(data.get("revised") or "")})


def _date(value: Any, spec: BookSpec) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        raise SourceError(f"source openstax: {spec.key}: the catalogue's publish_date "
                          f"{value!r} is not a date; set 'published'") from None
