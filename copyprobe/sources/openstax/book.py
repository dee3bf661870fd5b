"""What the readers share: a configured book, what a reader learns about it, one section's text,
and the licence name read from a Creative Commons URL."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from copyprobe.sources.openstax.toc import TocPage

BOOK_KEYS = frozenset({"slug", "uuid", "version", "published", "path", "title", "licence"})
PAGE_URL = "https://openstax.org/books/{slug}/pages/{page}"


class SkipPage(Exception):
    """A page that cannot be used; the message is the reason (it names the file or URL)."""


@dataclass
class BookSpec:
    """One entry of the source's ``books`` list."""

    index: int
    slug: str = ""
    uuid: str = ""
    version: str = ""
    published: dt.date | None = None
    path: str = ""
    title: str = ""
    licence: str = ""

    @property
    def key(self) -> str:
        """How messages name this book: ``books[0] (anatomy-and-physiology)``."""
        return f"books[{self.index}] ({self.slug or self.uuid or self.path})"


@dataclass
class BookInfo:
    """What a reader found out about a book at its pinned version."""

    uuid: str
    slug: str
    title: str
    version: str  # archive book version or git commit ("" for a plain folder)
    licence_url: str
    published: dt.date
    published_from: str  # "config" or "catalogue"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Section:
    """One page's text and where it came from."""

    text: str
    page_id: str
    ref: str  # the file or URL read
    extra: dict[str, Any] = field(default_factory=dict)


def licence_name(url: str) -> str:
    """``CC-BY-4.0`` from ``http://creativecommons.org/licenses/by/4.0/`` (the URL itself when
    it is not a Creative Commons licence URL)."""
    m = re.search(r"creativecommons\.org/licenses/([a-z-]+)/(\d+(?:\.\d+)?)", url or "")
    if not m:
        return url or ""
    return f"CC-{m.group(1).upper()}-{m.group(2)}"


def page_url(slug: str, page: TocPage) -> str:
    return PAGE_URL.format(slug=slug, page=page.slug) if slug and page.slug else ""
