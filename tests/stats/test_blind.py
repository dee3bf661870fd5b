"""blind_baseline: a text-only classifier flags trivially separable date splits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from copyprobe.stats import blind_baseline as _blind_baseline
from copyprobe.stats import blind_baseline_with_scores, blind_scores
from copyprobe.stats.common import roc_auc



def blind_baseline(texts, labels, **kw):
    """The function with fixed settings (5 folds, seed 0, warn at 0.75, 1000 replicates)."""
    return _blind_baseline(texts, labels, **{"folds": 5, "seed": 0, "warn_auc": 0.75,
                                             "n_boot": 1000, **kw})


KEYS = {"auc", "auc_ci", "accuracy", "folds", "n_pre", "n_post", "warning", "message", "notes"}


def _docs(vocab: list[str], n: int, rng: np.random.Generator, length: int = 30) -> list[str]:
    return [" ".join(rng.choice(vocab, length)) for _ in range(n)]


def test_separable_vocabularies_warn() -> None:
    rng = np.random.default_rng(0)
    pre = _docs([f"alpha{i}" for i in range(200)], 40, rng)
    post = _docs([f"beta{i}" for i in range(200)], 40, rng)
    r = blind_baseline(pre + post, [1] * 40 + [0] * 40)
    assert set(r) == KEYS
    json.dumps(r, allow_nan=False)
    assert r["auc"] > 0.95
    assert r["accuracy"] > 0.9
    assert r["warning"] is True
    assert r["folds"] == 5 and r["n_pre"] == 40 and r["n_post"] == 40
    assert "separates D_pre from D_post with AUC" in r["message"]
    assert "topic or style" in r["message"]
    lo, hi = r["auc_ci"]
    assert lo <= r["auc"] <= hi


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identically_distributed_no_warning(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    vocab = [f"w{i}" for i in range(300)]
    texts = _docs(vocab, 400, rng)
    r = blind_baseline(texts, [1, 0] * 200, seed=seed)
    json.dumps(r, allow_nan=False)
    assert abs(r["auc"] - 0.5) < 0.12
    assert r["warning"] is False
    assert "separate" in r["message"]


def test_deterministic_given_seed() -> None:
    rng = np.random.default_rng(5)
    vocab_a = [f"a{i}" for i in range(50)] + [f"s{i}" for i in range(50)]
    vocab_b = [f"b{i}" for i in range(50)] + [f"s{i}" for i in range(50)]
    texts = _docs(vocab_a, 30, rng, 8) + _docs(vocab_b, 30, rng, 8)
    labels = [1] * 30 + [0] * 30
    a = blind_baseline(texts, labels, seed=3)
    b = blind_baseline(texts, labels, seed=3)
    assert a == b
    c = blind_baseline(texts, labels, seed=4)  # other folds and resamples
    assert set(c) == KEYS and (c["auc"], c["auc_ci"]) != (a["auc"], a["auc_ci"])


def test_warn_threshold_parameter() -> None:
    rng = np.random.default_rng(0)
    pre = _docs([f"alpha{i}" for i in range(200)], 20, rng)
    post = _docs([f"beta{i}" for i in range(200)], 20, rng)
    r = blind_baseline(pre + post, [1] * 20 + [0] * 20, warn_auc=1.01)
    assert r["warning"] is False and r["auc"] > 0.95


@pytest.mark.parametrize(
    "texts, labels",
    [([], []), (["one doc"], [1]), (["a doc", "b doc", "c doc"], [1, 1, 0]), (["x y", "z w"], [0, 0])],
)
def test_too_few_documents(texts: list[str], labels: list[int]) -> None:
    r = blind_baseline(texts, labels)
    assert set(r) == KEYS
    json.dumps(r, allow_nan=False)
    assert r["auc"] is None and r["auc_ci"] is None and r["accuracy"] is None
    assert r["warning"] is False
    assert any("fewer than 2 documents" in n for n in r["notes"])


def test_folds_reduced_to_minority_size() -> None:
    texts = ["red apple pie", "green apple tart", "blue sky cloud",
             "grey sky rain", "red cherry pie", "dark night sky"]
    r = blind_baseline(texts, [1, 1, 0, 0, 1, 0], folds=5)
    json.dumps(r, allow_nan=False)
    assert r["folds"] == 3
    assert any("folds reduced from 5 to 3" in n for n in r["notes"])
    assert r["auc"] is not None


def test_empty_texts_do_not_raise() -> None:
    r = blind_baseline(["", "", "", ""], [1, 0, 1, 0])
    json.dumps(r, allow_nan=False)
    assert r["auc"] is None and r["warning"] is False
    assert any("could not be fitted" in n for n in r["notes"])


def test_caller_errors_raise() -> None:
    with pytest.raises(ValueError):
        blind_baseline(["a b"], [1, 0])
    with pytest.raises(ValueError):
        blind_baseline(["a b", "c d"], [1, 2])


def test_auc_pinned() -> None:
    """The out-of-fold AUC computed by the hand-written ROC code that scikit-learn's replaced."""
    rng = np.random.default_rng(5)
    vocab_a = [f"a{i}" for i in range(10)] + [f"s{i}" for i in range(60)]
    vocab_b = [f"b{i}" for i in range(10)] + [f"s{i}" for i in range(60)]
    texts = _docs(vocab_a, 30, rng, 15) + _docs(vocab_b, 30, rng, 15)
    r = blind_baseline(texts, [1] * 30 + [0] * 30, n_boot=0)
    assert r["auc"] == pytest.approx(0.9866666666666666, abs=1e-12)
    assert r["accuracy"] == pytest.approx(0.95, abs=1e-12)


def test_blind_scores_are_what_blind_baseline_summarises() -> None:
    rng = np.random.default_rng(4)
    texts = _docs([f"w{i}" for i in range(200)], 30, rng)
    labels = [1] * 15 + [0] * 15
    notes: list[str] = []
    scores = blind_scores(texts, labels, folds=5, seed=7, notes=notes)
    summary = blind_baseline(texts, labels, seed=7, n_boot=0)
    assert scores.shape == (30,) and np.all((scores >= 0) & (scores <= 1))
    assert summary["auc"] == pytest.approx(roc_auc(scores, labels))
    both, same = blind_baseline_with_scores(texts, labels, folds=5, seed=7, warn_auc=0.75,
                                            n_boot=0)
    assert both == summary and np.array_equal(same, scores)
    # 3 documents in the smaller class: the folds shrink, with a note
    notes = []
    blind_scores(texts[:3] + texts[15:], [1] * 3 + [0] * 15, folds=5, seed=0, notes=notes)
    assert notes == ["folds reduced from 5 to 3: the smaller class has only 3 documents"]
    with pytest.raises(ValueError, match="fewer than 2 documents"):
        blind_scores(["a b", "c d", "e f"], [1, 0, 0], folds=2, seed=0)
    with pytest.raises(ValueError, match="could not be fitted"):
        blind_scores(["", "", "", ""], [1, 1, 0, 0], folds=2, seed=0)
    assert blind_baseline_with_scores(["", "", "", ""], [1, 1, 0, 0], folds=2, seed=0,
                                      warn_auc=0.75, n_boot=0)[1] is None
