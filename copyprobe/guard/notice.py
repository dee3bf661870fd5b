"""Notice identifier: does a prompt carry a copyright notice, in its text or in its images?

Reference: docs/guard-notice-status.md.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.ocr import OCRCache, cached_read, ocr_engine
from copyprobe.guard.types import NoticeFinding
from copyprobe.prompt import Prompt, image_bytes

MAX_NOTICE_CHARS = 160
#: edits (Levenshtein) allowed between the squashed letters and a reserved phrase
RESERVED_MAX_EDITS = 2

# letters of "copyright" and the characters OCR reads for them
_LOOKALIKES = {"c": "c(", "o": "o0", "p": "p", "y": "yv", "r": "r", "i": "il1|!",
               "g": "gq9", "h": "h", "t": "t"}


def _copyright_word() -> str:
    """"copyright" with look-alike letters, optional spaces between letters, and any one
    letter lost (the first and the last kept)."""
    letters = list("copyright")
    cls = [f"[{re.escape(_LOOKALIKES[ch])}]" for ch in letters]
    variants = [r"\s?".join(cls)]
    for drop in range(1, len(cls) - 1):
        variants.append(r"\s?".join(c for i, c in enumerate(cls) if i != drop))
    return r"(?<![a-z0-9])(?:" + "|".join(variants) + r")(?![a-z])"


_WORD = _copyright_word()
_YEAR = r"(?:1[5-9]|20)\d\d(?:\s?[-–—/,]\s?(?:(?:1[5-9]|20)\d\d|\d\d))*(?![0-9])"
#: a sign as written or as OCR reads it; an "@" glued after a word (e-mail) is excluded
_SIGN = (r"(?:©|Ⓒ|ⓒ|\(\s?c\s?\)|(?<![\w.@])@|(?<![a-z0-9(])c\)|\(c(?![a-z)]))")
_TRUE_SIGN = r"(?:©|Ⓒ|ⓒ)"
_NAME = r"(?-i:[A-Z][A-Za-z&'.-]+)"

#: words that make "Copyright <Capitalised word>" a term, not a holder: "the U.S. Copyright
#: Office", "Copyright Term Extension Act", "THE COPYRIGHT HOLDERS", "Copyright Notice"
_TERMS = ("holders?", "owners?", "laws?", "office", "acts?", "notices?", "licen[cs]es?",
          "protection", "conventions?", "treaty", "treaties", "term", "terms", "directive",
          "alliance", "statements?", "infringements?", "claims?", "assignments?", "and",
          "or", "information", "page", "section", "status", "royalty", "royalties",
          "agreements?", "policy", "registration", "board", "clearance", "center", "centre",
          "permissions?")
#: a holder after the word: a capitalised word (or an all-capitals one: "MIT", "IBM") that
#: is no term of the law
_HOLDER = (r"(?!(?:" + "|".join(_TERMS) + r")\b)(?-i:[A-Z][\w&'.-]*)")

#: an "@" glued to the word ("copyright@2019", "copyright@Jane Doe 2019": OCR lost the space
#: before the sign) counts when a year follows, directly or after a name (an address has none)
_GLUED_AT = (r"@\s?(?=" + _YEAR + r"|(?-i:[A-Z])(?:[A-Za-z&' -]|\.(?!(?-i:[a-z]))){1,60}?"
             + _YEAR + r")")
#: the word glued to the qualifier before it ("Textcopyright©2019", "Illustrationscopyright
#: @2020 Ann Lee": OCR lost the space), then a sign and a year
_GLUED_WORD = r"(?<![a-z0-9])[a-z]{2,20}?" + _WORD.replace(r"(?<![a-z0-9])", "", 1)

_PATTERNS = (
    # "Copyright 2019", "Copyright: 2009-2023", "COPYRIGHT(C)2019", "Copyright C 2009"
    ("word_sign_year", re.compile(_WORD + r"\s?:?\s?(?:(?:" + _SIGN + r"|c|@)\s?)?" + _YEAR,
                                  re.I)),
    ("word_sign", re.compile(_WORD + r"\s?:?\s?(?:" + _SIGN + "|" + _GLUED_AT + ")", re.I)),
    ("glued_word_sign_year", re.compile(_GLUED_WORD + r"\s?:?\s?(?:" + _SIGN + r"|@)\s?"
                                        + _YEAR, re.I)),
    ("sign_year", re.compile(_SIGN + r"\s?" + _YEAR, re.I)),
    ("sign_name", re.compile(_TRUE_SIGN + r"\s?" + _NAME, re.I)),
    # "Copyright Rice University", "Copyright: Kyle Harper", "is copyright Steven G. Johnson"
    ("word_holder", re.compile(_WORD + r"(?::(?!:))?\s" + _HOLDER, re.I)),
)

#: the words a credit line puts before "copyright" ("Text copyright", "Cover art and
#: illustrations copyright", "Portions Copyright", "The Original Code is Copyright"): up to
#: four words back to the start of the sentence (or of the line), the first capitalised
_CREDIT_LEAD = re.compile(r"(?:(?<=[.!?:;)\]] )|^)(?-i:[A-Z][\w'-]*)(?: [\w'&-]+){0,3} $")

_RESERVED_PHRASES = ("allrightsreserved", "tousdroitsreserves", "allerechtevorbehalten")
# digits OCR reads for letters, folded before squashing (so "A11" is "all")
_DIGIT_LETTERS = str.maketrans({"0": "o", "1": "l", "|": "l", "5": "s"})
#: a sentence ends at ".", "!" or "?" and a space, but not after an initial ("J.K. Rowling")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s")


def normalise(text: str) -> str:
    """NFKC, whitespace runs (line breaks included) as one space, ends stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _squashed(text: str) -> tuple[str, list[int]]:
    """The letters of ``text`` lower-cased, accents removed and look-alike digits folded,
    joined without spaces, and for each the index of its character in ``text``."""
    letters: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        ch = ch.lower().translate(_DIGIT_LETTERS)
        base = unicodedata.normalize("NFKD", ch)[:1]
        if base.isalpha() and base.isascii():
            letters.append(base)
            where.append(i)
    return "".join(letters), where


