"""Every maximal verbatim span of at least L words of a text, found in a suffix-array index
(the exact algorithm of docs/span-index.md, "Finding spans").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from copyprobe.spans.types import DocHit, Span, SpanIndexError, Tokens
from copyprobe.spans.units import ByteCodec

__all__ = ["DEFAULT_CAP_WORDS", "Searchable", "find_spans"]


class _Shard(Protocol):
    def lcp(self, rank: int, query: bytes) -> int: ...


class Searchable(Protocol):
    """What the search needs of an index (:class:`~copyprobe.spans.index.SpanIndex`)."""

    path: Path
    codec: ByteCodec

    @property
    def shards(self) -> Sequence[_Shard]: ...

    def tokenize(self, text: str) -> Tokens: ...

    def segments(self, query: bytes) -> list[tuple[int, int]]: ...

    def hits(self, segments: list[tuple[int, int]], limit: int | None = None
             ) -> tuple[np.ndarray, np.ndarray]: ...

    def word_position(self, doc_ix: int, gptr: int) -> int: ...

    def doc_hit(self, doc_ix: int, word_start: int) -> DocHit: ...


#: the first query of each start covers this many words (doubled where a span is longer)
DEFAULT_CAP_WORDS = 64


def _reach(index: Searchable, buf: bytes, pos: list[int], i: int, cap: list[int]) -> int:
    """``j(i)``: the end of the longest run of words from ``i`` that occurs in the index."""
    n = len(pos) - 1
    while True:
        end = min(n, i + cap[0])
        q = index.codec.slice(buf, pos, i, end)
        segs = index.segments(q)
        if any(hi > lo for lo, hi in segs):
            if end == n:
                return n
            cap[0] *= 2  # the whole capped query occurs: look further
            continue
        m = 0
        for sh, (lo, _) in zip(index.shards, segs, strict=True):
            m = max(m, sh.lcp(lo - 1, q), sh.lcp(lo, q))
        return i + index.codec.matched(q, m)


def find_spans(index: Searchable, text: str, *, min_words: int, max_docs: int = 5,
               scan_cap: int = 10_000, cap_words: int = DEFAULT_CAP_WORDS) -> list[Span]:
    """Every maximal span of ``text`` of at least ``min_words`` words found in ``index``, in
    order of ``word_start`` (see the module docstring); ``docs`` sorted by
    ``(doc_ix, word_start)``, ``n_docs_exact`` when all ``count`` occurrences were read
    (``count <= scan_cap``)."""
    if min_words < 1:
        raise ValueError(f"min_words must be >= 1, got {min_words}")
    if max_docs < 0 or scan_cap < 1 or cap_words < 1:
        raise ValueError(f"need max_docs >= 0, scan_cap >= 1 and cap_words >= 1, got "
                         f"{max_docs}, {scan_cap}, {cap_words}")
    toks = index.tokenize(text)
    t = toks.tokens
    n = len(t)
    if n < min_words:
        return []
    buf, pos = index.codec.layout(toks)
    cap = [cap_words]
    spans: list[Span] = []
    prev = 0
    for i in range(n - min_words + 1):
        if prev == n:
            break  # every later j(i) is n too: nothing maximal starts after i
        j = max(_reach(index, buf, pos, i, cap), i)
        if j > prev and j - i >= min_words:
            spans.append(_span(index, toks, buf, pos, i, j, max_docs, scan_cap))
        prev = max(prev, j)
    return spans


def _span(index: Searchable, toks: Tokens, buf: bytes, pos: list[int], i: int, j: int,
          max_docs: int, scan_cap: int) -> Span:
    q = index.codec.slice(buf, pos, i, j)
    segs = index.segments(q)
    count = sum(hi - lo for lo, hi in segs)
    if count < 1:
        raise SpanIndexError(f"{index.path}: the span {q[:80]!r} was reached but not found "
                             "(an inconsistent index)")
    doc_ix, gptr = index.hits(segs, scan_cap)
    # first occurrence read in each document (hits are sorted by document, then position)
    first = np.flatnonzero(np.r_[True, doc_ix[1:] != doc_ix[:-1]])
    hits = tuple(index.doc_hit(int(doc_ix[k]), index.word_position(int(doc_ix[k]),
                                                                   int(gptr[k])))
                 for k in first[:max_docs])
    return Span(word_start=i, word_end=j, char_start=toks.starts[i],
                char_end=toks.ends[j - 1], text=index.codec.span_text(toks, i, j), count=count,
                n_docs=len(first), n_docs_exact=count <= scan_cap, docs=hits)
