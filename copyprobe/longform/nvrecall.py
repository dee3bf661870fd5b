"""nv-recall (the paper's Section 3.3.1, Algorithm 1): both texts lightly normalized and split
on whitespace, difflib's verbatim matching blocks (copyprobe.longform.ordered), consecutive
blocks merged and short ones filtered in passes; nv-recall is the verbatim-matched words of
the kept blocks over the book's words. docs/longform.md#nv-recall gives the definition and
where each value comes from.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

from copyprobe.longform.ordered import matching_blocks

_WORD = re.compile(r"\S+")
_EDGE = re.compile(r"^\W+|\W+$")
MATCHING = ("ordered", "any_order")
#: paper: the appendix's light normalization; strip_punctuation: lower-cased, punctuation at
#: either end of a word removed (this project's earlier rule); none: whitespace split only
NORMALIZATIONS = ("paper", "strip_punctuation", "none")
# the paper's remapping (Appendix C.3): quotation variants to ASCII, dash variants to one em
# dash; the exact sets are this project's (the paper gives examples)
_REMAP = str.maketrans({**dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb\u301d\u301e", '"'),
                        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2039\u203a", "'"),
                        **dict.fromkeys("\u2012\u2013\u2015", "\u2014"),
                        "\u2026": "..."})
_SPACED_DOTS = re.compile(r"\.(?:[^\S\n]+\.){2,}")
_ELLIPSIS_BEFORE_WORD = re.compile(r"\.\.\.(?=[^\W_])")
_ITALICS = re.compile(r"_([^_]+)_")


@dataclass(frozen=True)
class Pass:
    """One merge-and-filter pass."""

    #: merge two blocks when neither text skips more than this many words between them
    max_gap_words: int
    #: ... and the two skips differ by at most this many words (alignment)
    max_drift_words: int
    #: then keep the blocks with at least this many verbatim-matched words
    min_block_words: int


PAPER_PASSES = (Pass(2, 1, 20), Pass(10, 3, 100))


@dataclass(frozen=True)
class Params:
    """The definition's parameters (the ``longform.nv_recall`` config block)."""

    #: ordered: difflib's greedy matching (blocks in the book's order); any_order: at each
    #: output word the longest run anywhere in the book (finds text written out of order)
    matching: str = "ordered"
    #: how both texts are normalized before they are split into words (NORMALIZATIONS)
    normalization: str = "paper"
    #: shortest verbatim match kept before merging (words)
    min_match_words: int = 1
    passes: tuple[Pass, ...] = PAPER_PASSES

    @classmethod
    def from_config(cls, block: dict) -> Params:
        values = dict(block)
        if "passes" in values:
            values["passes"] = tuple(Pass(**p) for p in values["passes"])
        return cls(**values)


@dataclass(frozen=True)
class Block:
    """A near-verbatim block: book words [book_start, book_end), output words
    [out_start, out_end), of which ``verbatim_words`` matched exactly (in ``runs``:
    (book_start, length) of each verbatim match)."""

    book_start: int
    book_end: int
    out_start: int
    out_end: int
    verbatim_words: int
    runs: tuple[tuple[int, int], ...] = field(default=(), compare=False)

    @property
    def words(self) -> int:
        return self.book_end - self.book_start


def normalize(text: str) -> str:
    """The paper's light normalization (Appendix C.3): NFKC; quotation variants to ASCII,
    dash variants to an em dash, the ellipsis character to three dots; spaced dots collapsed
    to "..." and a space after "..." before a letter or digit; Books3's ``_italics_``
    unmarked; lower-cased. No other punctuation is touched."""
    text = unicodedata.normalize("NFKC", text).translate(_REMAP)
    text = _ELLIPSIS_BEFORE_WORD.sub("... ", _SPACED_DOTS.sub("...", text))
    return _ITALICS.sub(r"\1", text).lower()


def words(text: str, normalization: str = "paper") -> list[str]:
    """The words compared: ``text`` normalized (NORMALIZATIONS) and split on whitespace."""
    if normalization == "paper":
        return _WORD.findall(normalize(text or ""))
    if normalization == "none":
        return _WORD.findall(text or "")
    if normalization != "strip_punctuation":
        raise ValueError(f"normalization must be one of {', '.join(NORMALIZATIONS)} "
                         f"(got {normalization!r})")
    # punctuation alone stays as it is
    return [_EDGE.sub("", raw.lower()) or raw for raw in _WORD.findall(text or "")]


def ordered_matches(book: list[str], out: list[str]) -> list[tuple[int, int, int]]:
    """(book_start, out_start, length) of difflib's matching blocks (no junk heuristic):
    the longest match, then recursively left and right of it, so in both texts' order."""
    return matching_blocks(book, out)


def any_order_matches(book: list[str], out: list[str],
                      min_words: int) -> list[tuple[int, int, int]]:
    """(book_start, out_start, length), greedy along the output: at each output word the
    longest run starting there anywhere in the book (the earliest on ties), then on after it."""
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


def merge(found: list[Block], step: Pass) -> list[Block]:
    """Consecutive blocks merged while both skips are at most ``max_gap_words`` and differ
    by at most ``max_drift_words``; then those under ``min_block_words`` verbatim words
    dropped."""
    merged: list[Block] = []
    for b in found:
        if merged:
            last = merged[-1]
            gap_book, gap_out = b.book_start - last.book_end, b.out_start - last.out_end
            if (0 <= gap_book <= step.max_gap_words and 0 <= gap_out <= step.max_gap_words
                    and abs(gap_book - gap_out) <= step.max_drift_words):
                merged[-1] = Block(last.book_start, b.book_end, last.out_start, b.out_end,
                                   last.verbatim_words + b.verbatim_words,
                                   last.runs + b.runs)
                continue
        merged.append(b)
    return [b for b in merged if b.verbatim_words >= step.min_block_words]


def blocks(book: list[str], out: list[str], params: Params = Params()) -> list[Block]:
    """The near-verbatim blocks of ``out`` in ``book`` that are kept (in output order)."""
    if params.min_match_words < 1:
        raise ValueError("min_match_words must be at least 1")
    if params.matching not in MATCHING:
        raise ValueError(f"matching must be one of {', '.join(MATCHING)} "
                         f"(got {params.matching!r})")
    if not book or not out:
        return []
    if params.matching == "ordered":
        matches = [m for m in ordered_matches(book, out) if m[2] >= params.min_match_words]
    else:
        matches = any_order_matches(book, out, params.min_match_words)
    return kept(matches, params)


def kept(matches: list[tuple[int, int, int]], params: Params = Params()) -> list[Block]:
    """The blocks kept from verbatim matches (book_start, out_start, length) in output
    order: merged and filtered by each of ``params.passes``."""
    found = [Block(i, i + n, j, j + n, n, ((i, n),)) for i, j, n in matches]
    for step in params.passes:
        found = merge(found, step)
    return found


def covered(found: list[Block]) -> int:
    """Book words matched verbatim inside at least one block (each counted once)."""
    total, end = 0, 0
    for start, n in sorted(r for b in found for r in b.runs):
        stop = start + n
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def nv_recall(book_text: str, output_text: str, params: Params = Params()) -> float:
    """The share of the book's words that ``output_text`` reproduces near-verbatim (Eq. 7)."""
    book = words(book_text, params.normalization)
    if not book:
        raise ValueError("the book has no words")
    return covered(blocks(book, words(output_text, params.normalization), params)) / len(book)
