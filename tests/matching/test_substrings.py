"""Tests of copyprobe.matching.substrings against hand-checked cases and naive O(mn) code."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.matching import substrings
from copyprobe.matching.substrings import (
    code_points,
    count_shared_kgrams,
    count_shared_kgrams_range,
    longest_common_run,
    longest_common_substring_chars,
    maximal_matches,
)

# --------------------------------------------------------------------------- naive references


def naive_lcs(a, b) -> tuple[int, int, int]:
    """The MSR authors' O(mn) DP, verbatim in structure: (start_a, start_b, length).

    ``for i in 1..len(a): for j in 1..len(b): if a[i-1]==b[j-1]: dp=...; if dp>max_length``
    keeps the first cell in row-major order, i.e. the earliest end in ``a`` and, for that
    row, the earliest end in ``b``.
    """
    m, n = len(a), len(b)
    dp = [[0] * (n + 1) for _ in range(m + 1)]
    max_length = end_a = end_b = 0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if a[i - 1] == b[j - 1]:
                dp[i][j] = dp[i - 1][j - 1] + 1
                if dp[i][j] > max_length:
                    max_length = dp[i][j]
                    end_a, end_b = i, j
    if max_length == 0:
        return (0, 0, 0)
    return (end_a - max_length, end_b - max_length, max_length)


def naive_maximal(a, b, min_len: int) -> list[tuple[int, int, int]]:
    out = []
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] != b[j] or (i > 0 and j > 0 and a[i - 1] == b[j - 1]):
                continue
            length = 0
            while i + length < len(a) and j + length < len(b) and a[i + length] == b[j + length]:
                length += 1
            if length >= min_len:
                out.append((i, j, length))
    return sorted(out)


def naive_kgrams(gen, ref, k: int) -> int:
    ref_set = {tuple(ref[i : i + k]) for i in range(len(ref) - k + 1)}
    return len({tuple(gen[i : i + k]) for i in range(len(gen) - k + 1)} & ref_set)


def random_cases(seed: int, count: int, max_len: int = 30):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        alphabet = int(rng.integers(1, 5))
        a = rng.integers(0, alphabet, size=int(rng.integers(0, max_len + 1)))
        b = rng.integers(0, alphabet, size=int(rng.integers(0, max_len + 1)))
        yield a, b


# --------------------------------------------------------------------------- hand-checked


def test_chars_basic_and_case_sensitive() -> None:
    # "ello" is common; "Hello" vs "hello" differ in case.
    assert longest_common_substring_chars("Hello", "hello") == (1, 4)
    assert longest_common_substring_chars("hello world", "yellow word") == (1, 4)
    assert longest_common_substring_chars("ABC", "abc") == (0, 0)


def test_chars_empty_and_disjoint() -> None:
    assert longest_common_substring_chars("", "abc") == (0, 0)
    assert longest_common_substring_chars("abc", "") == (0, 0)
    assert longest_common_substring_chars("", "") == (0, 0)
    assert longest_common_substring_chars("abc", "xyz") == (0, 0)


def test_chars_tie_earliest_end_in_first_argument() -> None:
    # Two longest common substrings of length 2: "ab" and "cd".
    assert longest_common_substring_chars("abXcd", "cdYab") == (0, 2)  # "ab"
    assert longest_common_substring_chars("cdYab", "abXcd") == (0, 2)  # "cd"
    # Repeated substring in a: the first occurrence wins.
    assert longest_common_substring_chars("xyzQxyz", "Pxyz") == (0, 3)


def test_chars_unicode_astral_and_punctuation() -> None:
    a = "naïve café 😀x"
    b = "un café 😀y"
    start, length = longest_common_substring_chars(a, b)
    assert (start, length) == (5, 7)
    assert a[start : start + length] == " café 😀"
    assert longest_common_substring_chars("a, b!", "a b!") == (2, 3)  # " b!"
    assert code_points("a😀").tolist() == [97, 0x1F600]
    assert code_points("\ud800").tolist() == [0xD800]  # lone surrogate survives


def test_chars_generation_longer_than_reference() -> None:
    ref = "alpha beta gamma"
    gen = "zzz alpha beta gamma delta " * 3
    assert longest_common_substring_chars(ref, gen) == (0, len(ref))


def test_run_tie_break_in_b() -> None:
    assert longest_common_run(np.array([1, 2]), np.array([1, 2, 0, 1, 2])) == (0, 0, 2)
    assert longest_common_run(np.array([5, 1, 2]), np.array([9, 1, 2, 1, 2])) == (1, 1, 2)
    assert longest_common_run(np.array([], dtype=int), np.array([1])) == (0, 0, 0)
    assert longest_common_run(np.array([3]), np.array([4])) == (0, 0, 0)


def test_run_input_validation() -> None:
    with pytest.raises(TypeError):
        longest_common_run(np.array([1.0, 2.0]), np.array([1, 2]))
    with pytest.raises(ValueError):
        longest_common_run(np.zeros((2, 2), dtype=int), np.array([1, 2]))


def test_run_mixed_dtypes_and_large_values() -> None:
    # Values congruent modulo the hash primes must still be told apart (exact verification).
    p = 2_147_483_647
    a = np.array([1, 2, 3, 4], dtype=np.int64)
    b = np.array([1 + p, 2, 3, 4], dtype=np.int64)
    assert longest_common_run(a, b) == (1, 1, 3)
    assert longest_common_run(a.astype(np.uint32), a.astype(np.int64)) == (0, 0, 4)
    assert longest_common_run(np.array([-5, -6, 7]), np.array([0, -5, -6])) == (0, 1, 2)


def test_maximal_hand_checked() -> None:
    a = np.array([1, 2, 3, 4, 1, 2, 3])
    b = np.array([0, 1, 2, 3, 9, 1, 2, 3, 4])
    assert maximal_matches(a, b, 2) == [(0, 1, 3), (0, 5, 4), (4, 1, 3), (4, 5, 3)]
    assert maximal_matches(a, b, 4) == [(0, 5, 4)]
    assert maximal_matches(a, b, 5) == []
    assert maximal_matches(a, np.array([], dtype=int), 1) == []
    with pytest.raises(ValueError):
        maximal_matches(a, b, 0)


def test_maximal_same_word_repeated_1000_times() -> None:
    a = np.full(1000, 7)
    matches = maximal_matches(a, a, 5)
    # One maximal match per diagonal d = j - i with overlap 1000 - |d| >= 5.
    assert len(matches) == 2 * 995 + 1
    assert matches[0] == (0, 0, 1000)
    assert matches[1] == (0, 1, 999)
    assert matches[-1] == (995, 0, 5)
    assert sum(length for _, _, length in matches) == 1000 + 2 * sum(range(5, 1000))


def test_maximal_pair_cap() -> None:
    a = np.zeros(3000, dtype=np.int64)
    with pytest.raises(ValueError, match="max_pairs"):
        maximal_matches(a, a, 5)  # ~8.9 million pairs > default 2 million
    with pytest.raises(ValueError, match="max_pairs=10"):
        maximal_matches(np.full(10, 1), np.full(10, 1), 2, max_pairs=10)


def test_kgrams_hand_checked() -> None:
    gen = np.array([1, 2, 1, 2, 1, 2])
    ref = np.array([2, 1, 2])
    assert count_shared_kgrams(gen, ref, 1) == 2
    assert count_shared_kgrams(gen, ref, 2) == 2  # (1,2) and (2,1), counted once each
    assert count_shared_kgrams(gen, ref, 3) == 1  # only (2,1,2)
    assert count_shared_kgrams(gen, ref, 4) == 0  # ref shorter than k
    assert count_shared_kgrams(np.array([], dtype=int), ref, 1) == 0
    with pytest.raises(ValueError):
        count_shared_kgrams(gen, ref, 0)


# --------------------------------------------------------------------------- properties


def test_property_lcs_matches_naive_dp() -> None:
    for a, b in random_cases(seed=1234, count=400):
        assert longest_common_run(a, b) == naive_lcs(a.tolist(), b.tolist()), (a, b)


def test_property_lcs_longer_inputs_matches_naive_dp() -> None:
    # Longer strings over 1-2 symbols: answers well above the internal seed length of 8.
    for a, b in random_cases(seed=777, count=60, max_len=90):
        a, b = a % 2, b % 2
        assert longest_common_run(a, b) == naive_lcs(a.tolist(), b.tolist()), (a, b)


def test_lcs_repetitive_input_uses_binary_search_fallback() -> None:
    # 6 million equal 8-gram pairs exceed the internal cap; the answer must not change.
    a = np.zeros(3000, dtype=np.int64)
    b = np.concatenate([[1], np.zeros(2000, dtype=np.int64)])
    assert longest_common_run(a, b) == (0, 1, 2000)
    assert longest_common_run(np.array([3, 1, 2], dtype=np.int8), np.array([1, 2])) == (1, 0, 2)


def test_property_chars_matches_naive_dp() -> None:
    rng = np.random.default_rng(99)
    alphabets = ["ab", "aB ", "xyz.", "é😀a", "a"]
    for _ in range(300):
        alpha = alphabets[int(rng.integers(len(alphabets)))]
        s = "".join(rng.choice(list(alpha), size=int(rng.integers(0, 25))))
        t = "".join(rng.choice(list(alpha), size=int(rng.integers(0, 25))))
        start_a, _, length = naive_lcs(s, t)
        assert longest_common_substring_chars(s, t) == (start_a, length), (s, t)


def test_property_maximal_matches_naive() -> None:
    for n, (a, b) in enumerate(random_cases(seed=5678, count=300)):
        min_len = 1 + n % 4
        assert maximal_matches(a, b, min_len) == naive_maximal(a.tolist(), b.tolist(), min_len)


def test_property_kgrams_match_naive() -> None:
    for n, (a, b) in enumerate(random_cases(seed=91011, count=300)):
        k = 1 + n % 5
        assert count_shared_kgrams(a, b, k) == naive_kgrams(a.tolist(), b.tolist(), k)


def test_property_kgram_range_matches_naive() -> None:
    for n, (a, b) in enumerate(random_cases(seed=3141, count=300, max_len=40)):
        k_min = 1 + n % 4
        k_max = k_min + n % 7
        expected = {k: naive_kgrams(a.tolist(), b.tolist(), k) for k in range(k_min, k_max + 1)}
        assert count_shared_kgrams_range(a, b, k_min, k_max) == expected, (a, b, k_min)
        # The per-k hashing fallback (pair cap exceeded) gives the same numbers.
        assert count_shared_kgrams_range(a, b, k_min, k_max, max_pairs=0) == expected


def test_kgram_range_hand_checked() -> None:
    gen = np.array([1, 2, 1, 2, 1, 2])
    ref = np.array([2, 1, 2])
    assert count_shared_kgrams_range(gen, ref, 1, 4) == {1: 2, 2: 2, 3: 1, 4: 0}
    assert count_shared_kgrams_range(np.full(5, 7), np.full(3, 7), 2, 4) == {2: 1, 3: 1, 4: 0}
    with pytest.raises(ValueError):
        count_shared_kgrams_range(gen, ref, 3, 2)


def test_hash_collisions_never_change_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a deliberately terrible hash (5 buckets) every answer must still be exact."""
    original = substrings._Rolling.keys
    monkeypatch.setattr(substrings._Rolling, "keys", lambda self, length: original(self, length) % 5)
    for n, (a, b) in enumerate(random_cases(seed=4242, count=200, max_len=20)):
        al, bl = a.tolist(), b.tolist()
        k = 1 + n % 4
        assert longest_common_run(a, b) == naive_lcs(al, bl)
        assert maximal_matches(a, b, k) == naive_maximal(al, bl, k)
        assert count_shared_kgrams(a, b, k) == naive_kgrams(al, bl, k)
        assert count_shared_kgrams_range(a, b, k, k + 2) == {
            kk: naive_kgrams(al, bl, kk) for kk in range(k, k + 3)
        }
