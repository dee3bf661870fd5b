"""Exact common-substring machinery over integer sequences, near-linear and numpy-vectorised.

Everything here works on one-dimensional integer arrays (token ids, Unicode code points).
Strings are handled by mapping them to code points first
(:func:`longest_common_substring_chars`).

Technique
---------
Windows of a fixed length ``L`` are fingerprinted with polynomial rolling hashes computed
for all positions at once in numpy: with ``G[t] = sum_{k<t} x[k] * B**k (mod p)`` the window
``x[i:i+L]`` hashes to ``(G[i+L] - G[i]) * B**-i (mod p)``, so one prefix array per sequence
gives every window hash of every length in O(n) vectorised work.  Two independent hashes
modulo the primes ``2**31 - 1`` and ``2**31 - 19`` (fixed, randomly chosen bases) are packed
into one ``int64`` key; all products stay below ``2**62``.  Prime moduli are used instead of
natural ``uint64`` overflow because hashing modulo ``2**64`` collides systematically on
Thue-Morse-like inputs for *every* base, which would not break correctness here but could
make the verification step slow.

A hash match is only ever a *candidate*: every result is confirmed by comparing the
underlying elements exactly, and the code falls back to an exact (slower) path whenever a
candidate fails.  A hash collision can therefore cost time but never change an answer.

* :func:`longest_common_run` binary-searches the length ``L`` (a common run of length
  ``L`` implies one of every shorter length): O((m + n) log(m + n) log min(m, n)).
* :func:`maximal_matches` hashes all ``min_len``-grams once, pairs equal ones by sorting,
  and merges consecutive pairs on a diagonal ``j - i`` into maximal matches:
  O((m + n) log(m + n) + P) for ``P`` matching pairs (capped by ``max_pairs``).
* :func:`count_shared_kgrams` counts distinct shared k-grams in O((m + n) log(m + n) + k*m).

There is no quadratic dynamic programming anywhere in this module.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "DEFAULT_MAX_PAIRS",
    "code_points",
    "count_shared_kgrams",
    "longest_common_run",
    "longest_common_substring_chars",
    "maximal_matches",
]

#: Default cap on the number of equal-k-gram pairs :func:`maximal_matches` will materialise.
DEFAULT_MAX_PAIRS = 2_000_000

# Two Mersenne-ish primes below 2**31 and fixed, randomly drawn bases (any base in
# [2, p-2] works; fixing them keeps results and timings reproducible).
_P1 = 2_147_483_647  # 2**31 - 1
_P2 = 2_147_483_629  # 2**31 - 19
_B1 = 1_315_423_911
_B2 = 2_026_651_187
_SHIFT = 31

# Elements compared per vectorised verification chunk in maximal_matches.
_VERIFY_CHUNK = 1 << 20

_POWER_CACHE: dict[tuple[int, int], np.ndarray] = {}


def _powers(p: int, base: int, n: int) -> np.ndarray:
    """``base**k mod p`` for ``k < n`` as int64 (cached, grown by doubling).

    The cache only memoises a deterministic table; it does not make callers impure.
    """
    key = (p, base)
    table = _POWER_CACHE.get(key)
    if table is None:
        table = np.ones(1, dtype=np.int64)
    if len(table) < n:
        while len(table) < n:
            step = pow(base, len(table), p)
            table = np.concatenate([table, (table * step) % p])
        _POWER_CACHE[key] = table
    return table[:n]


class _Rolling:
    """Prefix sums that give the double hash of every window of a sequence."""

    __slots__ = ("n", "_g1", "_g2")

    def __init__(self, seq: np.ndarray) -> None:
        self.n = len(seq)
        self._g1 = self._prefix(seq, _P1, _B1)
        self._g2 = self._prefix(seq, _P2, _B2)

    @staticmethod
    def _prefix(seq: np.ndarray, p: int, base: int) -> np.ndarray:
        values = np.mod(seq, p).astype(np.int64, copy=False)
        terms = (values * _powers(p, base, len(seq))) % p
        # Terms are < 2**31, so the cumulative sum cannot overflow int64 for any
        # sequence shorter than 2**32 elements.
        prefix = np.zeros(len(seq) + 1, dtype=np.int64)
        np.cumsum(terms, out=prefix[1:])
        return prefix % p

    def keys(self, length: int) -> np.ndarray:
        """Hash keys of all windows ``seq[i:i+length]``, ``i = 0 .. n-length`` (int64)."""
        count = self.n - length + 1
        if length < 1 or count <= 0:
            return np.zeros(0, dtype=np.int64)
        h1 = self._window(self._g1, length, count, _P1, _B1)
        h2 = self._window(self._g2, length, count, _P2, _B2)
        return (h1 << _SHIFT) | h2

    @staticmethod
    def _window(prefix: np.ndarray, length: int, count: int, p: int, base: int) -> np.ndarray:
        diff = np.mod(prefix[length : length + count] - prefix[:count], p)
        inverse = pow(base, -1, p)
        return (diff * _powers(p, inverse, count)) % p


def _as_int_array(x: np.ndarray | list[int], name: str) -> np.ndarray:
    """Validate and return a one-dimensional integer array (empty input -> empty int64)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr


