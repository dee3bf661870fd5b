"""Exact common-substring machinery over integer sequences, near-linear and numpy-vectorised.

Reference: docs/statistics.md#how-matches-are-counted.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "DEFAULT_MAX_PAIRS",
    "code_points",
    "count_shared_kgrams",
    "count_shared_kgrams_range",
    "longest_common_run",
    "longest_common_substring_chars",
    "maximal_matches",
]

#: Default cap on the number of equal-k-gram pairs :func:`maximal_matches` will materialise.
DEFAULT_MAX_PAIRS = 2_000_000

# Two primes below 2**31 and fixed, randomly drawn bases (any base in [2, p-2] works;
# fixing them keeps results and timings reproducible).
_P1 = 2_147_483_647  # 2**31 - 1
_P2 = 2_147_483_629  # 2**31 - 19
_B1 = 1_315_423_911
_B2 = 2_026_651_187
_B1_INV = pow(_B1, -1, _P1)
_B2_INV = pow(_B2, -1, _P2)
_SHIFT = 31

# Seed length for longest_common_run: maximal matches of at least this many elements are
# enumerated first; shorter answers are found by a short binary search.
_SEED = 8

# Elements compared per vectorised verification chunk in maximal_matches.
_VERIFY_CHUNK = 1 << 20

_EMPTY = np.zeros(0, dtype=np.int64)

_POWER_CACHE: dict[tuple[int, int], np.ndarray] = {}
_POWER_CACHE_LIMIT = 1 << 20


def _powers(p: int, base: int, n: int) -> np.ndarray:
    """``base**k mod p`` for ``k < n`` as int64, built by doubling.

    Tables of up to ``_POWER_CACHE_LIMIT`` entries are memoised (a deterministic table, so
    callers stay pure); longer ones are built per call so huge inputs leave nothing behind.
    """
    key = (p, base)
    table = _POWER_CACHE.get(key)
    if table is None:
        table = np.ones(1, dtype=np.int64)
    if len(table) >= n:
        return table[:n]
    while len(table) < n:
        step = pow(base, len(table), p)
        table = np.concatenate([table, (table * step) % p])
    if len(table) <= _POWER_CACHE_LIMIT:
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
        # Casting first avoids NEP 50 overflow errors for narrow dtypes; uint64 values
        # above 2**63 wrap, which only merges hash classes (verification stays exact).
        terms = np.mod(seq.astype(np.int64, copy=False), p)
        terms *= _powers(p, base, len(seq))
        terms %= p
        # Terms are < 2**31, so the cumulative sum cannot overflow int64 for any
        # sequence shorter than 2**32 elements.
        prefix = np.zeros(len(seq) + 1, dtype=np.int64)
        np.cumsum(terms, out=prefix[1:])
        prefix %= p
        return prefix

    def keys(self, length: int) -> np.ndarray:
        """Hash keys of all windows ``seq[i:i+length]``, ``i = 0 .. n-length`` (int64)."""
        count = self.n - length + 1
        if length < 1 or count <= 0:
            return _EMPTY
        h1 = self._window(self._g1, length, count, _P1, _B1_INV)
        h2 = self._window(self._g2, length, count, _P2, _B2_INV)
        h1 <<= _SHIFT
        h1 |= h2
        return h1

    @staticmethod
    def _window(prefix: np.ndarray, length: int, count: int, p: int, inverse: int) -> np.ndarray:
        diff = prefix[length : length + count] - prefix[:count]
        diff %= p  # numpy's % takes the sign of the divisor, so this is in [0, p)
        diff *= _powers(p, inverse, count)
        diff %= p
        return diff


def _as_int_array(x: np.ndarray | list[int], name: str) -> np.ndarray:
    """Validate and return a one-dimensional integer array (empty input -> empty int64)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return _EMPTY
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr


def code_points(text: str) -> np.ndarray:
    """Unicode code points of ``text`` as a uint32 array (lone surrogates preserved)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _sorted_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort order of ``keys`` and the sorted keys (order within equal keys unspecified)."""
    order = np.argsort(keys)
    return order, keys[order]