def _reserved_span(text: str) -> tuple[int, int] | None:
    """Where in ``text`` a reserved phrase stands, within :data:`RESERVED_MAX_EDITS` edits of
    its squashed letters (the first such stretch), or None."""
    from rapidfuzz.distance import Levenshtein

    squashed, where = _squashed(text)
    best: tuple[int, int] | None = None
    for phrase in _RESERVED_PHRASES:
        if phrase in squashed:
            i = squashed.index(phrase)
            span = (i, i + len(phrase))
        else:
            span = None
            n = len(phrase)
            # every stretch a little shorter or longer than the phrase, at every position
            for i in range(max(0, len(squashed) - n + RESERVED_MAX_EDITS + 1)):
                for size in range(n - RESERVED_MAX_EDITS, n + RESERVED_MAX_EDITS + 1):
                    if i + size > len(squashed):
                        break
                    if Levenshtein.distance(phrase, squashed[i:i + size],
                                            score_cutoff=RESERVED_MAX_EDITS) <= RESERVED_MAX_EDITS:
                        span = (i, i + size)
                        break
                if span is not None:
                    break
        if span is not None and (best is None or span[0] < best[0]):
            best = span
    if best is None:
        return None
    return where[best[0]], where[best[1] - 1] + 1


def _notice_text(text: str, start: int) -> str:
    """From ``start`` to the end of the sentence (or :data:`MAX_NOTICE_CHARS`)."""
    rest = text[start:start + MAX_NOTICE_CHARS]
    m = _SENTENCE_END.search(rest)
    # "© 2019 Penguin Books Ltd. All rights reserved." reads on past an abbreviation's dot
    # when what follows is the reserved phrase
    if m is not None and _reserved_span(rest[m.end():m.end() + 30]) is not None:
        m2 = _SENTENCE_END.search(rest, m.end())
        m = m2
    notice = rest[:m.start()] if m is not None else rest
    # an "@" read for the sign: before a year, or right after the word ("copyright @ Name")
    notice = re.sub(r"(?<![\w.@])@(?=\s?(?:1[5-9]|20)\d\d)|(?<=copyright )@|(?<=copyright)@",
                    "©", notice, flags=re.I)
    return notice.strip()


