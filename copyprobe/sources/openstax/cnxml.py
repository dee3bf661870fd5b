"""The cnxml reader: a book from its ``osbooks-*`` repository (CNXML), at a pinned git commit or
from a plain folder.

Reference: docs/openstax.md.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

from lxml import etree

from copyprobe.sources.base import SourceError
from copyprobe.sources.openstax.book import BookInfo, BookSpec, Section, SkipPage
from copyprobe.sources.openstax.text import local, page_text
from copyprobe.sources.openstax.toc import Entry, TocPage, number_pages

NS = {"col": "http://cnx.rice.edu/collxml", "md": "http://cnx.rice.edu/mdml",
      "c": "http://cnx.rice.edu/cnxml", "bk": "https://openstax.org/namespaces/book-container"}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)


class RepoFiles:
    """Files of a book repository: at a commit of a git clone, or in a plain folder."""

    def __init__(self, path: str, commit: str = "", *, where: str = "") -> None:
        self.root = Path(path)
        self.where = where
        if not self.root.is_dir():
            raise SourceError(f"{where}: path {self.root} is not a folder")
        self.commit = ""
        if commit:
            out = self._git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
            if out.returncode != 0:
                raise SourceError(f"{where}: {self.root} is not a git clone holding commit "
                                  f"{commit!r} ({out.stderr.strip() or 'unknown commit'})")
            self.commit = out.stdout.strip()

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(self.root), *args], capture_output=True,
                              text=True, check=False)

    def ref(self, rel: str) -> str:
        """How a message names the file: ``<path>/<rel>`` or ``<path>/<rel>@<commit>``."""
        return f"{self.root / rel}@{self.commit[:12]}" if self.commit else str(self.root / rel)

    def read(self, rel: str) -> bytes | None:
        """The file's bytes, or None when it does not exist (at the commit)."""
        if not self.commit:
            p = self.root / rel
            return p.read_bytes() if p.is_file() else None
        out = subprocess.run(["git", "-C", str(self.root), "show", f"{self.commit}:{rel}"],
                             capture_output=True, check=False)
        return out.stdout if out.returncode == 0 else None

    def parse(self, rel: str) -> etree._Element:
        """The parsed XML file; :class:`SkipPage` naming the file when missing or malformed."""
        data = self.read(rel)
        if data is None:
            raise SkipPage(f"{self.ref(rel)}: listed in the collection but not in the repository")
        try:
            return etree.fromstring(data, _PARSER)
        except etree.XMLSyntaxError as exc:
            raise SkipPage(f"{self.ref(rel)}: not well-formed XML ({exc})") from None


