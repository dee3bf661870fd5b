"""The MSR analysis passes ``statistics.n_boot`` to the blind baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copyprobe.msr.analysis import analyse
from copyprobe.msr.match_scoring import score
from copyprobe.prompt import Prompt
from copyprobe.stats import blind_baseline


def _comparison(n: int = 12) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` pre and ``n`` post documents with overlapping vocabularies, scored."""
    rng = np.random.default_rng(0)
    shared = [f"s{i}" for i in range(40)]
    docs, splits = {}, {}
    for split, own in (("pre", "a"), ("post", "b")):
        vocab = shared + [f"{own}{i}" for i in range(4)]
        for i in range(n):
            docs[f"{split}{i}"] = " ".join(rng.choice(vocab, 12))
            splits[f"{split}{i}"] = split
    ids = list(docs)
    prompts = pd.DataFrame({
        "request_id": ids, "model": "m", "source": "s", "doc_id": ids,
        "split": [splits[i] for i in ids], "status": "ready",
        "prompt": Prompt("completion", text="x").to_json(),
        "reference": [" ".join(docs[i].split()[-10:]) for i in ids],
        "document": [docs[i] for i in ids],
    })
    gens = pd.DataFrame({"request_id": ids, "sample_index": 0, "text": "nothing shared",
                         "status": "ok"})
    matches = score(prompts, gens, k_min=5, k_max=12)
    corpus = prompts.rename(columns={"document": "text"})[["source", "doc_id", "text"]]
    return matches, corpus


@pytest.mark.parametrize("n_boot", [100, 300])
def test_blind_baseline_uses_statistics_n_boot(n_boot: int) -> None:
    matches, corpus = _comparison()
    stats = {"n_boot": n_boot, "seed": 0, "blind_folds": 3, "blind_warn_auc": 0.75}
    r = analyse(matches, corpus, model="m", dataset="d", k_min=5, k_max=12, statistics=stats)
    corpus = corpus.sort_values("doc_id")  # the analysis orders documents by (source, doc_id)
    labels = [1 if d.startswith("pre") else 0 for d in corpus["doc_id"]]
    direct = blind_baseline(corpus["text"].tolist(), labels, folds=3, seed=0, warn_auc=0.75,
                            n_boot=n_boot)
    assert direct["auc_ci"] is not None
    assert r["blind_baseline"]["auc_ci"] == direct["auc_ci"]
    other = blind_baseline(corpus["text"].tolist(), labels, folds=3, seed=0, warn_auc=0.75,
                           n_boot=1000)
    assert other["auc_ci"] != direct["auc_ci"]  # the count matters for this data
