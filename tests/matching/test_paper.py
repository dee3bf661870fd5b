"""Tests of paper mode (the MSR authors' counting) with hand-checked numbers."""

from __future__ import annotations

import re

import numpy as np

from copyprobe.matching.paper import PAPER_KS, PaperMatch, normalize_paper, paper_fk, paper_match


def authors_reference(reference: str, generation: str, document: str) -> PaperMatch:
    """A direct transcription of the authors' O(mn) script, used as the oracle."""
    m, n = len(reference), len(generation)
    dp = [[0] * (n + 1) for _ in range(m + 1)]
    max_length = end_pos = 0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if reference[i - 1] == generation[j - 1]:
                dp[i][j] = dp[i - 1][j - 1] + 1
                if dp[i][j] > max_length:
                    max_length = dp[i][j]
                    end_pos = i
    s = reference[end_pos - max_length : end_pos]

    def norm(x: str) -> str:
        x = x.lower()
        x = re.sub(r"[^a-z\s]", "", x)
        return re.sub(r"\s+", " ", x).strip()

    unique = norm(s) in norm(document) and norm(document).count(norm(s)) == 1
    return PaperMatch(lcs=s, lcs_words=len(s.split()), unique=unique)


def test_normalize_paper() -> None:
    assert normalize_paper("Hello,  World!\n It's 42 o'clock.") == "hello world its oclock"
    assert normalize_paper("Ça va très bien") == "a va trs bien"
    assert normalize_paper("  123 !!  ") == ""
    assert PAPER_KS == (5, 6, 7, 8, 9, 10, 11, 12)


def test_normalize_paper_matches_literal_regexes() -> None:
    rng = np.random.default_rng(7)
    alphabet = list("aZ9 \t\n\r\u00a0\u2003.é")
    for _ in range(500):
        x = "".join(rng.choice(alphabet, size=int(rng.integers(0, 25))))
        literal = re.sub(r"\s+", " ", re.sub(r"[^a-z\s]", "", x.lower())).strip()
        assert normalize_paper(x) == literal, repr(x)


def test_basic_case_sensitive_and_strict_threshold() -> None:
    reference = "The quick brown fox jumps over the lazy dog"
    generation = "the quick brown fox jumps over the lazy cat"
    m = paper_match(reference, generation, "Intro text. " + reference)
    # "The" vs "the" differ in case, so the match starts at "he".
    assert m.lcs == "he quick brown fox jumps over the lazy "
    assert m.lcs_words == 8
    assert m.unique
    assert m.counts_at(7)
    assert not m.counts_at(8)  # strictly greater than k


def test_not_unique_when_passage_repeats_in_document() -> None:
    reference = "The quick brown fox jumps over the lazy dog"
    m = paper_match(reference, reference, reference + " and again: " + reference)
    assert m.lcs == reference
    assert m.lcs_words == 9
    assert not m.unique
    assert not m.counts_at(5)


def test_str_count_non_overlapping_quirk() -> None:
    # norm(s) = "ab ab" occurs twice in "ab ab ab" when overlaps count, once by str.count.
    m = paper_match("ab ab", "ab ab", "ab ab ab")
    assert m.lcs == "ab ab"
    assert len(re.findall(r"(?=ab ab)", "ab ab ab")) == 2
    assert m.unique
    assert m.lcs_words == 2


def test_empty_normalised_lcs_quirk() -> None:
    # The LCS "123 " normalises to "", which is "in" everything; "".count gives len + 1.
    m = paper_match("123 456", "123 999", "Chapter 1. 123 456")
    assert m.lcs == "123 "
    assert m.lcs_words == 1
    assert not m.unique  # "chapter".count("") == 8
    m2 = paper_match("123 456", "123 999", "42")
    assert m2.unique  # "".count("") == 1
    assert m2.counts_at(0) and not m2.counts_at(1)


def test_empty_generation() -> None:
    m = paper_match("Some reference text", "", "Some reference text")
    assert m == PaperMatch(lcs="", lcs_words=0, unique=False)


def test_punctuation_and_slice_of_reference() -> None:
    m = paper_match("Hello, world! Again.", "Hello world! Again.", "Hello, world! Again.")
    assert m.lcs == " world! Again."
    assert m.lcs_words == 2
    assert m.unique
    # Tie between "ABC" (reference start 0) and "def" (generation start 1): the reference
    # decides, so "ABC" wins.
    assert paper_match("ABCdef", "xdefABC", "ABCdef").lcs == "ABC"


def test_generation_longer_than_reference_and_unicode() -> None:
    reference = "Ça va très bien, merci"
    generation = "Oh! ça va très bien " * 5
    m = paper_match(reference, generation, "Bonjour. " + reference)
    assert m.lcs == "a va très bien"
    assert m.lcs_words == 4
    assert m.unique  # "a va trs bien" occurs once in "bonjour a va trs bien merci"


def test_paper_fk_hand_counts() -> None:
    matches = [
        PaperMatch("x", 6, True),
        PaperMatch("x", 13, True),
        PaperMatch("x", 20, False),
        PaperMatch("x", 5, True),
    ]
    expected = {5: 2, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1, 11: 1, 12: 1}
    assert paper_fk(matches) == expected
    assert paper_fk(iter(matches)) == expected  # one-shot iterables work
    assert paper_fk(matches, ks=[0, 13]) == {0: 3, 13: 0}
    assert paper_fk([]) == dict.fromkeys(PAPER_KS, 0)


def test_property_matches_authors_script() -> None:
    rng = np.random.default_rng(2024)
    alphabet = list("ab AB.,\n")
    for _ in range(250):
        ref = "".join(rng.choice(alphabet, size=int(rng.integers(0, 30))))
        gen = "".join(rng.choice(alphabet, size=int(rng.integers(0, 30))))
        doc = "".join(rng.choice(alphabet, size=int(rng.integers(0, 20)))) + ref
        assert paper_match(ref, gen, doc) == authors_reference(ref, gen, doc), (ref, gen, doc)
