"""Copyright lines: find them in text and read the holder and year out of them.

Reference: docs/materials.md.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

MAX_NOTICE_WORDS = 40
MIN_YEAR = 1700

_SYMBOL = r"(?:©|&copy;|\([cC]\))"
_MARKER = re.compile(rf"\bcopyright\b(?:\s*{_SYMBOL})?|{_SYMBOL}(?:\s*copyright\b)?", re.IGNORECASE)
_YEARS = re.compile(
    r"[\s,:]*(?P<year>\d{4})(?:\s*(?:[-–—/,]|\bto\b)\s*(?:\d{4}|present|now)\b)*",
    re.IGNORECASE)
_TRAILING_YEAR = re.compile(r"^(?P<holder>.*?)[\s,]+(?P<year>\d{4})\b\.?\s*$")
_RESERVED = re.compile(r"\ball\s+rights\s+reserved\b.*$", re.IGNORECASE | re.DOTALL)
# A sentence end: ". " followed by a capital, except after common abbreviations in firm names.
_SENTENCE_END = re.compile(r"(?<!\bInc)(?<!\bLtd)(?<!\bCo)(?<!\bCorp)(?<!\bBros)(?<!\bJr)"
                           r"(?<!\bSt)(?<!\b[A-Z])\.\s+(?=\S)")
_ABBREVIATION_END = re.compile(r"\b(?:Inc|Ltd|Co|Corp|Bros|Jr|St|[A-Z])\.$")
_PLACEHOLDER = re.compile(
    r"\[[^\]]*\]|\{[^}]*\}|<\s*(?:year|yyyy|name|owner|author|copyright)[^>]*>|\byyyy\b"
    r"|name of (?:the )?copyright (?:owner|holder)", re.IGNORECASE)
_ADDRESS = re.compile(r"<[^>]*>|\(?\bhttps?://\S+\)?|\(?\b[\w.+-]+@[\w-]+\.[\w.-]+\)?")


@dataclass(frozen=True)
class Notice:
    """A copyright line and what it says."""

    holder: str
    year: int | None
    notice: str  # the line itself, whitespace collapsed


def _clean(line: str) -> str:
    return re.sub(r"\s+", " ", line.replace("&copy;", "©")).strip()


def parse_year(value: Any, *, where: str = "") -> int | None:
    """A year from a table cell or config value (int, "2015", "2015.0"; empty -> None).

    Raises ValueError (naming ``where``) for anything else, or a year outside
    [1700, next year].
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where}year {value!r} is not a year")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    s = str(value).strip()
    if not s:
        return None
    if re.fullmatch(r"\d{4}\.0", s):
        s = s[:-2]
    if not re.fullmatch(r"\d{4}", s):
        raise ValueError(f"{where}year {value!r} is not a four-digit year")
    year = int(s)
    if not MIN_YEAR <= year <= dt.date.today().year + 1:
        raise ValueError(f"{where}year {year} is outside {MIN_YEAR}..{dt.date.today().year + 1}")
    return year


def _holder(text: str) -> str:
    text = re.sub(r"\s+(?=[,.;])", "", _ADDRESS.sub("", _RESERVED.sub("", text)))
    text = re.split(r"[;|]| - | – |,\s*see\b", text, maxsplit=1)[0]
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    text = re.sub(r"^(?:by\s+)", "", text.strip(" ,:"), flags=re.IGNORECASE).strip(" ,;:")
    if text.endswith(".") and not _ABBREVIATION_END.search(text):
        text = text[:-1].rstrip()
    return re.sub(r"\s+", " ", text)


def parse_notice(line: str) -> Notice | None:
    """The holder and year of a copyright line, or None when ``line`` is not a notice."""
    line = _clean(line)
    if not line or len(line.split()) > MAX_NOTICE_WORDS or _PLACEHOLDER.search(line):
        return None
    m = _MARKER.search(line)
    if m is None:
        return None
    # "©" (or "Copyright ©") stands for a notice even without a year next to it; a bare "(c)"
    # does only before a year (else it is the third item of a list), as does a bare "Copyright".
    marker = m.group(0).lower()
    has_symbol = "©" in marker or "&copy;" in marker or (
        "copyright" in marker and bool(re.search(_SYMBOL, marker)))
    rest = line[m.end():]
    y = _YEARS.match(rest)
    year: int | None = None
    if y is not None:
        year = int(y.group("year"))
        holder = _holder(rest[y.end():])
    else:
        if not has_symbol:  # "copyright law ..." is prose, not a notice
            return None
        head = _RESERVED.sub("", rest).strip(" .,")
        t = _TRAILING_YEAR.match(head)
        if t is not None:  # "© BBC 2024"
            year = int(t.group("year"))
            holder = _holder(t.group("holder"))
        else:
            holder = _holder(rest)
    if year is not None and not MIN_YEAR <= year <= dt.date.today().year + 1:
        return None
    if not holder and year is None:
        return None
    return Notice(holder=holder, year=year, notice=line)


def find_notices(text: str) -> list[tuple[int, Notice]]:
    """The copyright lines of ``text``: (line index, notice), in order."""
    out = []
    for i, line in enumerate(text.splitlines()):
        n = parse_notice(line)
        if n is not None:
            out.append((i, n))
    return out


def strip_notices(text: str) -> tuple[str, list[Notice]]:
    """``text`` without its copyright lines, and those lines (in order)."""
    lines = text.splitlines()
    found = find_notices(text)
    drop = {i for i, _ in found}
    kept = "\n".join(ln for i, ln in enumerate(lines) if i not in drop)
    return kept.strip(), [n for _, n in found]


def best_notice(notices: list[Notice]) -> Notice | None:
    """The notice to report: the first that names both a holder and a year, else the first."""
    for n in notices:
        if n.holder and n.year is not None:
            return n
    return notices[0] if notices else None