def find_notice(text: str | None) -> str | None:
    """The copyright notice in ``text`` (normalised, see the module text), or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    norm = normalise(text)
    starts = []
    for _name, rx in _PATTERNS:
        m = rx.search(norm)
        if m is not None:
            starts.append(m.start())
    span = _reserved_span(norm)
    if span is not None:
        starts.append(span[0])
    if not starts:
        return None
    start = min(starts)
    if re.match(_WORD, norm[start:], re.I) or re.match(_GLUED_WORD, norm[start:], re.I):
        # a credit line's first words, on the notice's own line of the text as given
        line_start = _line_start(text, start)
        lead = _CREDIT_LEAD.search(norm[max(line_start, start - 60):start])
        if lead is not None:
            start -= len(lead.group(0))
    return _notice_text(norm, start)


def _line_start(text: str, pos: int) -> int:
    """Where, in ``normalise(text)``, the line of ``text`` holding the normalised position
    ``pos`` begins (the normalised lines, joined by one space, are the normalised text)."""
    offset = 0
    for line in text.splitlines():
        n = len(normalise(line))
        if not n:
            continue
        if pos < offset + n + 1:
            return offset
        offset += n + 1
    return offset


_CAPITALISED = r"(?-i:[A-Z][\w&'.,-]*)"
#: the last line of a page that is only a year and a name, or a name and a year
_FOOTER = (re.compile(r"^" + _YEAR + r"\s?(?:" + _CAPITALISED + r"\s?){1,6}$"),
           re.compile(r"^(?:" + _CAPITALISED + r"\s?){1,6}" + _YEAR + r"\.?$"))


def find_image_notice(page_text: str | None) -> str | None:
    """:func:`find_notice` for the text OCR read from one image, plus the notice whose sign
    OCR lost: RapidOCR drops a ``©`` that starts a line (measured on rendered footers:
    "© 2021 Northwind Press" is read as "2021NorthwindPress"), so a **last** line that is
    only a year and a name ("2021 Northwind Press", "Northwind Press 2021."), with at least
    two capital letters in the name, counts as a notice; it is reported as read."""
    notice = find_notice(page_text)
    if notice is not None or not isinstance(page_text, str):
        return notice
    lines = [line for line in page_text.splitlines() if line.strip()]
    if not lines:
        return None
    last = normalise(lines[-1])
    if len(last) > MAX_NOTICE_CHARS or sum(ch.isupper() for ch in last) < 2:
        return None
    return last if any(rx.match(last) for rx in _FOOTER) else None


def prompt_texts(prompt: Prompt) -> list[str]:
    """The text of the user messages of a prompt (string content and text parts), in order;
    a completion prompt's text."""
    if prompt.format != "chat":
        return [prompt.text]
    out: list[str] = []
    for m in prompt.messages:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p["text"] for p in content
                       if isinstance(p, Mapping) and p.get("type") == "text"
                       and isinstance(p.get("text"), str))
    return out


def prompt_images(prompt: Prompt) -> list[Mapping[str, Any]]:
    """The image parts of the user messages of a chat prompt, in order."""
    out: list[Mapping[str, Any]] = []
    for m in prompt.messages:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, list):
            out.extend(p for p in content
                       if isinstance(p, Mapping) and p.get("type") == "image_url")
    return out


class NoticeIdentifier:
    """Notice in the text parts first; else OCR of every image (see the module text).

    ``ocr``: an :data:`~copyprobe.ocr.OCR_ENGINES` name, or None to look at text only;
    ``ocr_options``: the engine's options; ``cache_dir``: where OCR texts are kept (None: not
    kept). ``stats`` counts ``identify`` calls, images OCR actually read (``ocr_runs``) and
    images answered from the cache (``ocr_cache_hits``); ``last_seconds`` is the time the last
    call made in the current thread took.
    """

    def __init__(self, ocr: str | None = "rapidocr", cache_dir: str | Path | None = None,
                 ocr_options: Mapping[str, Any] | None = None) -> None:
        self.engine = ocr_engine(ocr, ocr_options) if ocr is not None else None
        self._settings = self.engine.settings() if self.engine is not None else None
        self.cache = OCRCache(Path(cache_dir) / "ocr" if cache_dir is not None else None)
        self.stats = {"calls": 0, "ocr_runs": 0, "ocr_cache_hits": 0}
        self._stats_lock = threading.Lock()
        self._local = threading.local()  # last_seconds is per thread (concurrent guards)

    @property
    def last_seconds(self) -> float:
        return float(getattr(self._local, "seconds", 0.0))

    def _count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1

    def identify(self, prompt: Prompt) -> NoticeFinding:
        started = time.perf_counter()
        try:
            return self._identify(prompt)
        finally:
            self._local.seconds = time.perf_counter() - started

    def _identify(self, prompt: Prompt) -> NoticeFinding:
        self._count("calls")
        notice = find_notice("\n".join(prompt_texts(prompt)))
        if notice is not None:
            return NoticeFinding(found=True, notice=notice, where="text")
        images = prompt_images(prompt) if prompt.format == "chat" else []
        if self.engine is None or not images:
            return NoticeFinding(found=False)
        texts: list[str] = []
        notice = None
        all_cached = True
        for part in images:
            try:
                data = image_bytes(part)
            except (OSError, ValueError, KeyError) as exc:
                raise ValueError(f"notice identifier: cannot read an image part of the prompt "
                                 f"({exc})") from exc
            text, hit = cached_read(self.engine, self.cache, data, self._settings)
            self._count("ocr_cache_hits" if hit else "ocr_runs")
            all_cached = all_cached and hit
            texts.append(text)
            if notice is None:
                notice = find_image_notice(text)
        ocr_text = "\n".join(t for t in texts if t)
        return NoticeFinding(found=notice is not None, notice=notice,
                             where="image" if notice is not None else None,
                             ocr_chars=len(ocr_text), from_cache=all_cached, ocr_text=ocr_text)
