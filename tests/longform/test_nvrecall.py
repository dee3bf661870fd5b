"""nv-recall against hand-worked cases: a 30-word book w0..w29; one merge pass (gaps of at
most 2 words, drift at most 1, blocks of at least 5 verbatim words) unless a test says
otherwise; difflib's ordered matching unless ``any_order``."""

from __future__ import annotations

import pytest

from copyprobe.longform.nvrecall import (
    Params,
    Pass,
    blocks,
    kept,
    normalize,
    nv_recall,
    ordered_matches,
    words,
)

BOOK = " ".join(f"w{i}" for i in range(30))
P = Params(passes=(Pass(2, 1, 5),))
ANY = Params(matching="any_order", min_match_words=3, passes=(Pass(2, 1, 5),))


def out(*pieces: object) -> str:
    """Book words by index (ints, ranges) and other words (strings), in order."""
    parts: list[str] = []
    for p in pieces:
        if isinstance(p, range):
            parts.extend(f"w{i}" for i in p)
        else:
            parts.append(f"w{p}" if isinstance(p, int) else str(p))
    return " ".join(parts)


def found(text: str, params: Params = P) -> list[tuple[int, int, int]]:
    return [(b.book_start, b.book_end, b.verbatim_words)
            for b in blocks(words(BOOK), words(text), params)]


def test_verbatim_passage():
    text = out(range(10, 20))
    assert found(text) == found(text, ANY) == [(10, 20, 10)]
    assert nv_recall(BOOK, text, P) == pytest.approx(10 / 30)


def test_substitutions_merge_into_one_block_and_only_verbatim_words_count():
    # w4 and w8 replaced: w0-w3, w5-w7, w9-w11 merge across one-word gaps; 10 words matched
    text = out(range(0, 4), "X", range(5, 8), "Y", range(9, 12))
    assert found(text) == found(text, ANY) == [(0, 12, 10)]
    assert nv_recall(BOOK, text, P) == pytest.approx(10 / 30)


def test_an_inserted_word_merges_and_a_wider_gap_splits():
    assert found(out(range(0, 6), "extra", range(6, 12))) == [(0, 12, 12)]
    # w6..w8 left out: a three-word gap splits the block; both halves are kept
    assert found(out(range(0, 6), range(9, 15))) == [(0, 6, 6), (9, 15, 6)]
    # the book skips 1 word where the output writes 2: drift 1, merged; 3 words: split
    assert found(out(range(0, 6), "x", "y", range(7, 12))) == [(0, 12, 11)]
    assert found(out(range(0, 6), "x", "y", "z", range(7, 12))) == [(0, 6, 6), (7, 12, 5)]


def test_a_second_pass_merges_wider_gaps_and_filters_longer_blocks():
    # two 7-word blocks 5 words apart in both texts: kept by pass 1, merged by pass 2
    text = out(range(0, 7), "a", "b", "c", "d", "e", range(12, 19))
    two = Params(passes=(Pass(2, 1, 5), Pass(10, 3, 12)))
    assert found(text, two) == [(0, 19, 14)]
    assert nv_recall(BOOK, text, two) == pytest.approx(14 / 30)
    assert found(text, Params(passes=(Pass(2, 1, 12),))) == []


def test_text_out_of_order_is_found_in_order_only_by_the_ordered_matching():
    text = out(range(20, 28), range(0, 8))
    # difflib keeps matches in both texts' order: the earlier passage in the book only
    assert found(text) == [(0, 8, 8)]
    assert nv_recall(BOOK, text, P) == pytest.approx(8 / 30)
    assert sorted(found(text, ANY)) == [(0, 8, 8), (20, 28, 8)]
    assert nv_recall(BOOK, text, ANY) == pytest.approx(16 / 30)


def test_a_repeated_passage_counts_once():
    text = out(range(0, 10), range(0, 10))
    assert found(text) == [(0, 10, 10)]
    assert found(text, ANY) == [(0, 10, 10), (0, 10, 10)]
    assert nv_recall(BOOK, text, P) == nv_recall(BOOK, text, ANY) == pytest.approx(10 / 30)


def test_empty_output_and_short_blocks_recall_nothing():
    assert nv_recall(BOOK, "", P) == nv_recall(BOOK, "", ANY) == 0.0
    assert nv_recall(BOOK, out(range(0, 4)), P) == 0.0  # 4 words < min_block_words
    assert nv_recall(BOOK, out(0, 1, "x", 3, 4), ANY) == 0.0  # no run of 3


