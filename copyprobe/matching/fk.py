"""``f_k``, the survival counts over documents, in one place for every caller.

Reference: docs/statistics.md#how-matches-are-counted.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["paper_fk_counts", "paper_score", "word_fk_counts"]


def paper_score(lcs_words: int, unique: bool) -> int:
    """One document's paper-mode score: ``lcs_words`` when its match is unique, else 0."""
    return int(lcs_words) if unique else 0


def _ks(ks: Iterable[int]) -> list[int]:
    out = [int(k) for k in ks]
    if any(k < 0 for k in out):
        raise ValueError(f"thresholds k must be >= 0, got {out}")
    return out


def paper_fk_counts(scores: Iterable[int], ks: Iterable[int]) -> list[int]:
    """Paper-mode ``f_k``: for each ``k``, the number of documents with ``score > k``.

    Args:
        scores: one :func:`paper_score` per document (for several samples, their maximum).
        ks: thresholds, each >= 0 (a non-unique match scores 0, which must never count).
    """
    s = np.fromiter((int(x) for x in scores), dtype=np.int64)
    return [int((s > k).sum()) for k in _ks(ks)]


def word_fk_counts(longest: Iterable[int], ks: Iterable[int]) -> list[int]:
    """Word-mode ``f_k``: for each ``k``, the number of documents with ``longest >= k``."""
    s = np.fromiter((int(x) for x in longest), dtype=np.int64)
    return [int((s >= k).sum()) for k in _ks(ks)]
