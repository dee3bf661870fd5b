"""per_document_stats: effect sizes, tests, ROC (checked against sklearn) and degenerate input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from copyprobe.stats import cliffs_delta, per_document_stats
from copyprobe.stats.per_document import MIN_DOCUMENTS

KEYS = {
    "n_pre", "n_post", "mean_pre", "mean_post", "median_pre", "median_post",
    "mean_pre_ci", "mean_post_ci", "cliffs_delta", "cliffs_delta_ci", "ks", "ks_p",
    "kw_h", "kw_p", "mw_u", "mw_p", "roc_auc", "roc_auc_ci", "tpr_at_1pct_fpr",
    "small_sample", "small_sample_warning", "notes", "verdict",
}


def _samples(seed: int = 0, n_pre: int = 300, n_post: int = 250) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # integer longest-match lengths: many ties, pre shifted up
    return rng.poisson(9, n_pre).astype(float), rng.poisson(7, n_post).astype(float)


def _brute_delta(x, y) -> float:
    x = np.asarray(x, float)[:, None]
    y = np.asarray(y, float)[None, :]
    return float(np.sign(x - y).mean())


# ---------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("seed", range(5))
def test_cliffs_delta_matches_bruteforce_and_mannwhitney(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, rng.integers(1, 40))
    y = rng.integers(0, 6, rng.integers(1, 40))
    d = cliffs_delta(x, y)
    assert d == pytest.approx(_brute_delta(x, y), abs=1e-12)
    u = stats.mannwhitneyu(x, y).statistic
    assert d == pytest.approx(2 * u / (x.size * y.size) - 1, abs=1e-12)


def test_cliffs_delta_edges() -> None:
    assert cliffs_delta([], [1.0]) is None
    assert cliffs_delta([1.0], []) is None
    assert cliffs_delta([1, 1], [1, 1]) == 0.0
    assert cliffs_delta([2, 3], [0, 1]) == 1.0
    with pytest.raises(ValueError):
        cliffs_delta([float("nan")], [1.0])


def test_cliffs_delta_along_an_axis_matches_each_row() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, (7, 11)).astype(float)
    y = rng.integers(0, 6, (7, 5)).astype(float)
    rows = cliffs_delta(x, y, axis=-1)
    assert rows.shape == (7,)
    for i in range(7):
        assert rows[i] == pytest.approx(_brute_delta(x[i], y[i]), abs=1e-12)
    cols = cliffs_delta(x.T, y.T, axis=0)
    np.testing.assert_allclose(cols, rows, atol=1e-12)


# Values computed by the hand-written ROC code that scikit-learn's replaced; they must not move.
PINNED_ROC = {
    0: (0.7307777777777777, 0.1),
    1: (0.7402485380116959, 0.07368421052631578),
    2: (0.685534420289855, 0.034782608695652174),
    3: (0.6789691358024692, 0.014814814814814815),
}


@pytest.mark.parametrize("seed", sorted(PINNED_ROC))
def test_roc_numbers_pinned(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pre = rng.poisson(9, 150 + seed * 40).astype(float)
    post = rng.poisson(7, 120 + seed * 60).astype(float)
    r = per_document_stats(pre, post, n_boot=0)
    auc, tpr = PINNED_ROC[seed]
    assert r["roc_auc"] == pytest.approx(auc, abs=1e-12)
    assert r["tpr_at_1pct_fpr"] == pytest.approx(tpr, abs=1e-12)


# ---------------------------------------------------------------------------- main function


def test_keys_types_and_scipy() -> None:
    pre, post = _samples()
    r = per_document_stats(pre, post, n_boot=500)
    assert set(r) == KEYS
    json.dumps(r, allow_nan=False)
    assert r["n_pre"] == 300 and r["n_post"] == 250
    assert r["mean_pre"] == pytest.approx(pre.mean())
    assert r["median_post"] == pytest.approx(np.median(post))
    ks = stats.ks_2samp(post, pre)
    kw = stats.kruskal(post, pre)
    mw = stats.mannwhitneyu(post, pre, alternative="two-sided")
    assert r["ks"] == pytest.approx(ks.statistic) and r["ks_p"] == pytest.approx(ks.pvalue)
    assert r["kw_h"] == pytest.approx(kw.statistic) and r["kw_p"] == pytest.approx(kw.pvalue)
    assert r["mw_u"] == pytest.approx(mw.statistic) and r["mw_p"] == pytest.approx(mw.pvalue)
    assert r["cliffs_delta"] == pytest.approx(_brute_delta(post, pre), abs=1e-12)
    assert r["cliffs_delta"] < 0
    assert r["verdict"].startswith("D_pre higher")
    assert r["notes"] == []  # 250 non-members: no small-sample note


def test_auc_identity_and_sklearn() -> None:
    for seed in range(4):
        pre, post = _samples(seed, 60 + seed, 45)
        r = per_document_stats(pre, post, n_boot=200, seed=seed)
        assert r["roc_auc"] == pytest.approx((1 - r["cliffs_delta"]) / 2, abs=1e-12)
        y = np.r_[np.ones(pre.size), np.zeros(post.size)]
        assert r["roc_auc"] == pytest.approx(roc_auc_score(y, np.r_[pre, post]), abs=1e-12)
        lo, hi = r["roc_auc_ci"]
        dlo, dhi = r["cliffs_delta_ci"]
        assert lo == pytest.approx((1 - dhi) / 2) and hi == pytest.approx((1 - dlo) / 2)


def test_bootstrap_cis_contain_estimates_and_are_deterministic() -> None:
    pre, post = _samples(3)
    a = per_document_stats(pre, post, n_boot=1000, seed=7)
    b = per_document_stats(pre, post, n_boot=1000, seed=7)
    c = per_document_stats(pre, post, n_boot=1000, seed=8)
    assert a == b
    assert a["cliffs_delta_ci"] != c["cliffs_delta_ci"]
    for est, ci in (("mean_pre", "mean_pre_ci"), ("mean_post", "mean_post_ci"),
                    ("cliffs_delta", "cliffs_delta_ci"), ("roc_auc", "roc_auc_ci")):
        lo, hi = a[ci]
        assert lo <= a[est] <= hi
    # CI of the mean roughly matches the normal approximation
    se = pre.std(ddof=1) / np.sqrt(pre.size)
    assert a["mean_pre_ci"][1] - a["mean_pre_ci"][0] == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_bootstrap_delta_matches_index_resampling() -> None:
    """The multinomial-count bootstrap has the distribution of index resampling."""
    pre, post = _samples(5, 80, 70)
    r = per_document_stats(pre, post, n_boot=4000, seed=1)
    rng = np.random.default_rng(123)
    reps = [
        cliffs_delta(rng.choice(post, post.size), rng.choice(pre, pre.size)) for _ in range(4000)
    ]
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert r["cliffs_delta_ci"][0] == pytest.approx(lo, abs=0.03)
    assert r["cliffs_delta_ci"][1] == pytest.approx(hi, abs=0.03)


def test_tpr_at_1pct_fpr() -> None:
    # 200 non-members: 2 false positives are allowed at 1% FPR
    post = np.r_[np.arange(198) % 10, 50, 60].astype(float)  # two high-scoring non-members
    pre = np.r_[np.full(30, 100.0), np.full(30, 55.0), np.full(40, 1.0)]
    r = per_document_stats(pre, post, n_boot=50)
    # threshold 55: FP = 1 (the 60) -> TPR 0.6; threshold 50: FP = 2 -> TPR 0.6; lower: more FP
    assert r["tpr_at_1pct_fpr"] == pytest.approx(0.6)
    assert not any("fewer than 100" in n for n in r["notes"])
    y = np.r_[np.ones(pre.size), np.zeros(post.size)]
    fpr, tpr, _ = sk_roc_curve(y, np.r_[pre, post], drop_intermediate=False)
    assert r["tpr_at_1pct_fpr"] == pytest.approx(tpr[fpr <= 0.01].max())


def test_tpr_small_negative_set_note() -> None:
    pre = [10.0, 9.0, 8.0, 1.0]
    post = [9.0, 2.0, 1.0]
    r = per_document_stats(pre, post, n_boot=50)
    assert r["tpr_at_1pct_fpr"] == pytest.approx(0.25)  # only the 10 beats every non-member
    assert any("fewer than 100 non-members" in n for n in r["notes"])


def test_no_difference() -> None:
    rng = np.random.default_rng(11)
    pre, post = rng.poisson(5, 200), rng.poisson(5, 200)
    r = per_document_stats(pre, post, n_boot=300)
    assert r["verdict"].startswith("no difference detected")
    lo, hi = r["cliffs_delta_ci"]
    assert lo < 0 < hi


# ---------------------------------------------------------------------------- degenerate


def _check_clean(r: dict) -> None:
    assert set(r) == KEYS
    json.dumps(r, allow_nan=False)


def test_all_zeros() -> None:
    r = per_document_stats([0] * 10, [0] * 12, n_boot=100)
    _check_clean(r)
    assert r["kw_h"] is None and r["kw_p"] is None and r["mw_p"] is None
    assert "Kruskal-Wallis undefined: all values identical" in r["notes"]
    assert r["cliffs_delta"] == 0.0 and r["roc_auc"] == 0.5 and r["cliffs_delta_ci"] == [0.0, 0.0]
    assert "no test possible" in r["verdict"]


def test_identical_constant() -> None:
    r = per_document_stats([4, 4, 4], [4, 4], n_boot=100)
    _check_clean(r)
    assert r["verdict"] == "all scores identical: no test possible"


@pytest.mark.parametrize("pre, post", [([], []), ([], [1, 2, 3]), ([1, 2], [])])
def test_empty_groups(pre: list, post: list) -> None:
    r = per_document_stats(pre, post, n_boot=100)
    _check_clean(r)
    assert r["cliffs_delta"] is None and r["roc_auc"] is None and r["tpr_at_1pct_fpr"] is None
    assert any("no scores in" in n for n in r["notes"])
    assert "no test possible" in r["verdict"]
    if post:
        assert r["mean_post"] == pytest.approx(2.0) and r["mean_post_ci"] is not None


def test_single_document_each() -> None:
    r = per_document_stats([7.0], [3.0], n_boot=100)
    _check_clean(r)
    assert r["cliffs_delta"] == -1.0 and r["roc_auc"] == 1.0
    assert r["mean_pre_ci"] == [7.0, 7.0]
    assert any("single document" in n for n in r["notes"])


def test_nonfinite_dropped_and_no_boot() -> None:
    r = per_document_stats([1.0, float("nan"), 3.0], [float("inf"), 0.0, 1.0], n_boot=0)
    _check_clean(r)
    assert r["n_pre"] == 2 and r["n_post"] == 2
    assert r["cliffs_delta_ci"] is None and r["mean_pre_ci"] is None
    assert any("n_boot=0" in n for n in r["notes"])
    assert sum("non-finite" in n for n in r["notes"]) == 2


def test_bad_parameters_raise() -> None:
    with pytest.raises(ValueError):
        per_document_stats([1], [2], ci=1.5)
    with pytest.raises(ValueError):
        per_document_stats([1], [2], n_boot=-1)


# ---------------------------------------------------------------------------- small samples


@pytest.mark.parametrize("n_pre, n_post, small", [(3, 3, True), (MIN_DOCUMENTS - 1, 50, True),
                                                  (50, MIN_DOCUMENTS - 1, True),
                                                  (MIN_DOCUMENTS, MIN_DOCUMENTS, False),
                                                  (0, 40, True)])
def test_small_sample_flag(n_pre: int, n_post: int, small: bool) -> None:
    pre, post = _samples(2, n_pre, n_post)
    r = per_document_stats(pre, post, n_boot=100)
    _check_clean(r)
    assert MIN_DOCUMENTS == 10
    assert r["small_sample"] is small
    if small:
        assert r["small_sample_warning"] == (
            f"small sample: D_pre has {n_pre} and D_post has {n_post} document(s), fewer than "
            "10 in a set; the tests, intervals and verdict carry little information")
    else:
        assert r["small_sample_warning"] == ""
