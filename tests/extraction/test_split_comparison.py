"""compare_splits: per-metric D_pre vs D_post statistics, the blind baseline beside them, and
model AUC minus blind AUC with a paired bootstrap interval."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from copyprobe.extraction.analysis import compare_splits
from copyprobe.stats import blind_scores
from copyprobe.stats.common import roc_auc

SETTINGS = {"n_boot": 300, "seed": 0, "blind_folds": 5}


def _docs(n_pre: int, n_post: int, *, separable_text: bool, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    shared = [f"w{i}" for i in range(200)]
    pre_vocab = [f"alpha{i}" for i in range(100)] if separable_text else shared
    post_vocab = [f"beta{i}" for i in range(100)] if separable_text else shared
    texts = ([" ".join(rng.choice(pre_vocab, 25)) for _ in range(n_pre)]
             + [" ".join(rng.choice(post_vocab, 25)) for _ in range(n_post)])
    return pd.DataFrame({
        "doc_id": [f"d{i:03d}" for i in range(n_pre + n_post)],
        "split": ["D_pre"] * n_pre + ["D_post"] * n_post,
        "text": texts,
        # every D_pre document is more extractable than every D_post one
        "frac": np.r_[rng.uniform(0.5, 1.0, n_pre), rng.uniform(0.0, 0.4, n_post)],
        "noise": rng.normal(size=n_pre + n_post),
    })


def test_separated_metric_on_indistinguishable_texts() -> None:
    docs = _docs(30, 30, separable_text=False)
    r = compare_splits(docs, metrics=["frac", "noise"], **SETTINGS)
    json.dumps(r, allow_nan=False)
    frac = r["metrics"]["frac"]
    assert frac["auc"] == 1.0 and frac["cliffs_delta"] == -1.0 and frac["ks_statistic"] == 1.0
    assert frac["auc_ci"] == [1.0, 1.0] and frac["ks_p"] < 1e-10
    assert (frac["n_pre"], frac["n_post"]) == (30, 30)
    assert abs(r["metrics"]["noise"]["auc"] - 0.5) < 0.2
    # the blind baseline sees nothing; the model adds about 0.5 AUC beyond it
    blind_auc = r["blind"]["auc"]
    assert abs(blind_auc - 0.5) < 0.2 and r["blind"]["warning"] is False
    head = r["auc_minus_blind"]["frac"]
    assert head["model_auc"] == 1.0 and head["blind_auc"] == pytest.approx(blind_auc)
    assert head["difference"] == pytest.approx(1.0 - blind_auc)
    lo, hi = head["ci"]
    assert lo <= head["difference"] <= hi and lo > 0.2
    # the paired interval of 1 - blind AUC is the blind interval mirrored (model AUC is 1 in
    # every resample), up to the different resamples drawn
    b_lo, b_hi = r["blind"]["auc_ci"]
    assert (hi - lo) == pytest.approx(b_hi - b_lo, abs=0.1)
    assert r["notes"] == []


def test_separable_texts_leave_the_model_nothing_to_add() -> None:
    docs = _docs(20, 20, separable_text=True, seed=1)
    r = compare_splits(docs, metrics=["frac"], **SETTINGS)
    assert r["blind"]["auc"] == 1.0 and r["blind"]["warning"] is True
    head = r["auc_minus_blind"]["frac"]
    assert head["difference"] == 0.0 and head["ci"] == [0.0, 0.0]


def test_paired_difference_matches_blind_scores() -> None:
    docs = _docs(12, 15, separable_text=False, seed=2)
    r = compare_splits(docs, metrics=["noise"], **SETTINGS)
    labels = (docs["split"] == "D_pre").astype(int).to_numpy()
    scores = blind_scores(docs["text"].tolist(), labels, folds=5, seed=0)
    head = r["auc_minus_blind"]["noise"]
    assert head["blind_auc"] == pytest.approx(roc_auc(scores, labels))
    assert head["model_auc"] == pytest.approx(roc_auc(docs["noise"], labels))
    assert head["difference"] == pytest.approx(head["model_auc"] - head["blind_auc"])
    assert head["ci"][0] <= head["difference"] <= head["ci"][1]


def test_nan_metric_drops_documents_for_that_metric_only() -> None:
    docs = _docs(10, 10, separable_text=False, seed=3)
    docs.loc[[0, 1, 15], "frac"] = np.nan
    r = compare_splits(docs, metrics=["frac", "noise"], **SETTINGS)
    json.dumps(r, allow_nan=False)
    assert (r["metrics"]["frac"]["n_pre"], r["metrics"]["frac"]["n_post"]) == (8, 9)
    assert (r["metrics"]["noise"]["n_pre"], r["metrics"]["noise"]["n_post"]) == (10, 10)
    assert r["auc_minus_blind"]["frac"]["n_pre"] == 8
    assert any("frac: 3 non-finite" in n for n in r["notes"])
    assert any("frac: model minus blind compares both AUCs on the 17" in n for n in r["notes"])


def test_too_few_documents_gives_none_and_notes() -> None:
    docs = _docs(1, 5, separable_text=False)
    r = compare_splits(docs, metrics=["frac"], **SETTINGS)
    json.dumps(r, allow_nan=False)
    assert r["metrics"]["frac"]["auc"] is None and r["metrics"]["frac"]["auc_ci"] is None
    assert r["blind"]["auc"] is None
    assert r["auc_minus_blind"]["frac"]["difference"] is None
    assert any("fewer than 2 documents with a value" in n for n in r["notes"])
    assert any("model minus blind AUC undefined" in n for n in r["notes"])
    # a metric that is NaN everywhere, on an otherwise fine set
    docs = _docs(6, 6, separable_text=False).assign(empty=np.nan)
    r = compare_splits(docs, metrics=["empty"], **SETTINGS)
    assert r["metrics"]["empty"]["auc"] is None and r["auc_minus_blind"]["empty"]["ci"] is None
    # fewer documents than blind folds: the folds shrink, with a note
    assert r["blind"]["folds"] == 5
    r = compare_splits(_docs(3, 8, separable_text=False), metrics=["frac"], **SETTINGS)
    assert r["blind"]["folds"] == 3
    assert any("used 3 folds, not 5" in n for n in r["notes"])
    assert r["auc_minus_blind"]["frac"]["difference"] is not None
    # nothing at all
    r = compare_splits(_docs(0, 0, separable_text=False), metrics=["frac"], **SETTINGS)
    assert r["n_pre"] == 0 and r["metrics"]["frac"]["auc"] is None


def test_no_bootstrap() -> None:
    r = compare_splits(_docs(8, 8, separable_text=False), metrics=["frac"],
                       **{**SETTINGS, "n_boot": 0})
    assert r["metrics"]["frac"]["auc"] == 1.0 and r["metrics"]["frac"]["auc_ci"] is None
    assert r["auc_minus_blind"]["frac"]["difference"] is not None
    assert r["auc_minus_blind"]["frac"]["ci"] is None
    assert any("n_boot=0" in n for n in r["notes"])


@pytest.mark.parametrize("change, match", [
    (lambda d: d.drop(columns="text"), "no column"),
    (lambda d: d.assign(split=["D_pre"] * 5 + ["later"] * 5), "'later'"),
    (lambda d: d.assign(doc_id="same"), "more than once"),
])
def test_caller_errors(change, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compare_splits(change(_docs(5, 5, separable_text=False)), metrics=["frac"], **SETTINGS)

