"""difflib's matching blocks (``SequenceMatcher(None, a, b, autojunk=False)``), exactly,
without difflib's cost, which grows with the repeats of common words.

Each step finds the longest common run of two ranges (ties: the earliest in ``a``, then in
``b``) by scanning ``a``'s range through a suffix automaton of ``b``'s, or reads it from an
earlier scan's runs where they decide it; then it recurses left and right of it, and adjacent
blocks are joined as difflib joins them. docs/longform.md (how the ordered matching stays
fast) gives the rule and the measured speed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

#: below this many cell pairs a step uses difflib's own dynamic programme (cheaper there)
SMALL = 4096


def _automaton(seq: Sequence[int], lo: int, hi: int):
    """Suffix automaton of seq[lo:hi]: transitions, suffix links, lengths and the end
    position (relative to lo) of each state's first occurrence."""
    nxt: list[dict[int, int]] = [{}]
    link = [-1]
    length = [0]
    first = [-1]
    last = 0
    for pos in range(hi - lo):
        c = seq[lo + pos]
        cur = len(length)
        nxt.append({})
        link.append(0)
        length.append(length[last] + 1)
        first.append(pos)
        p = last
        while p != -1 and c not in nxt[p]:
            nxt[p][c] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][c]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                first.append(first[q])
                while p != -1 and nxt[p].get(c) == q:
                    nxt[p][c] = clone
                    p = link[p]
                link[q] = clone
                link[cur] = clone
        last = cur
    return nxt, link, length, first


def _scan(auto, seq: Sequence[int], lo: int, hi: int):
    """For each end e in seq[lo:hi], the longest run ending there that the automaton's text
    holds: yields (e, run length, first end of that run in the automaton's text)."""
    nxt, link, length, first = auto
    state, n = 0, 0
    for e in range(lo, hi):
        c = seq[e]
        while state and c not in nxt[state]:
            state = link[state]
            n = length[state]
        to = nxt[state].get(c)
        if to is None:
            state, n = 0, 0
            continue
        state, n = to, n + 1
        yield e, n, first[state]


def _longest_small(a, b, alo, ahi, blo, bhi) -> tuple[int, int, int]:
    """difflib's find_longest_match (no junk) by its own dynamic programme."""
    besti, bestj, best = alo, blo, 0
    prev: dict[int, int] = {}
    for i in range(alo, ahi):
        ai, cur = a[i], {}
        for j in range(blo, bhi):
            if b[j] == ai:
                k = cur[j] = prev.get(j - 1, 0) + 1
                if k > best:
                    besti, bestj, best = i - k + 1, j - k + 1, k
        prev = cur
    return besti, bestj, best


class _Longest:
    """find_longest_match over ranges of a and b (ints). Each scan of a against b's
    automaton keeps, per position e of a, the longest run ending there and its first end in
    b; a later step inside those ranges reads them as upper bounds, exact where that run
    still lies inside its ranges, and scans again only when they cannot decide (a run of
    equally long blocks, each ending a step, then costs one vectorised pass, not a scan)."""

    def __init__(self, a: list[int], b: list[int]):
        self.a, self.b = a, b
        self.n = np.arange(1, len(a) + 1, dtype=np.int64)  # nothing known: bound e - alo + 1
        self.f = np.full(len(a), -1, dtype=np.int64)

    def __call__(self, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
        """(i, j, k): the longest common run of a[alo:ahi] and b[blo:bhi]; of those the one
        starting earliest in a, then earliest in b (difflib's find_longest_match without
        junk); (alo, blo, 0) when there is none."""
        a, b = self.a, self.b
        if (ahi - alo) * (bhi - blo) <= SMALL:
            return _longest_small(a, b, alo, ahi, blo, bhi)
        known = self._from_bounds(alo, ahi, blo, bhi)
        if known is not None:
            return known
        besti, bestj, best = alo, blo, 0
        if bhi - blo <= 4 * (ahi - alo):
            # automaton of b: scanning a in order, the first longer run wins; its earliest
            # occurrence in b is the state's first end
            n, f = self.n, self.f
            n[alo:ahi] = 0
            for e, k, end in _scan(_automaton(b, blo, bhi), a, alo, ahi):
                n[e], f[e] = k, blo + end
                if k > best:
                    besti, bestj, best = e - k + 1, blo + end - k + 1, k
        else:
            # a much shorter: automaton of a, scanning b; a run as long starting earlier in
            # a wins (the bounds of a stay those of the earlier, wider scan)
            for e, k, end in _scan(_automaton(a, alo, ahi), b, blo, bhi):
                i = alo + end - k + 1
                if k > best or (k == best and i < besti):
                    besti, bestj, best = i, e - k + 1, k
        return besti, bestj, best

    def _from_bounds(self, alo, ahi, blo, bhi):
        """The answer read from an earlier scan's runs, or None when they do not decide it."""
        n, f = self.n[alo:ahi], self.f[alo:ahi]
        e = np.arange(alo, ahi)
        valid = (n > 0) & (e - n + 1 >= alo) & (f - n + 1 >= blo) & (f < bhi)
        bound = np.where(valid, 0, np.minimum(n, e - alo + 1))
        exact = np.where(valid, n, 0)
        k = int(exact.argmax())
        best = int(exact[k])
        if best == 0:
            return (alo, blo, 0) if not bound.any() else None
        if bound.max() > best:
            return None
        ties = np.flatnonzero(bound == best)
        if ties.size and ties[0] < k:
            return None
        return alo + k - best + 1, int(f[k]) - best + 1, best


def longest(a: Sequence[int], b: Sequence[int], alo: int, ahi: int, blo: int,
            bhi: int) -> tuple[int, int, int]:
    """(i, j, k): difflib's find_longest_match (no junk) of a[alo:ahi] and b[blo:bhi]."""
    return _Longest(list(a), list(b))(alo, ahi, blo, bhi)


def matching_blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int, int]]:
    """(i, j, k) of each block, as ``SequenceMatcher(None, a, b, autojunk=False)
    .get_matching_blocks()`` returns them, less its final (len(a), len(b), 0)."""
    ids: dict[Hashable, int] = {}
    ai = [ids.setdefault(x, len(ids)) for x in a]
    bi = [ids.setdefault(x, len(ids)) for x in b]
    find = _Longest(ai, bi)
    found = []
    todo = [(0, len(ai), 0, len(bi))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        if alo >= ahi or blo >= bhi:
            continue
        i, j, k = find(alo, ahi, blo, bhi)
        if k:
            found.append((i, j, k))
            todo.append((alo, i, blo, j))
            todo.append((i + k, ahi, j + k, bhi))
    found.sort()
    joined: list[tuple[int, int, int]] = []
    for i, j, k in found:
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + k)
        else:
            joined.append((i, j, k))
    return joined