def code_points(text: str) -> np.ndarray:
    """Unicode code points of ``text`` as a uint32 array (lone surrogates preserved)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _sorted_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort order of ``keys`` and the sorted keys (equal keys keep position order)."""
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


def _first_common(
    a: np.ndarray, b: np.ndarray, ra: _Rolling, rb: _Rolling, length: int
) -> tuple[int, int] | None:
    """Smallest ``(i, j)`` (by ``i``, then ``j``) with ``a[i:i+length] == b[j:j+length]``."""
    ka = ra.keys(length)
    kb = rb.keys(length)
    if len(ka) == 0 or len(kb) == 0:
        return None
    order, kbs = _sorted_keys(kb)
    pos = np.searchsorted(kbs, ka, side="left")
    hit = kbs[np.minimum(pos, len(kbs) - 1)] == ka
    for i in np.flatnonzero(hit):
        p = int(pos[i])
        key = ka[i]
        # Candidates in increasing j (stable sort); the first one verifies unless a hash
        # collision occurred, in which case we simply try the next candidate.
        while p < len(kbs) and kbs[p] == key:
            j = int(order[p])
            if np.array_equal(a[i : i + length], b[j : j + length]):
                return int(i), j
            p += 1
    return None


def longest_common_run(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """Longest common contiguous run of two integer sequences.

    Args:
        a: one-dimensional integer array.
        b: one-dimensional integer array.

    Returns:
        ``(start_a, start_b, length)`` with ``a[start_a:start_a+length] ==
        b[start_b:start_b+length]`` and ``length`` maximal.  Among all longest runs the one
        with the smallest ``start_a`` is returned, and for that position the smallest
        ``start_b``.  ``(0, 0, 0)`` when there is no common element (or an input is empty).
    """
    a = _as_int_array(a, "a")
    b = _as_int_array(b, "b")
    if len(a) == 0 or len(b) == 0:
        return (0, 0, 0)
    ra, rb = _Rolling(a), _Rolling(b)
    lo, hi = 0, min(len(a), len(b))
    best = (0, 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = _first_common(a, b, ra, rb, mid)
        if found is None:
            hi = mid - 1
        else:
            lo, best = mid, found
    if lo == 0:
        return (0, 0, 0)
    return (best[0], best[1], lo)


def longest_common_substring_chars(a: str, b: str) -> tuple[int, int]:
    """Longest common character substring of ``a`` and ``b`` (case-sensitive).

    Reproduces the MSR authors' O(mn) dynamic programme exactly, including its tie-break:
    their loop keeps the first cell (in row-major order over ``a`` then ``b``) that strictly
    improves the maximum, so among all longest common substrings the one whose *end* (hence
    start) in ``a`` is smallest is returned.  Their string is ``a[start:start+length]``.

    Args:
        a: the string whose slice is reported (the reference in the MSR protocol).
        b: the other string (the generation).

    Returns:
        ``(start_in_a, length)``; ``(0, 0)`` when either string is empty or they share no
        character.
    """
    if not a or not b:
        return (0, 0)
    start, _, length = longest_common_run(code_points(a), code_points(b))
    return (start, length)


def _kgram_pairs(
    ka: np.ndarray, kb: np.ndarray, max_pairs: int
) -> tuple[np.ndarray, np.ndarray]:
    """All ``(i, j)`` with ``ka[i] == kb[j]``, refusing to build more than ``max_pairs``."""
    order, kbs = _sorted_keys(kb)
    left = np.searchsorted(kbs, ka, side="left")
    right = np.searchsorted(kbs, ka, side="right")
    counts = right - left
    total = int(counts.sum())
    if total > max_pairs:
        raise ValueError(
            f"maximal_matches: {total} equal k-gram pairs exceed max_pairs={max_pairs} "
            "(highly repetitive input); raise min_len or max_pairs"
        )
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    i_idx = np.repeat(np.arange(len(ka), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    j_idx = order[np.repeat(left, counts) + offsets].astype(np.int64)
    return i_idx, j_idx


def _verify_spans(
    a: np.ndarray,
    b: np.ndarray,
    i0: np.ndarray,
    j0: np.ndarray,
    span: np.ndarray,
    min_len: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact maximal matches of length >= ``min_len`` inside candidate diagonal spans.

    Each span ``a[i0:i0+span]`` vs ``b[j0:j0+span]`` is compared element by element; the
    maximal all-equal stretches of at least ``min_len`` elements are returned.  Without
    hash collisions every span is one such stretch.
    """
    offsets = np.arange(int(span.sum()), dtype=np.int64) - np.repeat(np.cumsum(span) - span, span)
    ia = np.repeat(i0, span) + offsets
    jb = np.repeat(j0, span) + offsets
    eq = a[ia] == b[jb]
    if eq.all():
        return i0, j0, span
    seg_start = offsets == 0
    seg_end = offsets == np.repeat(span, span) - 1
    prev_eq = np.concatenate([[False], eq[:-1]])
    next_eq = np.concatenate([eq[1:], [False]])
    starts = np.flatnonzero(eq & (seg_start | ~prev_eq))
    ends = np.flatnonzero(eq & (seg_end | ~next_eq))
    lengths = ends - starts + 1
    keep = lengths >= min_len
    return ia[starts[keep]], jb[starts[keep]], lengths[keep]


def maximal_matches(
    a: np.ndarray,
    b: np.ndarray,
    min_len: int,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> list[tuple[int, int, int]]:
    """All maximal exact matches of at least ``min_len`` elements between ``a`` and ``b``.

    A match ``(i, j, length)`` means ``a[i:i+length] == b[j:j+length]`` and it cannot be
    extended on its diagonal: ``i == 0 or j == 0 or a[i-1] != b[j-1]`` and
    ``i+length == len(a) or j+length == len(b) or a[i+length] != b[j+length]``.

    Args:
        a: one-dimensional integer array.
        b: one-dimensional integer array.
        min_len: minimum match length (>= 1).
        max_pairs: cap on the number of pairs of equal ``min_len``-grams that are
            materialised (memory is O(max_pairs)).  Highly repetitive inputs (the same
            token repeated thousands of times on both sides) produce a number of pairs
            quadratic in their length; above the cap a :class:`ValueError` is raised
            rather than exhausting memory.

    Returns:
        Matches sorted by ``(a_start, b_start)``.

    Raises:
        ValueError: ``min_len < 1`` or more than ``max_pairs`` equal k-gram pairs.
    """
    if min_len < 1:
        raise ValueError(f"min_len must be >= 1, got {min_len}")
    a = _as_int_array(a, "a")
    b = _as_int_array(b, "b")
    if len(a) < min_len or len(b) < min_len:
        return []
    ka = _Rolling(a).keys(min_len)
    kb = _Rolling(b).keys(min_len)
    i_idx, j_idx = _kgram_pairs(ka, kb, max_pairs)
    if len(i_idx) == 0:
        return []
    diag = j_idx - i_idx
    order = np.lexsort((i_idx, diag))
    i_s = i_idx[order]
    d_s = diag[order]
    new_run = np.ones(len(i_s), dtype=bool)
    new_run[1:] = (d_s[1:] != d_s[:-1]) | (i_s[1:] != i_s[:-1] + 1)
    run_starts = np.flatnonzero(new_run)
    run_lens = np.diff(np.append(run_starts, len(i_s)))
    i0 = i_s[run_starts]
    j0 = i0 + d_s[run_starts]
    span = run_lens + (min_len - 1)

    # Verify in chunks of about _VERIFY_CHUNK compared elements to bound memory.
    chunk_id = (np.cumsum(span) - span) // _VERIFY_CHUNK
    bounds = np.flatnonzero(np.diff(chunk_id)) + 1
    pieces = [
        _verify_spans(a, b, i0[s:e], j0[s:e], span[s:e], min_len)
        for s, e in zip(
            np.concatenate([[0], bounds]), np.concatenate([bounds, [len(span)]]), strict=True
        )
    ]
    res_i = np.concatenate([p[0] for p in pieces])
    res_j = np.concatenate([p[1] for p in pieces])
    res_l = np.concatenate([p[2] for p in pieces])
    final = np.lexsort((res_j, res_i))
    return list(
        zip(
            res_i[final].tolist(), res_j[final].tolist(), res_l[final].tolist(), strict=True
        )
    )


def _count_shared_exact(gen: np.ndarray, ref: np.ndarray, k: int) -> int:
    """Exact fallback for :func:`count_shared_kgrams` (used only after a hash collision)."""
    ref_set = set(map(tuple, sliding_window_view(ref, k).tolist()))
    return len({g for g in map(tuple, sliding_window_view(gen, k).tolist()) if g in ref_set})


def count_shared_kgrams(gen: np.ndarray, ref: np.ndarray, k: int) -> int:
    """Number of distinct k-grams of ``gen`` that also occur somewhere in ``ref``.

    Args:
        gen: one-dimensional integer array (the generation).
        ref: one-dimensional integer array (the reference).
        k: gram length (>= 1).

    Returns:
        The count; 0 when either sequence is shorter than ``k``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    gen = _as_int_array(gen, "gen")
    ref = _as_int_array(ref, "ref")
    if len(gen) < k or len(ref) < k:
        return 0
    kg = _Rolling(gen).keys(k)
    kr = _Rolling(ref).keys(k)
    order, krs = _sorted_keys(kr)
    pos = np.searchsorted(krs, kg, side="left")
    hit = krs[np.minimum(pos, len(krs) - 1)] == kg
    gi = np.flatnonzero(hit)
    if len(gi) == 0:
        return 0
    rep = order[pos[gi]]
    ok = np.ones(len(gi), dtype=bool)
    for t in range(k):
        ok &= gen[gi + t] == ref[rep + t]
    if not ok.all():
        # A collision: some window hashed like a reference window it does not equal.
        return _count_shared_exact(gen, ref, k)
    # Every hit equals its reference representative, so equal keys mean equal k-grams.
    return len(np.unique(kg[gi]))
