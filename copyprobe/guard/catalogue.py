"""An offline catalogue of known works and the public-domain rule of each jurisdiction.

Reference: docs/guard-notice-status.md#status-verifier.
"""

from __future__ import annotations

import csv
import datetime
import importlib.resources
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: jurisdiction -> (which fact the term counts from, years of the term)
PD_RULES: dict[str, tuple[str, int]] = {"US": ("published", 95), "EU": ("death", 70),
                                         "UK": ("death", 70)}
COLUMNS = ("id", "title", "aliases", "author", "holder", "first_published", "author_died",
           "licence", "note")
STATUSES = ("protected", "public_domain", "open_licence", "unknown")


class CatalogueError(ValueError):
    """A catalogue file that cannot be read, naming the file, row and column."""


@dataclass(frozen=True)
class Work:
    id: str
    title: str
    aliases: tuple[str, ...]
    author: str
    holder: str
    first_published: int
    author_died: int | None  # None: not known or not a person
    author_living: bool
    licence: str
    note: str = ""

    def status(self, jurisdiction: str, today: datetime.date | None = None) -> str:
        """The work's status in ``jurisdiction`` on ``today`` (default: the current date)."""
        year = (today or datetime.date.today()).year
        if jurisdiction not in PD_RULES:
            raise ValueError(f"jurisdiction {jurisdiction!r} has no public-domain rule; known: "
                             f"{sorted(PD_RULES)}")
        counts_from, term = PD_RULES[jurisdiction]
        if counts_from == "published":
            public = self.first_published + term + 1 <= year
        elif self.author_living:
            public = False
        elif self.author_died is None:
            return "open_licence" if self.licence else "unknown"
        else:
            public = self.author_died + term + 1 <= year
        if public:
            return "public_domain"
        return "open_licence" if self.licence else "protected"


def _fold(text: str) -> str:
    """Lower case, accents removed, every run of characters other than letters and digits one
    space, padded with one space each side (so whole words match with ``in``)."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " " + " ".join(re.findall(r"[a-z0-9]+", text)) + " "


def _year(value: str, *, path: str, line: int, column: str, optional: bool) -> int | None:
    value = value.strip()
    if not value and optional:
        return None
    if not re.fullmatch(r"\d{3,4}", value):
        raise CatalogueError(f"{path}, line {line}: column {column!r} must be a year, "
                             f"got {value!r}")
    return int(value)


class Catalogue:
    """Known works, looked up by the titles a text names (see the module text)."""

    def __init__(self, works: Iterable[Work]) -> None:
        self.works = list(works)
        seen: set[str] = set()
        for w in self.works:
            if w.id in seen:
                raise CatalogueError(f"catalogue: work id {w.id!r} appears twice")
            seen.add(w.id)
        self._titles = sorted(((t, w) for w in self.works for t in (w.title, *w.aliases)),
                              key=lambda tw: -len(tw[0]))

    @classmethod
    def load(cls, path: str | Path | None = None) -> Catalogue:
        """The works of a catalogue CSV (the packaged one when ``path`` is None)."""
        if path is None:
            ref = importlib.resources.files("copyprobe.guard") / "data" / "catalogue.csv"
            text, where = ref.read_text(encoding="utf-8"), "copyprobe/guard/data/catalogue.csv"
        else:
            try:
                text, where = Path(path).read_text(encoding="utf-8"), str(path)
            except OSError as exc:
                raise CatalogueError(f"catalogue {path}: cannot read it ({exc})") from exc
        reader = csv.DictReader(text.splitlines())
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CatalogueError(f"{where}: missing column(s) {missing}")
        works = []
        for line, row in enumerate(reader, start=2):
            for key in ("id", "title", "author"):
                if not (row.get(key) or "").strip():
                    raise CatalogueError(f"{where}, line {line}: column {key!r} is empty")
            died = (row["author_died"] or "").strip()
            works.append(Work(
                id=row["id"].strip(), title=row["title"].strip(),
                aliases=tuple(a.strip() for a in (row["aliases"] or "").split("|")
                              if a.strip()),
                author=row["author"].strip(), holder=(row["holder"] or "").strip(),
                first_published=_year(row["first_published"] or "", path=where, line=line,
                                      column="first_published", optional=False) or 0,
                author_died=None if died == "living" else _year(
                    died, path=where, line=line, column="author_died", optional=True),
                author_living=died == "living", licence=(row["licence"] or "").strip(),
                note=(row["note"] or "").strip()))
        return cls(works)

    def find(self, text: str) -> Work | None:
        """The work ``text`` names (see the module text), or None."""
        folded = _fold(text)
        for title, work in self._titles:
            t = _fold(title)
            if t.strip() and t in folded:
                short = len(t.split()) < 2 or len(t.strip()) < 8
                surname = _fold(work.author.split()[-1])
                if not short or surname in folded:
                    return work
        return None
