"""A brute-force in-memory index: the oracle the suffix-array index is tested against, and a
:class:`~copyprobe.spans.types.SpanLookup` for small protected sets.

Documents are scanned with ``bytes.find`` for every query, so it is exact by construction and
slow (linear in the corpus per query): tests, and corpora of a few megabytes at most."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from copyprobe.spans.encoding import (
    DEFAULT_UNIT,
    check_unit,
    encode_doc,
    encode_query,
    stream_digest,
    tokenize,
    words,
)
from copyprobe.spans.types import CorpusDoc, DocHit, Span, Tokens


def _occurrences(hay: bytes, needle: bytes) -> list[int]:
    """Byte offsets of every (overlapping) occurrence of ``needle`` in ``hay``."""
    out, at = [], hay.find(needle)
    while at != -1:
        out.append(at)
        at = hay.find(needle, at + 1)
    return out


def maximal_runs(n: int, min_len: int, occurs: Callable[[int, int], bool]
                 ) -> Iterator[tuple[int, int]]:
    """Every maximal run ``[i, j)`` of at least ``min_len`` of ``n`` units for which
    ``occurs(i, j)`` (monotone: a sub-run of one that occurs occurs), by brute force: for each
    start the longest run, kept when it reaches further than every earlier one."""
    prev_end = j = 0
    for i in range(n):
        j = max(j, i)
        while j < n and occurs(i, j + 1):
            j += 1
        if j > prev_end and j - i >= min_len:
            yield i, j
        prev_end = max(prev_end, j)


class MemoryIndex:
    """Documents in index order: sorted by ``(source, doc_id)``, as the built index orders
    them; documents with no token are left out (as the build leaves them out)."""

    def __init__(self, docs: Iterable[CorpusDoc], unit: str = DEFAULT_UNIT):
        self._unit = check_unit(unit)
        kept = []
        for d in sorted(docs, key=lambda d: (d.source, d.doc_id)):
            toks = words(d.text, unit)
            if toks:
                kept.append((d, encode_doc(toks)))
        self.docs = [d for d, _ in kept]
        self._bytes = [b for _, b in kept]
        self._digest = stream_digest(unit, ((d.source, d.doc_id, d.title, d.url, b)
                                            for d, b in kept))

    @property
    def unit(self) -> str:
        return self._unit

    @property
    def n_docs(self) -> int:
        return len(self.docs)

    @property
    def digest(self) -> str:
        return self._digest

    def tokenize(self, text: str) -> Tokens:
        return tokenize(text, self._unit)

    def occurrences(self, tokens: Sequence[str]) -> list[tuple[int, int]]:
        """``(doc_ix, word_start)`` of every occurrence, in index order."""
        q = encode_query(tokens)
        if not q:
            return []
        out = []
        for ix, hay in enumerate(self._bytes):
            for at in _occurrences(hay, q):
                out.append((ix, hay[:at + 1].count(b" ") - 1))
        return out

    def count(self, tokens: Sequence[str]) -> int:
        return len(self.occurrences(tokens))

    def find_spans(self, text: str, *, min_words: int, max_docs: int = 5,
                   scan_cap: int = 10_000) -> list[Span]:
        if min_words < 1:
            raise ValueError(f"min_words must be >= 1, got {min_words}")
        toks = self.tokenize(text)
        t = toks.tokens
        spans: list[Span] = []
        for i, j in maximal_runs(len(t), min_words, lambda a, b: bool(self.count(t[a:b]))):
            occ = self.occurrences(t[i:j])
            first: dict[int, int] = {}
            for ix, pos in occ[:scan_cap]:
                first.setdefault(ix, pos)
            hits = tuple(
                DocHit(ix, self.docs[ix].source, self.docs[ix].doc_id,
                       self.docs[ix].title, self.docs[ix].url, pos)
                for ix, pos in sorted(first.items())[:max_docs])
            spans.append(Span(i, j, toks.starts[i], toks.ends[j - 1], " ".join(t[i:j]),
                              len(occ), len(first), len(occ) <= scan_cap, hits))
        return spans
