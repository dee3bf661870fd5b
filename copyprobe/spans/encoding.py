"""The unit an index is built in, and the bytes it stores.

Reference: docs/span-index.md.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence

from copyprobe.matching.words import (
    joins_previous,
    normalize_words,
    normalize_words_with_spans,
    segment,
    segmenter,
)
from copyprobe.spans.types import SpanIndexError, Tokens

UNITS = ("words", "whitespace", "tokens")
#: the units stored byte-level (``tokens``, a model's token ids, needs a tokenizer:
#: :mod:`copyprobe.spans.units`)
BYTE_UNITS = ("words", "whitespace")
DEFAULT_UNIT = "words"
#: Bumped whenever a unit's tokens change for some text: an index records it, and one built
#: under another version is refused (its spans would not be the ones queried).
NORMALIZER_VERSION = 2

_NON_SPACE = re.compile(r"\S+")
#: the ``words`` unit on ASCII text (NFKC is the identity there, casefold is lower-casing):
#: runs of letters and digits, an apostrophe between two of them dropped (the underscore
#: separates, as in normalize_words)
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
#: runs of non-ASCII characters; :func:`_stretches` widens each to whitespace or the text's
#: ends, where NFKC composes nothing across (no whitespace character composes with a
#: neighbour, and NFKC maps each to whitespace: checked over all of Unicode) and no token or
#: inner apostrophe reaches over. So the words unit of a text is that of its stretches in
#: order: the ASCII ones by :data:`_ASCII_WORD`, the others by normalize_words
#: (tests/spans/test_encoding.py)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_NON_SPACES = re.compile(r"\S*")


def check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise SpanIndexError(f"unknown span-index unit {unit!r}; known: {', '.join(UNITS)}")
    return unit


def _byte_unit(unit: str) -> str:
    if check_unit(unit) not in BYTE_UNITS:
        raise SpanIndexError(f"the span-index unit {unit!r} needs a tokenizer (give one: "
                             "copyprobe.spans.units.make_codec(unit, tokenizer=PATH))")
    return unit


def tokenize(text: str, unit: str = DEFAULT_UNIT) -> Tokens:
    """``text``'s tokens in ``unit`` with their character ranges in ``text``."""
    _byte_unit(unit)
    if unit == "words":
        tokens: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        for a, b, ascii_only in _stretches(text):
            if ascii_only:  # the same tokens and ranges, without the offset map's cost
                for m in _ASCII_WORD.finditer(text[a:b].lower()):
                    tokens.append(m.group().replace("'", ""))
                    starts.append(a + m.start())
                    ends.append(a + m.end())
            else:
                t, s, e = normalize_words_with_spans(text[a:b])
                tokens += t
                starts += [a + x for x in s]
                ends += [a + x for x in e]
        return Tokens(tokens, starts, ends)
    has, pieces = segmenter()
    matches = [p for m in _NON_SPACE.finditer(text)
               for p in (pieces.finditer(text, *m.span()) if has.search(m.group()) else (m,))]
    return Tokens([m.group() for m in matches], [m.start() for m in matches],
                  [m.end() for m in matches])


def settled(text: str, start: int = 0) -> int:
    """How much of ``text`` is tokenized for good, whatever follows it: up to its last
    whitespace character, or to its last segmented character (which starts a word of its
    own and composes with nothing before it under NFKC; a mark may still follow it). The
    tokens of ``text[:k]`` and of what follows, put together, are those of the whole (a
    stream's words, :class:`copyprobe.spans.stream.StreamTokens`). Only ``text[start:]`` is
    looked at; 0 when it holds no such place."""
    for i in range(len(text) - 1, start - 1, -1):
        ch = text[i]
        if ch.isspace():
            return i + 1
        if ch >= "\u0e00" and _starts_word(ch):
            return i
    return 0


@functools.lru_cache(maxsize=4096)
def _starts_word(ch: str) -> bool:
    """A segmented character before which a text's words can be cut (Thai SARA AM is not:
    its NFKC starts with a mark, which joins the word before)."""
    return bool(segmenter()[0].match(ch)) and not joins_previous(
        unicodedata.normalize("NFKC", ch)[0])


def words(text: str, unit: str = DEFAULT_UNIT) -> list[str]:
    """The tokens alone (what is indexed for a document; the same tokens as
    :func:`tokenize`, without the offset map's cost)."""
    _byte_unit(unit)
    if unit == "whitespace":
        return segment(text.split())
    out: list[str] = []
    for a, b, ascii_only in _stretches(text):
        if ascii_only:
            out += [w.replace("'", "") for w in _ASCII_WORD.findall(text[a:b].lower())]
        else:
            out += normalize_words(text[a:b])
    return out


def _stretches(text: str) -> list[tuple[int, int, bool]]:
    """``text`` cut at whitespace into ``(start, end, ascii only)`` stretches (see
    :data:`_NON_ASCII`)."""
    if text.isascii():
        return [(0, len(text), True)]
    out: list[tuple[int, int, bool]] = []
    at = 0
    for m in _NON_ASCII.finditer(text):
        if m.end() <= at:
            continue  # inside the stretch before
        a = max(m.start(), at)  # a run may start inside the stretch before and go on
        while a > at and not text[a - 1].isspace():
            a -= 1
        b = _NON_SPACES.match(text, m.end()).end()
        if a > at:
            out.append((at, a, True))
        out.append((a, b, False))
        at = b
    if at < len(text):
        out.append((at, len(text), True))
    return out


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
    so an unchanged corpus has an unchanged digest (and a rebuild can be skipped). In the unit
    ``tokens`` the tokenizer file's sha256 (``tokenizer``) takes the normaliser's place."""

    def __init__(self, unit: str, tokenizer: str | None = None):
        seed = f"{check_unit(unit)}:{tokenizer if unit not in BYTE_UNITS else NORMALIZER_VERSION}"
        self._h = hashlib.sha256(seed.encode())

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
