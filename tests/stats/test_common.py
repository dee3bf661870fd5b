"""The shared statistics helpers: bootstrap intervals (scipy) and their edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.stats.common import bootstrap_ci, cliffs_delta, fmt_p, tpr_at_fpr


def _delta(pre, post, axis=-1):
    return cliffs_delta(post, pre, axis=axis)


def test_one_document_set_resamples_to_itself() -> None:
    """A one-value sample is constant under resampling; the other sample still varies."""
    pre = np.array([5.0])
    post = np.random.default_rng(0).integers(0, 11, 40).astype(float)
    (ci,) = bootstrap_ci([pre, post], _delta, n_boot=4000, ci=0.9, seed=1)
    rng = np.random.default_rng(2)
    reps = [cliffs_delta(rng.choice(post, post.size), pre) for _ in range(4000)]
    lo, hi = np.quantile(reps, [0.05, 0.95])
    assert ci[0] == pytest.approx(lo, abs=0.05) and ci[1] == pytest.approx(hi, abs=0.05)
    assert ci[0] < ci[1]


def test_deterministic_and_empty_sample_raises() -> None:
    x = np.arange(20.0)
    a = bootstrap_ci([x], lambda s, axis=-1: s.mean(axis=axis), n_boot=200, ci=0.95, seed=3)
    b = bootstrap_ci([x], lambda s, axis=-1: s.mean(axis=axis), n_boot=200, ci=0.95, seed=3)
    assert a == b and a[0][0] < 9.5 < a[0][1]
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_ci([x, np.array([])], _delta, n_boot=10, ci=0.95, seed=0)


def test_fmt_p_and_tpr() -> None:
    assert fmt_p(None) == "p undefined"
    assert fmt_p(0.00001) == "p=1.0e-05"
    assert fmt_p(0.0123456) == "p=0.0123"
    # 100 negatives: one false positive (the 8.5) is allowed at 1% FPR, none below
    scores = np.r_[np.full(10, 9.0), np.full(10, 1.0), 8.5, np.zeros(99)]
    labels = np.r_[np.ones(20), np.zeros(100)]
    assert tpr_at_fpr(scores, labels, 0.01) == pytest.approx(1.0)
    assert tpr_at_fpr(scores, labels, 0.0) == pytest.approx(0.5)
    assert tpr_at_fpr(scores, labels, 0.005) == pytest.approx(0.5)
