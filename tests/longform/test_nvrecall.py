"""nv-recall against hand-worked cases: a 30-word book w0..w29, runs of at least 3 words,
gaps of at most 2 words with a drift of at most 1, blocks of at least 5 words."""

from __future__ import annotations

import pytest

from copyprobe.longform.nvrecall import Params, blocks, nv_recall, words

BOOK = " ".join(f"w{i}" for i in range(30))
P = Params(min_match_words=3, max_gap_words=2, max_drift_words=1, min_block_words=5)


def out(*pieces: object) -> str:
    """Book words by index (ints, ranges) and other words (strings), in order."""
    parts: list[str] = []
    for p in pieces:
        if isinstance(p, range):
            parts.extend(f"w{i}" for i in p)
        else:
            parts.append(f"w{p}" if isinstance(p, int) else str(p))
    return " ".join(parts)


def found(text: str) -> list[tuple[int, int, int]]:
    return [(b.book_start, b.book_end, b.verbatim_words)
            for b in blocks(words(BOOK), words(text), P)]


def test_verbatim_passage():
    text = out(range(10, 20))
    assert found(text) == [(10, 20, 10)]
    assert nv_recall(BOOK, text, P) == pytest.approx(10 / 30)


def test_substitutions_within_a_block_are_near_verbatim():
    # w4 and w8 replaced: runs w0-w3, w5-w7, w9-w11 merge across one-word gaps
    text = out(range(0, 4), "X", range(5, 8), "Y", range(9, 12))
    assert found(text) == [(0, 12, 10)]
    assert nv_recall(BOOK, text, P) == pytest.approx(12 / 30)


def test_an_inserted_word_merges_and_a_wider_gap_splits():
    assert found(out(range(0, 6), "extra", range(6, 12))) == [(0, 12, 12)]
    # w6..w8 left out: a three-word gap splits the block; both halves are kept
    assert found(out(range(0, 6), range(9, 15))) == [(0, 6, 6), (9, 15, 6)]
    # the book skips 1 word where the output writes 2: drift 1, merged; 3 words: split
    assert found(out(range(0, 6), "x", "y", range(7, 12))) == [(0, 12, 11)]
    assert found(out(range(0, 6), "x", "y", "z", range(7, 12))) == [(0, 6, 6), (7, 12, 5)]


def test_text_out_of_order_is_found():
    text = out(range(20, 28), range(0, 8))
    assert sorted(found(text)) == [(0, 8, 8), (20, 28, 8)]
    assert nv_recall(BOOK, text, P) == pytest.approx(16 / 30)


def test_a_repeated_passage_counts_once():
    text = out(range(0, 10), range(0, 10))
    assert found(text) == [(0, 10, 10), (0, 10, 10)]
    assert nv_recall(BOOK, text, P) == pytest.approx(10 / 30)


def test_empty_output_and_short_runs_recall_nothing():
    assert nv_recall(BOOK, "", P) == 0.0
    assert nv_recall(BOOK, out(range(0, 4)), P) == 0.0  # 4 words < min_block_words
    assert nv_recall(BOOK, out(0, 1, "x", 3, 4), P) == 0.0  # no run of 3


def test_case_and_outer_punctuation_do_not_break_a_run():
    book = 'Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say'
    said = 'mr and mrs Dursley of number four Privet Drive were proud to say'
    assert nv_recall(book, said, P) == 1.0


def test_an_empty_book_is_an_error():
    with pytest.raises(ValueError, match="no words"):
        nv_recall("  ", "anything")