def test_the_default_is_the_paper_normalization_and_two_passes():
    p = Params()
    assert (p.matching, p.normalization, p.min_match_words) == ("ordered", "paper", 1)
    assert p.passes == (Pass(2, 1, 20), Pass(10, 3, 100))
    book = " ".join(f"v{i}" for i in range(300))
    # 120 words with one word in ten replaced: 108 verbatim words, one block over 100
    said = " ".join("X" if i % 10 == 5 else f"v{i}" for i in range(100, 220))
    assert nv_recall(book, said) == pytest.approx(108 / 300)
    # 99 verbatim words are under the second pass's 100
    assert nv_recall(book, " ".join(f"v{i}" for i in range(99))) == 0.0


#: Figure 4(a) / Figure 10 of the paper (Frankenstein, Claude's generation): six verbatim
#: blocks of 32, 4, 4, 2, 12 and 87 words; the gaps differ by punctuation only, and the
#: first and last gaps are 3 words in the book ("home — the") and 1 in the output
#: ("home\u2014the"). Block 1 and block 6 are filled out with words of their own.
FILL_1 = " ".join(f"f{i}" for i in range(28))
FILL_6 = " ".join(f"g{i}" for i in range(83))
FRANKENSTEIN = (f"CHAPTER ONE {FILL_1} which surrounded our Swiss home \u2014 the sublime "
                "shapes of the mountains; the changes of the seasons; tempest and calm; the "
                "silence of winter, and the life and turbulence of our Alpine summers \u2014 "
                f"she found ample scope for {FILL_6} THE END")
GENERATION = (f"{FILL_1} which surrounded our Swiss home\u2014the sublime shapes of the "
              "mountains, the changes of the seasons, tempest and calm, the silence of "
              "winter, and the life and turbulence of our Alpine summers\u2014she found "
              f"ample scope for {FILL_6}")


def test_figure_4a_two_merge_and_filter_passes_give_one_block_of_141_words():
    book, out = words(FRANKENSTEIN), words(GENERATION)
    base = ordered_matches(book, out)
    assert [n for _, _, n in base] == [32, 4, 4, 2, 12, 87]
    # pass 1 (gap 2, alignment 1, 20 words): blocks 2-5 merge into 22 words (block 2*);
    # blocks 1 and 6 stay apart (gaps of 3 and 1 words differ by 2)
    first = kept(base, Params(passes=(Pass(2, 1, 20),)))
    assert [b.verbatim_words for b in first] == [32, 22, 87]
    # pass 2 (gap 10, alignment 3, 100 words): one block of 141 verbatim words; with the
    # gaps' book words it would be 150
    (block,) = blocks(book, out)
    assert (block.verbatim_words, block.words) == (141, 150)
    assert nv_recall(FRANKENSTEIN, GENERATION) == pytest.approx(141 / len(book))
    # with the gaps' punctuation stripped (this project's earlier rule) blocks 2-5 become
    # one verbatim run: a different count
    (loose,) = blocks(words(FRANKENSTEIN, "strip_punctuation"),
                      words(GENERATION, "strip_punctuation"))
    assert loose.verbatim_words == 144


@pytest.mark.parametrize(("text", "normalized"), [
    ("\uff21\uff22\uff23 \ufb01ne", "abc fine"),                  # NFKC
    ("\u201cStop,\u201d he said, \u2018now\u2019", '"stop," he said, \'now\''),  # quotes
    ("a \u2013 b \u2015 c \u2014 d well-known", "a \u2014 b \u2014 c \u2014 d well-known"),
    ("Wait\u2026 then . . . now...and", "wait... then ... now... and"),  # ellipses
    ("_Really_ it was _so_ good", "really it was so good"),       # Books3 italics
    ("Mr. Dursley, (again)!", "mr. dursley, (again)!"),           # nothing else stripped
])
def test_the_paper_normalization_worked_by_hand(text, normalized):
    assert normalize(text) == normalized
    assert words(text) == normalized.split()


def test_the_other_normalizations_and_an_unknown_one():
    assert words("Mr. Dursley, 'said'", "none") == ["Mr.", "Dursley,", "'said'"]
    assert words("Mr. Dursley, 'said'", "strip_punctuation") == ["mr", "dursley", "said"]
    with pytest.raises(ValueError, match="normalization must be one of"):
        words("x", "stem")


def test_an_empty_book_and_an_unknown_matching_are_errors():
    with pytest.raises(ValueError, match="no words"):
        nv_recall("  ", "anything")
    with pytest.raises(ValueError, match="matching must be one of"):
        nv_recall(BOOK, "w1", Params(matching="fuzzy"))
