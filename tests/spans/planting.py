"""Corpora with planted copies at known positions (shared by the span tests)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from copyprobe.spans.types import CorpusDoc

L = 8  # the minimum span length the planted tests use


def pseudo_words(rng: random.Random, n: int, prefix: str) -> list[str]:
    """``n`` distinct seeded pseudo-words starting with ``prefix`` (lower case, so the
    ``words`` unit keeps them as they are)."""
    out: set[str] = set()
    while len(out) < n:
        out.add(prefix + "".join(rng.choice("abcdefghiklmnoprstuvy")
                                 for _ in range(rng.randint(3, 7))))
    return sorted(out)


@dataclass
class Planted:
    """A corpus of background documents with passages planted at known word positions."""

    docs: list[CorpusDoc]
    #: passage name -> its words
    passages: dict[str, list[str]]
    #: passage name -> [(source, doc_id, word_start)] in index order
    where: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)


def make_planted(seed: int = 7) -> Planted:
    rng = random.Random(seed)
    background = pseudo_words(rng, 4000, "b")
    planted_vocab = pseudo_words(rng, 400, "p")
    passages = {"exact": rng.sample(planted_vocab, L),
                "longer": rng.sample(planted_vocab, L + 5),
                "short": rng.sample(planted_vocab, L - 1),
                "thrice": rng.sample(planted_vocab, L + 1)}
    # (passage, doc number, word position): "longer" in 2 documents, "thrice" 3x in one
    plan = [("exact", 1, 40), ("longer", 2, 100), ("longer", 5, 7), ("short", 3, 50),
            ("thrice", 4, 10), ("thrice", 4, 120), ("thrice", 4, 250)]
    bodies = {k: rng.choices(background, k=300) for k in range(12)}
    for name, k, at in sorted(plan, key=lambda p: -p[2]):  # from the end: positions hold
        bodies[k][at:at] = passages[name]
    docs = []
    for k in range(12):
        source = "alpha" if k % 2 == 0 else "beta"
        words = bodies[k]
        # sentence-like text: capitals and punctuation the words unit drops
        text = " ".join(w.capitalize() + "." if i % 11 == 10 else w
                        for i, w in enumerate(words))
        docs.append(CorpusDoc(source=source, doc_id=f"doc{k:02d}", text=text,
                              title=f"Doc {k}", url=f"https://example.org/{k}"))
    where: dict[str, list[tuple[str, str, int]]] = {}
    for name, k, at in plan:
        words = bodies[k]
        n = len(passages[name])
        # the final position of this copy: find it (planting shifted later ones)
        hits = [i for i in range(len(words) - n + 1) if words[i:i + n] == passages[name]]
        where.setdefault(name, [])
        for i in hits:
            entry = (docs[k].source, docs[k].doc_id, i)
            if entry not in where[name]:
                where[name].append(entry)
    for name in where:
        where[name].sort(key=lambda e: (e[0], e[1], e[2]))
    return Planted(docs, passages, where)


def write_parquet(docs: list[CorpusDoc], path: Path) -> Path:
    pd.DataFrame([d.__dict__ for d in docs]).to_parquet(path)
    return path
