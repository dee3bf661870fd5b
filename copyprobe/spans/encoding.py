"""The unit an index is built in, and the bytes it stores.

Units (recorded in every index's manifest; querying an index in another unit is an error):

* ``words`` (the default): :func:`copyprobe.matching.words.normalize_words` tokens (NFKC,
  casefold, inner apostrophes dropped, runs of letters, digits and marks), the words of MSR's
  word mode: "verbatim" is then case- and punctuation-insensitive.
* ``whitespace``: ``str.split()`` tokens, case and punctuation kept, the strict unit (the words
  of paper mode).

A document is stored as ``b" " + " ".join(tokens).encode() + b" "``: one space before and
after every word, so the byte query :func:`encode_query` of a word sequence occurs exactly
where those words occur word-aligned on both sides. Neither unit's tokens hold a space, and
UTF-8 never produces the bytes 0xFE/0xFF (the engine's end-of-text and document separator).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from copyprobe.matching.words import normalize_words, normalize_words_with_spans
from copyprobe.spans.types import SpanIndexError, Tokens

UNITS = ("words", "whitespace")
DEFAULT_UNIT = "words"
#: Bumped whenever a unit's tokens change for some text: an index records it, and one built
#: under another version is refused (its spans would not be the ones queried).
NORMALIZER_VERSION = 1

_NON_SPACE = re.compile(r"\S+")
#: the ``words`` unit on ASCII text (NFKC is the identity there, casefold is lower-casing):
#: runs of letters and digits, an apostrophe between two of them dropped (the underscore
#: separates, as in normalize_words)
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise SpanIndexError(f"unknown span-index unit {unit!r}; known: {', '.join(UNITS)}")
    return unit


def tokenize(text: str, unit: str = DEFAULT_UNIT) -> Tokens:
    """``text``'s tokens in ``unit`` with their character ranges in ``text``."""
    check_unit(unit)
    if unit == "words":
        if text.isascii():  # the same tokens and ranges, without the offset map's cost
            matches = list(_ASCII_WORD.finditer(text.lower()))
            return Tokens([m.group().replace("'", "") for m in matches],
                          [m.start() for m in matches], [m.end() for m in matches])
        tokens, starts, ends = normalize_words_with_spans(text)
        return Tokens(tokens, starts, ends)
    matches = list(_NON_SPACE.finditer(text))
    return Tokens([m.group() for m in matches], [m.start() for m in matches],
                  [m.end() for m in matches])


def words(text: str, unit: str = DEFAULT_UNIT) -> list[str]:
    """The tokens alone (what is indexed for a document; the same tokens as
    :func:`tokenize`, without the offset map's cost)."""
    check_unit(unit)
    return normalize_words(text) if unit == "words" else text.split()


def encode_doc(tokens: Sequence[str]) -> bytes:
    """A document's stored bytes (without the engine's 0xFF separator)."""
    return b" " + " ".join(tokens).encode("utf-8") + b" "


def encode_query(tokens: Sequence[str]) -> bytes:
    """The byte query of a word sequence: it occurs exactly where the words do, aligned."""
    if not tokens:
        return b""
    return b" " + " ".join(tokens).encode("utf-8") + b" "


class StreamDigest:
    """The content digest of an index: sha256 over the unit, the normaliser version and every
    indexed document in index order (its source, doc_id, title, url and stored bytes). The
    suffix-array index and :class:`~copyprobe.spans.reference.MemoryIndex` compute it alike,
    so an unchanged corpus has an unchanged digest (and a rebuild can be skipped)."""

    def __init__(self, unit: str):
        self._h = hashlib.sha256(f"{check_unit(unit)}:{NORMALIZER_VERSION}".encode())

    def update(self, source: str, doc_id: str, title: str, url: str, data: bytes) -> None:
        for part in (source, doc_id, title, url):
            self._h.update(b"\0" + part.encode("utf-8", "surrogatepass"))
        self._h.update(b"\0%d\0" % len(data))
        self._h.update(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def stream_digest(unit: str, docs: Iterable[tuple[str, str, str, str, bytes]]) -> str:
    """:class:`StreamDigest` of ``(source, doc_id, title, url, stored bytes)`` in order."""
    h = StreamDigest(unit)
    for d in docs:
        h.update(*d)
    return h.hexdigest()