def _matching_positions(
    queries: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Locate every query key among ``keys``.

    Both sides are sorted first because ``searchsorted`` with sorted needles is an order
    of magnitude faster than with random ones on long inputs.

    Returns:
        ``(query_order, key_order, left, right)``: ``queries[query_order[t]]`` equals
        ``keys[key_order[left[t]:right[t]]]`` (an empty range when it has no match).
    """
    query_order, sorted_queries = _sorted_keys(queries)
    key_order, sorted_keys = _sorted_keys(keys)
    left = np.searchsorted(sorted_keys, sorted_queries, side="left")
    right = np.searchsorted(sorted_keys, sorted_queries, side="right")
    return query_order, key_order, left, right


# --------------------------------------------------------------------------- maximal matches


def _kgram_pairs(
    ka: np.ndarray, kb: np.ndarray, max_pairs: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """All ``(i, j)`` with ``ka[i] == kb[j]`` (in no particular order).

    ``None`` if there are more than ``max_pairs`` of them (nothing quadratic is built).
    """
    order_a, order_b, left, right = _matching_positions(ka, kb)
    counts = right - left
    total = int(counts.sum())
    if total > max_pairs:
        return None
    if total == 0:
        return _EMPTY, _EMPTY
    i_idx = np.repeat(order_a, counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    j_idx = order_b[np.repeat(left, counts) + offsets]
    return i_idx.astype(np.int64, copy=False), j_idx.astype(np.int64, copy=False)


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


def _maximal_arrays(
    a: np.ndarray,
    b: np.ndarray,
    ra: _Rolling,
    rb: _Rolling,
    min_len: int,
    max_pairs: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Maximal matches as arrays ``(a_start, b_start, length)`` sorted by (a_start, b_start).

    ``None`` when more than ``max_pairs`` equal-gram pairs would be needed.
    """
    if len(a) < min_len or len(b) < min_len:
        return _EMPTY, _EMPTY, _EMPTY
    pairs = _kgram_pairs(ra.keys(min_len), rb.keys(min_len), max_pairs)
    if pairs is None:
        return None
    i_idx, j_idx = pairs
    if len(i_idx) == 0:
        return _EMPTY, _EMPTY, _EMPTY
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
    cuts = [0, *bounds.tolist(), len(span)]
    pieces = [
        _verify_spans(a, b, i0[s:e], j0[s:e], span[s:e], min_len)
        for s, e in zip(cuts[:-1], cuts[1:], strict=True)
    ]
    if len(pieces) == 1:
        res_i, res_j, res_l = pieces[0]
    else:
        res_i = np.concatenate([p[0] for p in pieces])
        res_j = np.concatenate([p[1] for p in pieces])
        res_l = np.concatenate([p[2] for p in pieces])
    final = np.lexsort((res_j, res_i))
    return res_i[final], res_j[final], res_l[final]


def _pair_cap_error(max_pairs: int) -> ValueError:
    return ValueError(
        f"more than max_pairs={max_pairs} pairs of equal k-grams (highly repetitive "
        "input); raise min_len or max_pairs"
    )


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
    found = _maximal_arrays(a, b, _Rolling(a), _Rolling(b), min_len, max_pairs)
    if found is None:
        raise _pair_cap_error(max_pairs)
    return list(zip(*(x.tolist() for x in found), strict=True))


# --------------------------------------------------------------------------- longest run


def _first_common(
    a: np.ndarray, b: np.ndarray, ra: _Rolling, rb: _Rolling, length: int
) -> tuple[int, int] | None:
    """Smallest ``(i, j)`` (by ``i``, then ``j``) with ``a[i:i+length] == b[j:j+length]``."""
    ka = ra.keys(length)
    kb = rb.keys(length)
    if len(ka) == 0 or len(kb) == 0:
        return None
    order_a, sorted_a = _sorted_keys(ka)
    sorted_b = np.sort(kb)
    pos = np.searchsorted(sorted_b, sorted_a, side="left")
    hit = sorted_b[np.minimum(pos, len(sorted_b) - 1)] == sorted_a
    for i in np.sort(order_a[hit]):
        # Candidates in increasing j; the first one verifies unless a hash collision
        # occurred, in which case we simply try the next candidate.
        for j in np.flatnonzero(kb == ka[i]):
            if np.array_equal(a[i : i + length], b[j : j + length]):
                return int(i), int(j)
    return None


def _binary_search_run(
    a: np.ndarray, b: np.ndarray, ra: _Rolling, rb: _Rolling, hi: int
) -> tuple[int, int, int]:
    """Longest common run of length at most ``hi`` by binary search on the length."""
    lo, best = 0, (0, 0)
    hi = min(hi, len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = _first_common(a, b, ra, rb, mid)
        if found is None:
            hi = mid - 1
        else:
            lo, best = mid, found
    return (best[0], best[1], lo) if lo else (0, 0, 0)


def _longest_of(matches: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """The longest match, earliest in ``a`` then in ``b`` (matches sorted by (a, b))."""
    starts_a, starts_b, lengths = matches
    best = int(np.argmax(lengths))  # first maximum = smallest (a_start, b_start)
    return int(starts_a[best]), int(starts_b[best]), int(lengths[best])


def _longest_run(
    a: np.ndarray,
    b: np.ndarray,
    ra: _Rolling,
    rb: _Rolling,
    seed: int,
    matches: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[int, int, int]:
    """Longest common run given (or computing) the maximal matches of >= ``seed`` elements."""
    if matches is None and len(a) >= seed and len(b) >= seed:
        # Natural text has few equal seeds; a cap keeps repetitive input from materialising
        # quadratic pair lists (the binary search below handles it in O(n log^2 n)).
        matches = _maximal_arrays(a, b, ra, rb, seed, 8 * (len(a) + len(b)) + 100_000)
        if matches is None:
            return _binary_search_run(a, b, ra, rb, min(len(a), len(b)))
    if matches is not None and len(matches[2]):
        return _longest_of(matches)
    return _binary_search_run(a, b, ra, rb, seed - 1)


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
    return _longest_run(a, b, _Rolling(a), _Rolling(b), _SEED)


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


# --------------------------------------------------------------------------- shared k-grams


def _count_shared_exact(gen: np.ndarray, ref: np.ndarray, k: int) -> int:
    """Exact fallback for :func:`count_shared_kgrams` (used only after a hash collision)."""
    ref_set = set(map(tuple, sliding_window_view(ref, k).tolist()))
    return len({g for g in map(tuple, sliding_window_view(gen, k).tolist()) if g in ref_set})


def _count_shared_hashed(
    gen: np.ndarray, ref: np.ndarray, rg: _Rolling, rr: _Rolling, k: int
) -> int:
    if len(gen) < k or len(ref) < k:
        return 0
    kg = rg.keys(k)
    order_g, order_r, left, right = _matching_positions(kg, rr.keys(k))
    hit = right > left
    gi = order_g[hit]  # generation positions whose key occurs in the reference,
    if len(gi) == 0:  # listed in increasing key order
        return 0
    rep = order_r[left[hit]]  # one reference position with the same key
    ok = np.ones(len(gi), dtype=bool)
    for t in range(k):
        ok &= gen[gi + t] == ref[rep + t]
    if not ok.all():
        # A collision: some window hashed like a reference window it does not equal.
        return _count_shared_exact(gen, ref, k)
    # Every hit equals its reference representative, so equal keys mean equal k-grams;
    # the hit keys are sorted, so distinct ones are counted at key changes.
    hit_keys = kg[gi]
    return 1 + int(np.count_nonzero(hit_keys[1:] != hit_keys[:-1]))


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
    return _count_shared_hashed(gen, ref, _Rolling(gen), _Rolling(ref), k)


def _reach(n: int, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``reach[j]``: longest ``l`` such that some interval ``[s, s+len)`` covers ``[j, j+l)``."""
    ends_at = np.full(n, -1, dtype=np.int64)
    np.maximum.at(ends_at, starts, starts + lengths)
    furthest = np.maximum.accumulate(ends_at)
    return np.maximum(furthest - np.arange(n), 0)


def _shared_counts(
    gen: np.ndarray,
    ref: np.ndarray,
    rg: _Rolling,
    rr: _Rolling,
    k_min: int,
    k_max: int,
    max_pairs: int,
    gen_ref_matches: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> dict[int, int]:
    """Implementation of :func:`count_shared_kgrams_range` (see there).

    ``gen_ref_matches`` are the maximal matches of ``ref`` (as ``a``) against ``gen`` (as
    ``b``) of at least ``k_min`` elements, when the caller already has them.
    """
    ks = range(k_min, k_max + 1)
    n = len(gen)
    if gen_ref_matches is None:
        gen_ref_matches = _maximal_arrays(ref, gen, rr, rg, k_min, max_pairs)
    self_matches = _maximal_arrays(gen, gen, rg, rg, k_min, max_pairs)
    if gen_ref_matches is None or self_matches is None:
        # Too repetitive for the pair lists: hash each k separately instead.
        return {k: _count_shared_hashed(gen, ref, rg, rr, k) for k in ks}
    # A generation k-gram (k >= k_min) occurs in the reference iff it lies inside a maximal
    # match of >= k_min elements; it repeats an earlier generation k-gram iff it lies inside
    # a self-match on a diagonal above the main one.  Distinct shared k-grams are the shared
    # positions that are first occurrences.
    _, gen_starts, lengths = gen_ref_matches
    in_ref = _reach(n, gen_starts, lengths)
    first_i, later_j, self_lengths = self_matches
    above = later_j > first_i
    repeat = _reach(n, later_j[above], self_lengths[above])
    return {k: int(np.count_nonzero((in_ref >= k) & (repeat < k))) for k in ks}


def count_shared_kgrams_range(
    gen: np.ndarray,
    ref: np.ndarray,
    k_min: int,
    k_max: int,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> dict[int, int]:
    """:func:`count_shared_kgrams` for every ``k`` in ``k_min .. k_max`` at once.

    Computed from the maximal matches (of at least ``k_min`` elements) of the generation
    against the reference and against itself, so the cost hardly depends on the size of
    the range.  If either would need more than ``max_pairs`` equal-gram pairs, each ``k``
    is hashed separately instead (same result, no error).

    Args:
        gen: one-dimensional integer array (the generation).
        ref: one-dimensional integer array (the reference).
        k_min: smallest gram length (>= 1).
        k_max: largest gram length (>= k_min).
        max_pairs: pair cap for the maximal-match computations.

    Returns:
        ``{k: count}`` for ``k = k_min .. k_max``.
    """
    if k_min < 1 or k_max < k_min:
        raise ValueError(f"need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    gen = _as_int_array(gen, "gen")
    ref = _as_int_array(ref, "ref")
    return _shared_counts(gen, ref, _Rolling(gen), _Rolling(ref), k_min, k_max, max_pairs)