class CnxmlBook:
    """One book of a repository: its info, its numbered pages and each page's text."""

    def __init__(self, spec: BookSpec) -> None:
        self.spec = spec
        if not spec.path:
            raise SourceError(f"source openstax: {spec.key}: the cnxml reader needs 'path' "
                              "(a clone or folder of the book's osbooks-* repository)")
        if spec.published is None:
            raise SourceError(f"source openstax: {spec.key}: the cnxml reader needs "
                              "'published' (the book's publication date, YYYY-MM-DD)")
        self.files = RepoFiles(spec.path, spec.version, where=f"source openstax: {spec.key}")
        self._modules: dict[str, etree._Element | SkipPage] = {}
        collection_rel = self._collection()
        col = self._structure(collection_rel)
        md = col.find("col:metadata", NS)
        if md is None:
            md = col.find("{*}metadata")
        md = md if md is not None else col
        uuid = (md.findtext("md:uuid", namespaces=NS) or "").strip()
        slug = (md.findtext("md:slug", namespaces=NS) or "").strip() or self._slug
        lic = md.find("md:license", NS)
        licence_url = (lic.get("url") or "").strip() if lic is not None else ""
        self.info = BookInfo(
            uuid=uuid, slug=slug,
            title=spec.title or " ".join((md.findtext("md:title", namespaces=NS) or "").split()),
            version=self.files.commit, licence_url=licence_url, published=spec.published,
            published_from="config",
            extra={"collection": collection_rel,
                   "collection_id": (md.findtext("md:content-id", namespaces=NS) or "").strip()})
        content = col.find("col:content", NS)
        if content is None:
            raise SourceError(f"source openstax: {self.files.ref(collection_rel)}: no col:content")
        self.pages: list[TocPage] = number_pages(self._entries(content))

    def _structure(self, rel: str) -> etree._Element:
        try:
            return self.files.parse(rel)
        except SkipPage as exc:
            raise SourceError(f"source openstax: {self.spec.key}: {exc}") from None

    def _collection(self) -> str:
        """The collection file of the configured book, chosen in META-INF/books.xml."""
        books = self._structure("META-INF/books.xml")
        found = []
        for b in books.iter("{*}book"):
            href = b.get("href") or ""
            rel = str(PurePosixPath("META-INF", href))
            rel = str(PurePosixPath(*_normal(PurePosixPath(rel).parts)))
            found.append((b.get("slug") or "", rel))
        if not found:
            raise SourceError(f"source openstax: {self.files.ref('META-INF/books.xml')} lists no "
                              "book")
        want = self.spec.slug
        if want:
            match = [x for x in found if x[0] == want]
        elif len(found) == 1:
            match = found
        else:  # several books, chosen by uuid: read each collection
            match = [x for x in found if self._uuid_of(x[1]) == self.spec.uuid]
        if not match:
            raise SourceError(f"source openstax: {self.spec.key}: no such book in "
                              f"{self.files.ref('META-INF/books.xml')} (it lists "
                              f"{[s for s, _ in found]})")
        self._slug = match[0][0]
        return match[0][1]

    def _uuid_of(self, rel: str) -> str:
        col = self._structure(rel)
        return (col.findtext(".//md:uuid", namespaces=NS) or "").strip()

    def _entries(self, content: etree._Element) -> list[Entry]:
        out = []
        for el in content:
            name = local(el)
            if name == "module":
                mid = el.get("document") or ""
                title = " ".join((el.findtext("md:title", namespaces=NS) or "").split())
                out.append(Entry(id=mid, title=title or self._module_title(mid)))
            elif name == "subcollection":
                title = " ".join((el.findtext("md:title", namespaces=NS) or "").split())
                inner = el.find("col:content", NS)
                out.append(Entry(id=title, title=title,
                                 children=self._entries(inner) if inner is not None else []))
        return out

    def _module(self, mid: str) -> etree._Element:
        """The parsed module (read once; :class:`SkipPage` when missing or malformed)."""
        if mid not in self._modules:
            try:
                self._modules[mid] = self.files.parse(f"modules/{mid}/index.cnxml")
            except SkipPage as exc:
                self._modules[mid] = exc
        found = self._modules[mid]
        if isinstance(found, SkipPage):
            raise found
        return found

    def _module_title(self, mid: str) -> str:
        try:
            doc = self._module(mid)
        except SkipPage:
            return mid  # reported when the page itself is read
        return " ".join((doc.findtext("c:title", namespaces=NS)
                         or doc.findtext(".//md:title", namespaces=NS) or mid).split())

    def section(self, page: TocPage) -> Section:
        mid = page.entry.id
        rel = f"modules/{mid}/index.cnxml"
        doc = self._module(mid)
        text, body = page_text(page.entry.title, doc.find("c:content", NS))
        if body == 0:
            raise SkipPage(f"{self.files.ref(rel)}: empty page (no text after extraction)")
        page_uuid = (doc.findtext(".//md:uuid", namespaces=NS) or "").strip()
        return Section(text=text, page_id=f"{self.info.uuid}:{page_uuid or mid}",
                       ref=self.files.ref(rel), extra={"module": mid, "file": rel})


def _normal(parts: tuple[str, ...]) -> list[str]:
    """Resolve ``..`` in a relative path (``META-INF/../collections/x`` -> ``collections/x``)."""
    out: list[str] = []
    for p in parts:
        if p == "..":
            if out:
                out.pop()
        elif p not in (".", ""):
            out.append(p)
    return out
