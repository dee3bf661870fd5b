"""f_k in one place: paper mode (score > k) and word mode (longest >= k)."""

import pytest

from copyprobe.matching import (
    PaperMatch,
    paper_fk,
    paper_fk_counts,
    paper_score,
    word_fk_counts,
)


def test_paper_score_folds_uniqueness_into_the_word_count() -> None:
    assert paper_score(9, True) == 9
    assert paper_score(9, False) == 0
    assert PaperMatch("x", 7, True).score == 7 and PaperMatch("x", 7, False).score == 0


def test_paper_mode_is_strictly_greater_and_word_mode_at_least() -> None:
    scores = [9, 6, 5, 0]
    assert paper_fk_counts(scores, range(5, 10)) == [2, 1, 1, 1, 0]
    assert word_fk_counts(scores, range(5, 10)) == [3, 2, 1, 1, 1]
    assert paper_fk_counts([], [5, 6]) == [0, 0] and word_fk_counts([], [5]) == [0]


def test_a_non_unique_match_never_counts_even_at_k_0() -> None:
    matches = [PaperMatch("x", 20, False), PaperMatch("x", 1, True)]
    assert paper_fk(matches, ks=[0, 1]) == {0: 1, 1: 0}
    with pytest.raises(ValueError, match=r"k must be >= 0, got \[-1\]"):
        paper_fk_counts([3], [-1])


def test_authors_gpt35_wikipedia_vector_from_scores() -> None:
    # Scores chosen so that f_k is the MSR authors' published GPT-3.5 D_pre vector
    # (153, 124, 108, 97, 87, 80, 74, 69 for k = 5..12): f_k - f_(k+1) documents have score
    # k + 1, the 69 of f_12 score 13, and 47 documents (of 200) score 0.
    f = [153, 124, 108, 97, 87, 80, 74, 69]
    scores = [13] * 69 + [0] * 47
    for k, (a, b) in enumerate(zip(f, f[1:]), start=5):
        scores += [k + 1] * (a - b)
    assert paper_fk_counts(scores, range(5, 13)) == f
    assert len(scores) == 200
