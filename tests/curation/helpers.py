"""Texts and corpora for the curation tests: seeded random words, so texts are distinct."""

from __future__ import annotations

import datetime as dt
import random

import pandas as pd

from copyprobe.artifacts import CORPUS

VOCAB = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti", "vo", "ze")
         for b in ("bar", "cen", "dol", "fir", "gas", "hum", "jil", "kor", "lum", "mop",
                   "nix", "pol", "quin", "rast", "sel", "tov", "ulm", "ver", "wex", "yor")]


def text(seed: int, n: int = 200, vocab: list[str] = VOCAB) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(vocab) for _ in range(n))


def change_words(t: str, positions: list[int]) -> str:
    words = t.split()
    for p in positions:
        words[p] = f"changed{p}"
    return " ".join(words)


def corpus(rows: list[dict]) -> pd.DataFrame:
    """A CORPUS frame from partial rows (doc_id, text, published, plus any column)."""
    full = []
    for r in rows:
        base = dict.fromkeys(CORPUS.columns)
        base.update(source="s", title=r["doc_id"], date_basis="test", url="", licence="",
                    provenance="{}", page_id="", revision_id="", category="",
                    rights_holder="", rights_notice="")
        base.update(r)
        full.append(base)
    return pd.DataFrame(full, columns=CORPUS.columns)


D = dt.date
