"""Licence text handling: layout normalisation, copyright lines, and cutting a file into the
licences it contains.

A file may concatenate several licences (numpy's LICENSE.txt carries BSD-3-Clause, GPL-3.0 and
more). :func:`split_licences` cuts each recognised licence out from its detector's opening
phrase to its closing phrase; the copyright lines in front of a licence ("Copyright (c) 2015
Foo", "All rights reserved.") are not part of the text but are returned beside it. Texts are
normalised (line wrapping, indentation, comment/quote markers, markdown bold, rule lines) so
that copies laid out differently compare equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from copyprobe.sources.licences.detectors import DETECTORS, words

_COPYRIGHT_LINE = re.compile(
    r"^[\W_]*(?:portions\s+)?(?:copyright\b|\(c\)|©|all\s+rights\s+reserved)", re.IGNORECASE
)
_RULE_LINE = re.compile(r"^[-=_*~#+.:|\s]{3,}$")
_LIST_ITEM = re.compile(r"^(?:[*\-•+]|\d+[.)]|\([0-9a-zA-Z]{1,4}\)|[a-zA-Z][.)])\s")
_COMMENT_MARKERS = ("*", "//", ";")
_QUOTE_OR_HEADING = re.compile(r"^\s*(?:(?:>\s?)+|#+(?=\s))")


def is_copyright_line(line: str) -> bool:
    """Whether ``line`` is a copyright statement ("Copyright (c) 2015 Foo", "(c) ...",
    "All rights reserved.")."""
    return bool(_COPYRIGHT_LINE.match(line.strip()))


def _clean_copyright(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip().lstrip("*#> ").rstrip("* "))


def strip_copyright_lines(text: str) -> tuple[str, list[str]]:
    """Remove the copyright lines (and blank lines between them) at the top of ``text``.

    Returns the rest of the text and the removed copyright lines (stripped). Only the top is
    touched: a licence's own clauses ("the above copyright notice ...") stay.
    """
    lines = text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if not s or _RULE_LINE.match(s):
            i += 1
            continue
        if is_copyright_line(s):
            found.append(_clean_copyright(s))
            i += 1
            continue
        break
    return "\n".join(lines[i:]), found


def prepare_text(text: str) -> str:
    """Remove markup that would break phrase matching, keeping lines (and line count).

    Unifies newlines, tabs and no-break spaces; drops markdown bold (``**``), markdown quote
    (``>``) and heading (``#``) markers at line starts, and a comment marker (``*``, ``//``,
    ``;``) found at the start of at least 80% of the non-empty lines.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = text.replace("\u00a0", " ").replace("**", "")
    lines = [_QUOTE_OR_HEADING.sub("", ln) for ln in text.split("\n")]
    stripped = [ln.strip() for ln in lines]
    nonempty = [ln for ln in stripped if ln]
    for marker in _COMMENT_MARKERS:
        hits = [ln for ln in nonempty if ln == marker or ln.startswith(marker + " ")]
        if len(nonempty) >= 3 and len(hits) >= 0.8 * len(nonempty):
            lines = [
                ln[len(marker):] if (ln == marker or ln.startswith(marker + " ")) else ln
                for ln in stripped
            ]
            break
    return "\n".join(lines)


def normalise_text(text: str) -> str:
    """Normalise a licence text's layout, keeping its words and punctuation.

    Drops carriage returns, tabs, indentation, comment/quote markers found on most lines,
    markdown bold and rule lines; re-joins wrapped lines into paragraphs (list items keep their
    own line); paragraphs are separated by one blank line.
    """
    lines = [ln.strip() for ln in prepare_text(text).split("\n")]
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for ln in lines:
        if not ln or _RULE_LINE.match(ln):
            if current:
                paragraphs.append(current)
                current = []
            continue
        ln = re.sub(r" {2,}", " ", ln)
        if current and not _LIST_ITEM.match(ln):
            current[-1] = current[-1] + " " + ln
        else:
            current.append(ln)
    if current:
        paragraphs.append(current)
    return "\n\n".join("\n".join(p) for p in paragraphs)


def comparison_key(text: str) -> str:
    """Lower-case words only: two texts with the same key are the same licence text."""
    return words(text)



# ------------------------------------------------------------------------------- splitting


@dataclass
class Segment:
    """A piece of a file: a recognised licence (``family`` set) or leftover text (``None``)."""

    family: str | None
    text: str  # normalised
    start: int
    end: int
    copyright: list[str] = field(default_factory=list)
    problem: str = ""  # set when a recognised opening has no closing


def _looks_like_licence(text: str) -> bool:
    return bool(re.search(r"warrant", text, re.IGNORECASE))


def split_licences(text: str) -> list[Segment]:
    """Cut ``text`` into the licences it contains (in order) and the text left between them.

    A licence runs from its detector's opening phrase to the first closing phrase within
    ``max_chars``; the copyright lines just before it go to its ``copyright``. An opening
    without a closing gives a segment with ``problem`` set (and scanning continues after it).
    Leftover pieces (``family`` None) are returned only when they look like licence text
    (they mention a warranty); their top copyright lines are stripped into ``copyright``.
    """
    text = prepare_text(text)
    starts: list[tuple[int, int, int, re.Match[str]]] = []
    for order, det in enumerate(DETECTORS):
        for m in det.start.finditer(text):
            starts.append((m.start(), order, m.end(), m))
    starts.sort(key=lambda s: (s[0], s[1]))
    out: list[Segment] = []
    pos = 0
    for s_pos, order, s_end, _m in starts:
        if s_pos < pos:
            continue
        det = DETECTORS[order]
        window = text[s_end : s_end + det.max_chars]
        m_end = det.end.search(window)
        pre = text[pos:s_pos]
        if m_end is None:
            out.append(Segment(det.name, "", s_pos, s_end,
                               problem=f"{det.name} opening phrase without its closing phrase within "
                                       f"{det.max_chars} characters (a mention, a truncated "
                                       f"text or an unusual variant)"))
            continue
        end = s_end + m_end.end()
        _leftover(pre, pos, out)
        # The copyright lines of this licence: those in the last paragraphs before it.
        pre_lines = [ln.strip() for ln in pre.splitlines()[-15:]]
        cr = [_clean_copyright(ln) for ln in pre_lines if is_copyright_line(ln)]
        raw = text[s_pos:end]
        norm = normalise_text(raw)
        out.append(Segment(det.classify(norm), norm, s_pos, end, copyright=cr))
        pos = end
    _leftover(text[pos:], pos, out)
    return out


def _leftover(piece: str, offset: int, out: list[Segment]) -> None:
    if not piece.strip() or not _looks_like_licence(piece):
        return
    body, cr = strip_copyright_lines(piece)
    norm = normalise_text(body)
    # Drop copyright lines anywhere in leftovers (they are headers of bundled components).
    norm = "\n\n".join(p for p in norm.split("\n\n") if not is_copyright_line(p))
    if norm:
        out.append(Segment(None, norm, offset, offset + len(piece), copyright=cr))


def detect_family(text: str) -> str | None:
    """The family of the first licence recognised in ``text`` (None if none is)."""
    for seg in split_licences(text):
        if seg.family is not None and not seg.problem:
            return seg.family
    return None

