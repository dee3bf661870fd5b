"""nv-recall: how much of a book an output reproduces near-verbatim, as word positions.

Verbatim runs of at least ``min_match_words`` words are found greedily along the output (at
each place the longest run anywhere in the book, so text out of the book's order is found),
runs that continue each other across a small gap are merged into near-verbatim blocks, blocks
shorter than ``min_block_words`` are dropped, and nv-recall is the share of the book's words
inside the blocks kept (a passage written twice counts once). docs/longform.md gives the
definition, its parameters and where they come from.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

_WORD = re.compile(r"\S+")
_EDGE = re.compile(r"^\W+|\W+$")


@dataclass(frozen=True)
class Params:
    """The definition's parameters (the ``longform.nv_recall`` config block)."""

    #: shortest verbatim run that seeds a block (words)
    min_match_words: int = 5
    #: merge two runs when each text skips at most this many words between them
    max_gap_words: int = 2
    #: ... and the two skips differ by at most this many words (alignment drift)
    max_drift_words: int = 1
    #: keep a merged block of at least this many book words
    min_block_words: int = 100


@dataclass(frozen=True)
class Block:
    """A near-verbatim block: book words [book_start, book_end), output words
    [out_start, out_end), of which ``verbatim_words`` matched exactly."""

    book_start: int
    book_end: int
    out_start: int
    out_end: int
    verbatim_words: int

    @property
    def words(self) -> int:
        return self.book_end - self.book_start


def words(text: str) -> list[str]:
    """The words compared: whitespace-separated, lower-cased, outer punctuation stripped
    (so a changed quote mark or a capital does not break a run)."""
    out = []
    for raw in _WORD.findall(text or ""):
        out.append(_EDGE.sub("", raw.lower()) or raw)  # punctuation alone stays as it is
    return out


def verbatim_runs(book: list[str], out: list[str], min_words: int) -> list[tuple[int, int, int]]:
    """(book_start, out_start, length) of the verbatim runs, greedy along the output: at each
    output word the longest run starting there anywhere in the book (the earliest on ties),
    then on after it; nothing shorter than ``min_words``."""
    if min_words < 1:
        raise ValueError("min_match_words must be at least 1")
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i in range(len(book) - min_words + 1):
        index[tuple(book[i:i + min_words])].append(i)
    runs = []
    j = 0
    while j <= len(out) - min_words:
        best, best_len = -1, 0
        for i in index.get(tuple(out[j:j + min_words]), ()):
            n = min_words
            while i + n < len(book) and j + n < len(out) and book[i + n] == out[j + n]:
                n += 1
            if n > best_len:
                best, best_len = i, n
        if best_len:
            runs.append((best, j, best_len))
            j += best_len
        else:
            j += 1
    return runs


def blocks(book: list[str], out: list[str], params: Params = Params()) -> list[Block]:
    """The near-verbatim blocks of ``out`` in ``book`` that are kept (in output order)."""
    merged: list[Block] = []
    for i, j, n in verbatim_runs(book, out, params.min_match_words):
        if merged:
            last = merged[-1]
            gap_book, gap_out = i - last.book_end, j - last.out_end
            if (0 <= gap_book <= params.max_gap_words and 0 <= gap_out <= params.max_gap_words
                    and abs(gap_book - gap_out) <= params.max_drift_words):
                merged[-1] = Block(last.book_start, i + n, last.out_start, j + n,
                                   last.verbatim_words + n)
                continue
        merged.append(Block(i, i + n, j, j + n, n))
    return [b for b in merged if b.words >= params.min_block_words]


def covered(found: list[Block]) -> int:
    """Book words inside at least one block."""
    total, end = 0, -1
    for b in sorted(found, key=lambda b: b.book_start):
        start = max(b.book_start, end)
        if b.book_end > start:
            total += b.book_end - start
            end = b.book_end
    return total


def nv_recall(book_text: str, output_text: str, params: Params = Params()) -> float:
    """The share of the book's words that ``output_text`` reproduces near-verbatim."""
    book = words(book_text)
    if not book:
        raise ValueError("the book has no words")
    return covered(blocks(book, words(output_text), params)) / len(book)
