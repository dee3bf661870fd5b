"""Exact and near-duplicate documents.

Reference: docs/curation.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from datasketch import MinHash, MinHashLSH

#: Lower bound on the chance that a pair exactly at the threshold is found by LSH.
CANDIDATE_RECALL = 0.99

EXACT = "exact"
NEAR = "near"


@dataclass(frozen=True)
class DedupSettings:
    """How duplicates are found (the config's ``curation.dedup`` block)."""

    exact: bool = True
    near: bool = True
    threshold: float = 0.8
    shingle_words: int = 5
    num_perm: int = 128
    seed: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"curation.dedup.threshold must lie in (0, 1], got {self.threshold}")
        if self.shingle_words < 1:
            raise ValueError(f"curation.dedup.shingle_words must be >= 1, got "
                             f"{self.shingle_words}")
        if self.num_perm < 2:
            raise ValueError(f"curation.dedup.num_perm must be >= 2, got {self.num_perm}")

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None) -> DedupSettings:
        return cls(**dict(params or {}))

    @property
    def active(self) -> bool:
        return self.exact or self.near


def normalise(text: str) -> str:
    """Lowercase, with every run of whitespace collapsed to one space and ends stripped."""
    return " ".join(text.lower().split())


def text_key(text: str) -> str:
    """SHA-256 of the normalised text: equal keys are exact duplicates."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def shingles(text: str, k: int) -> frozenset[str]:
    """The set of ``k``-word shingles of the normalised text; a text of fewer than ``k`` words
    is one shingle (the whole text), an empty text has none."""
    words = normalise(text).split()
    if len(words) <= k:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def lsh_bands(threshold: float, num_perm: int, recall: float = CANDIDATE_RECALL) -> tuple[int, int]:
    """(bands, rows): the most rows per band (fewest spurious candidates) such that a pair of
    similarity ``threshold`` shares a band with probability ``1 - (1 - t**r)**b >= recall``,
    with ``b * r <= num_perm``; one row per band when none reaches it."""
    best = (num_perm, 1)
    for r in range(1, num_perm + 1):
        b = num_perm // r
        if 1.0 - (1.0 - threshold ** r) ** b >= recall:
            best = (b, r)
    return best


@dataclass(frozen=True)
class Match:
    """A document duplicates ``of`` (``kind`` exact or near, with the Jaccard similarity of
    their shingle sets; 1.0 for exact duplicates)."""

    of: str
    kind: str
    similarity: float


class DuplicateIndex:
    """Documents added one by one; :meth:`match` says which earlier one a text duplicates."""

    def __init__(self, settings: DedupSettings) -> None:
        self.settings = settings
        self._order: dict[str, int] = {}
        self._keys: dict[str, list[str]] = {}  # text key -> doc_ids with it, in order
        self._shingles: dict[str, frozenset[str]] = {}
        self._lsh: MinHashLSH | None = None
        if settings.near:
            self._lsh = MinHashLSH(num_perm=settings.num_perm,
                                   params=lsh_bands(settings.threshold, settings.num_perm))

    def _minhash(self, sh: frozenset[str]) -> MinHash:
        m = MinHash(num_perm=self.settings.num_perm, seed=self.settings.seed)
        m.update_batch([s.encode("utf-8") for s in sorted(sh)])
        return m

    def matches(self, text: str) -> list[tuple[str, Match]]:
        """Every document in the index that ``text`` duplicates, earliest added first."""
        found: dict[str, Match] = {}
        if self.settings.exact:
            for same in self._keys.get(text_key(text), []):
                found[same] = Match(same, EXACT, 1.0)
        if self._lsh is not None:
            sh = shingles(text, self.settings.shingle_words)
            if sh:
                for other in self._lsh.query(self._minhash(sh)):
                    if other in found:
                        continue
                    sim = jaccard(sh, self._shingles[other])
                    if sim >= self.settings.threshold:
                        found[other] = Match(other, NEAR, sim)
        return sorted(found.items(), key=lambda kv: self._order[kv[0]])

    def match(self, text: str) -> Match | None:
        """The earliest added document that ``text`` duplicates, or None."""
        found = self.matches(text)
        return found[0][1] if found else None

    def add(self, doc_id: str, text: str) -> None:
        if doc_id in self._order:
            raise ValueError(f"document {doc_id!r} added twice")
        self._order[doc_id] = len(self._order)
        self._keys.setdefault(text_key(text), []).append(doc_id)
        if self._lsh is not None:
            sh = shingles(text, self.settings.shingle_words)
            if sh:
                self._shingles[doc_id] = sh
                self._lsh.insert(doc_id, self._minhash(sh))


def find_duplicates(docs: Iterable[tuple[str, str]], settings: DedupSettings) -> dict[str, Match]:
    """For ``(doc_id, text)`` pairs in order of preference (the first of a group is kept): the
    dropped ones, each with the kept document it duplicates. Dropped documents are not added,
    so every document is compared with kept ones only."""
    dropped: dict[str, Match] = {}
    if not settings.active:
        return dropped
    index = DuplicateIndex(settings)
    for doc_id, text in docs:
        m = index.match(text)
        if m is None:
            index.add(doc_id, text)
        else:
            dropped[doc_id] = m
    return dropped


def cross_group_pairs(docs: Iterable[tuple[str, str, str]],
                      settings: DedupSettings) -> list[tuple[str, Match]]:
    """For ``(group, key, text)`` triples (keys unique): every pair of documents of different
    groups that duplicate each other, as ``(later key, Match naming the earlier key)``."""
    pairs: list[tuple[str, Match]] = []
    if not settings.active:
        return pairs
    index = DuplicateIndex(settings)
    group_of: dict[str, str] = {}
    for group, key, text in docs:
        pairs.extend((key, m) for other, m in index.matches(text) if group_of[other] != group)
        index.add(key, text)
        group_of[key] = group
    return pairs


def describe(m: Match, settings: DedupSettings) -> str:
    """The reason recorded for a document dropped as a duplicate of ``m.of``."""
    if m.kind == EXACT:
        return f"exact duplicate of {m.of} (same text after lowercasing and collapsing whitespace)"
    return (f"near duplicate of {m.of} (Jaccard similarity {m.similarity:.3f} of word "
            f"{settings.shingle_words}-shingles, threshold {settings.threshold})")
