"""Near-duplicate grouping of one family's licence texts into variants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from copyprobe.sources.base import text_id


def shingles(key: str, k: int = 5) -> frozenset[tuple[str, ...]]:
    words = key.split()
    if len(words) <= k:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)



@dataclass
class Occurrence:
    family: str
    text: str
    key: str
    package: str
    ref: str
    copyright: list[str]


@dataclass
class Variant:
    family: str
    representative: str  # text
    rep_key: str
    rep_shingles: frozenset[tuple[str, ...]]
    members: list[Occurrence] = field(default_factory=list)
    exact_texts: int = 0
    min_similarity: float = 1.0

    @property
    def packages(self) -> list[str]:
        return sorted({m.package for m in self.members}, key=str.lower)


def group_variants(occurrences: list[Occurrence], threshold: float) -> list[Variant]:
    """Collapse the occurrences of one family into variants (identical or near-identical text).

    Exact groups (same :func:`comparison_key`) are taken most widespread first; each joins the
    first variant whose representative it matches with word-5-gram Jaccard >= ``threshold``,
    else starts a new variant. Deterministic for a given input set.
    """
    exact: dict[str, list[Occurrence]] = {}
    for o in occurrences:
        exact.setdefault(o.key, []).append(o)

    def rank(item: tuple[str, list[Occurrence]]) -> tuple[int, int, str]:
        key, occ = item
        return (-len({o.package for o in occ}), -len(occ), text_id(key))

    variants: list[Variant] = []
    for key, occ in sorted(exact.items(), key=rank):
        sh = shingles(key)
        for v in variants:
            sim = jaccard(sh, v.rep_shingles)
            if sim >= threshold:
                v.members.extend(occ)
                v.exact_texts += 1
                v.min_similarity = min(v.min_similarity, sim)
                break
        else:
            rep = sorted(occ, key=lambda o: o.ref)[0]
            variants.append(Variant(occ[0].family, rep.text, key, sh, list(occ), 1))
    variants.sort(key=lambda v: (-len(v.packages), -len(v.members), text_id(v.rep_key)))
    return variants
