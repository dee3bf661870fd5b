"""Members against non-members: AUC, TPR at low FPR with intervals, beside the blind
baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copyprobe.membership.compare import compare_sets
from copyprobe.stats.common import tpr_at_fpr, tpr_at_fpr_along


def test_the_vectorised_tpr_agrees_with_the_roc_curve():
    rng = np.random.default_rng(1)
    for n_neg, fpr in ((50, 0.01), (300, 0.01), (1500, 0.001), (10, 0.2)):
        pos = np.round(rng.normal(1, 1, 40), 1)  # rounded: ties between the classes
        neg = np.round(rng.normal(0, 1, n_neg), 1)
        y = np.r_[np.ones(40), np.zeros(n_neg)]
        assert tpr_at_fpr_along(pos, neg, fpr) == pytest.approx(
            tpr_at_fpr(np.r_[pos, neg], y, fpr))
    rows = tpr_at_fpr_along(np.stack([pos, pos]), np.stack([neg, neg]), 0.2)
    assert rows.shape == (2,) and rows[0] == rows[1]


def _docs(shift: float, n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    words = ["river", "stone", "cloud", "field", "light", "quiet", "paper", "north"]
    texts = [" ".join(rng.choice(words, 12)) for _ in range(2 * n)]
    loss = rng.normal(3.0, 0.3, 2 * n) - shift * member  # members: lower loss
    return pd.DataFrame({"doc_id": [f"d{i}" for i in range(2 * n)], "text": texts,
                         "member": member, "loss": loss, "min_k_10": -loss})


def test_a_separating_score_beside_a_blind_baseline_near_chance():
    out = compare_sets(_docs(shift=1.5), ["loss", "min_k_10"], n_boot=300)
    loss = out["measures"]["loss"]
    assert loss["auc"] > 0.95 and loss["auc_ci"][0] > 0.85
    assert loss["direction"] == "lower" and out["measures"]["min_k_10"]["direction"] == "higher"
    assert out["measures"]["min_k_10"]["auc"] == pytest.approx(loss["auc"])
    assert 0.0 <= loss["tpr_at_1pct_fpr"] <= 1.0 and loss["tpr_at_1pct_fpr_ci"] is not None
    # random words in both classes: the blind baseline is about chance
    assert abs(out["blind_auc"] - 0.5) < 0.2
    assert loss["auc_minus_blind"] == pytest.approx(loss["auc"] - out["blind_auc"], abs=0.05)
    assert not out["small_sample"]
    assert any("TPR at FPR 0" in n for n in out["notes"])  # 30 non-members at 1%


def test_no_signal_gives_an_interval_around_chance_and_small_sets_are_flagged():
    out = compare_sets(_docs(shift=0.0), ["loss"], n_boot=300)
    lo, hi = out["measures"]["loss"]["auc_ci"]
    assert lo < 0.5 < hi
    small = compare_sets(_docs(shift=1.0, n=5), ["loss"], n_boot=100)
    assert small["small_sample"] and "fewer than 10" in small["small_sample_warning"]
    with pytest.raises(ValueError, match="at least 2 documents in each class"):
        compare_sets(_docs(shift=1.0, n=1), ["loss"], n_boot=0)
