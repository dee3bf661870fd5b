"""A book's table of contents, its section numbers and page slugs, the same for every reader.

Numbering follows the OpenStax reader: a *chapter* is a subcollection that directly holds at
least one page; chapters are numbered 1, 2, ... in book order across the whole book (units,
subcollections that hold only chapters, are not numbered and do not restart the count). Inside a
chapter the pages (including those of nested subcollections) are numbered ``<chapter>.1``,
``<chapter>.2``, ... except a first page titled "Introduction", the chapter's unnumbered opener.
Pages outside any chapter (preface, appendices) and introductions have no number (``""``).
A number the book itself gives (the archive's baked titles carry ``os-number``) wins.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

SECTION_RE = re.compile(r"^\d+\.\d+$")


@dataclass
class Entry:
    """A node of the tree: a page (``children is None``) or a subcollection."""

    id: str
    title: str
    children: list[Entry] | None = None
    #: The page's slug on openstax.org when the source knows it (archive), else derived.
    slug: str = ""
    #: The number the book prints for this page, when the source has it (archive ``os-number``).
    number: str = ""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class TocPage:
    entry: Entry
    section_id: str  # "1.2", or "" for unnumbered pages
    chapter: int | None  # the chapter holding the page (None: outside chapters)
    chapter_title: str
    slug: str

    @property
    def numbered(self) -> bool:
        return bool(SECTION_RE.match(self.section_id))


def slugify(text: str) -> str:
    """A page slug as openstax.org forms it from the numbered title: lower case, a number's dots
    and spaces become hyphens, other punctuation goes ("1.1 Why Python?" -> "1-1-why-python")."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"(?<=\d)\.(?=\d)", " ", text)
    text = re.sub(r"[^a-z0-9\s-]", "", text)
    return re.sub(r"[\s-]+", "-", text).strip("-")


def _is_intro(title: str) -> bool:
    return " ".join(title.split()).lower() == "introduction"


def _pages(entries: list[Entry]) -> Iterator[Entry]:
    for e in entries:
        if e.children is None:
            yield e
        else:
            yield from _pages(e.children)


def number_pages(contents: list[Entry]) -> list[TocPage]:
    """Every page of the tree in book order with its section number and slug (rules above)."""
    out: list[TocPage] = []
    chapter = 0

    def visit(entries: list[Entry]) -> None:
        nonlocal chapter
        for e in entries:
            if e.children is None:
                out.append(TocPage(e, e.number, None, "", e.slug or slugify(e.title)))
            elif any(c.children is None for c in e.children):
                chapter += 1
                k = 0
                for i, p in enumerate(_pages(e.children)):
                    if i == 0 and _is_intro(p.title) and not p.number:
                        out.append(TocPage(p, "", chapter, e.title,
                                           p.slug or f"{chapter}-introduction"))
                        continue
                    k += 1
                    sid = p.number or f"{chapter}.{k}"
                    out.append(TocPage(p, sid, chapter, e.title,
                                       p.slug or slugify(f"{sid} {p.title}")))
            else:
                visit(e.children)

    visit(contents)
    return out
