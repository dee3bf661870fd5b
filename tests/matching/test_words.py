"""Tests of word mode with hand-checked numbers."""

from __future__ import annotations

import pytest

from copyprobe.matching.paper import paper_match
from copyprobe.matching.words import WordMatch, normalize_words, word_fk, word_match


def test_normalize_words() -> None:
    assert normalize_words("Don't STOP") == ["dont", "stop"]
    assert normalize_words("ﬁne ＡＢＣ Straße") == ["fine", "abc", "strasse"]
    assert normalize_words("well-known snake_case, 'quoted'") == [
        "well",
        "known",
        "snake",
        "case",
        "quoted",
    ]
    assert normalize_words("rock’n’roll dogs' x²") == ["rocknroll", "dogs", "x2"]
    assert normalize_words("cafe\u0301 हिन्दी") == ["café", "हिन्दी"]
    assert normalize_words("") == []
    assert normalize_words(" ... !!! ") == []


def test_word_match_hand_checked() -> None:
    reference = "The cat sat on the mat. It was a sunny day, and the cat was happy."
    generation = "A cat sat on the mat; it was a sunny day! The dog barked."
    m = word_match(reference, generation)
    assert m.reference_words == 16
    assert m.generation_words == 14
    assert m.longest == 10
    assert m.longest_text == "cat sat on the mat it was a sunny day"
    assert m.maximal == [(1, 1, 10)]
    assert m.kgram_counts == {5: 6, 6: 5, 7: 4, 8: 3, 9: 2, 10: 1, 11: 0, 12: 0}
    assert m.survives == {k: k <= 10 for k in range(5, 13)}
    assert m.lcp == 0  # "the" vs "a"
    # Levenshtein: a->the (1) + [the dog barked] vs [and the cat was happy] (4) = 5.
    assert m.edit_similarity == pytest.approx(1 - 5 / 16)


def test_word_match_small_k_range() -> None:
    m = word_match("x y z x y z w", "x y z w", k_min=2, k_max=3)
    assert m.longest == 4  # "x y z w" at reference position 3
    assert m.longest_text == "x y z w"
    assert m.maximal == [(0, 0, 3), (3, 0, 4)]
    assert m.kgram_counts == {2: 3, 3: 2}
    assert m.lcp == 3
    with pytest.raises(ValueError):
        word_match("a", "a", k_min=3, k_max=2)


def test_word_longest_tie_takes_earliest_in_reference() -> None:
    m = word_match("a b c q d e f", "d e f z a b c", k_min=2, k_max=4)
    assert m.longest == 3
    assert m.longest_text == "a b c"
    assert m.maximal == [(0, 4, 3), (4, 0, 3)]
    assert m.survives == {2: True, 3: True, 4: False}


def test_generation_longer_than_reference_is_truncated_for_edit_similarity() -> None:
    m = word_match("a b c", "A, b; c! d e f", k_min=1, k_max=3)
    assert m.generation_words == 6
    assert m.edit_similarity == 1.0
    assert m.lcp == 3
    assert m.longest == 3


def test_empty_generation() -> None:
    m = word_match("one two three four five six", "")
    assert m.longest == 0
    assert m.longest_text == ""
    assert m.maximal == []
    assert m.kgram_counts == dict.fromkeys(range(5, 13), 0)
    assert m.survives == dict.fromkeys(range(5, 13), False)
    assert m.lcp == 0
    assert m.edit_similarity == 0.0
    assert m.generation_words == 0


def test_survival_is_at_least_k_while_paper_is_strictly_greater() -> None:
    text = "one two three four five"
    m = word_match(text, text)
    assert m.longest == 5
    assert m.survives[5] and not m.survives[6]
    p = paper_match(text, text, text)
    assert p.lcs_words == 5 and p.unique
    assert not p.counts_at(5) and p.counts_at(4)


def test_repeated_words() -> None:
    m = word_match("la " * 50, "La, " * 30)
    assert m.longest == 30
    assert m.longest_text == " ".join(["la"] * 30)
    # Start (i, 0) for i <= 45 has overlap min(50 - i, 30) >= 5; start (0, j) for
    # 1 <= j <= 25 has overlap 30 - j >= 5.
    assert len(m.maximal) == 46 + 25
    assert m.maximal[0] == (0, 0, 30)
    assert m.kgram_counts[5] == 1
    assert m.lcp == 30
    # Generation shorter than the reference: 20 insertions over max(30, 50) tokens.
    assert m.edit_similarity == pytest.approx(1 - 20 / 50)


def test_max_pairs_passthrough() -> None:
    with pytest.raises(ValueError, match="max_pairs"):
        word_match("w " * 200, "w " * 200, max_pairs=1000)


def _wm(longest: int, counts: dict[int, int]) -> WordMatch:
    return WordMatch(
        longest=longest,
        longest_text="",
        maximal=[],
        kgram_counts=counts,
        survives={},
        lcp=0,
        edit_similarity=0.0,
        reference_words=0,
        generation_words=0,
    )


def test_word_fk() -> None:
    matches = [_wm(5, {5: 3, 6: 0}), _wm(7, {5: 4, 6: 2}), _wm(0, {5: 0, 6: 0})]
    assert word_fk(matches, 5, 6) == {"survival": {5: 2, 6: 1}, "kgrams": {5: 7, 6: 2}}
    assert word_fk(iter(matches), 5, 6)["survival"] == {5: 2, 6: 1}
    with pytest.raises(ValueError, match="k=7"):
        word_fk(matches, 5, 7)
    real = [word_match("a b c d e f", "a b c d e f"), word_match("a b c d e f", "a b c d e x")]
    assert word_fk(real)["survival"] == {5: 2, 6: 1, **dict.fromkeys(range(7, 13), 0)}
    assert word_fk(real)["kgrams"][5] == 2 + 1
