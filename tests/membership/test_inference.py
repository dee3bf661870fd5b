"""Dataset inference: its false-positive rate on null data and its power on shifted data."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.membership.cli import DI_AGGREGATES
from copyprobe.membership.inference import (
    AGGREGATES,
    DEFAULT_AGGREGATE,
    MIN_PER_SET,
    dataset_inference,
    false_positive_rate,
    harmonic_mean,
    split_p_value,
    twice_median,
)


def test_on_null_data_the_false_positive_rate_is_at_most_about_alpha():
    rng = np.random.default_rng(7)
    nonmembers = rng.normal(size=(60, 4))
    out = false_positive_rate(nonmembers, halvings=200, splits=5, seed=3)
    assert out["halvings"] == 200 and out["rate"] <= 0.08, out
    assert out["rate_ci"][0] <= out["rate"] <= out["rate_ci"][1]


def test_on_shifted_data_the_power_is_high():
    rng = np.random.default_rng(11)
    hits = 0
    for trial in range(20):
        suspect = rng.normal(size=(50, 4)) + np.array([1.0, 0.0, 0.0, 0.0])
        validation = rng.normal(size=(50, 4))
        out = dataset_inference(suspect, validation, splits=5, seed=trial)
        hits += out["p_value"] < 0.05
    assert hits >= 16
    assert len(out["p_values"]) == 5 and out["n_suspect"] == 50 and out["features"] == 4


def test_the_direction_is_one_sided():
    rng = np.random.default_rng(5)
    lower = rng.normal(size=(40, 2)) - 1.0
    # a suspect set further from the validation set in the other direction is also
    # "separable": the linear model learns the sign on the fitting half, so the test is
    # about separability; identical data gives a high p-value
    same = rng.normal(size=(40, 2))
    assert dataset_inference(lower, rng.normal(size=(40, 2)), seed=1)["p_value"] < 0.05
    assert dataset_inference(same, same.copy(), seed=1)["p_value"] > 0.2


def test_too_small_sets_say_what_they_need():
    x = np.zeros((MIN_PER_SET - 1, 3))
    with pytest.raises(ValueError, match=f"at least {MIN_PER_SET} documents in each set"):
        dataset_inference(x, np.zeros((30, 3)))
    with pytest.raises(ValueError, match=f"at least {2 * MIN_PER_SET} non-member"):
        false_positive_rate(np.zeros((2 * MIN_PER_SET - 1, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        dataset_inference(np.full((20, 1), np.nan), np.zeros((20, 1)))


def test_the_aggregates_on_hand_worked_p_values():
    # harmonic mean of 0.01, 0.04, 0.05: 3 / (100 + 25 + 20) = 3 / 145
    assert harmonic_mean([0.01, 0.04, 0.05]) == pytest.approx(3 / 145)
    assert harmonic_mean([0.3, 0.0]) == 0.0
    # twice the median of 0.01, 0.04, 0.05 is 0.08; of 0.4, 0.6, 0.9 it is capped at 1
    assert twice_median([0.05, 0.01, 0.04]) == pytest.approx(0.08)
    assert twice_median([0.4, 0.6, 0.9]) == 1.0
    assert AGGREGATES[DEFAULT_AGGREGATE] is twice_median
    # the command's choices are these names, the default first
    assert DI_AGGREGATES[0] == DEFAULT_AGGREGATE and set(DI_AGGREGATES) == set(AGGREGATES)


def test_the_p_value_is_the_chosen_combination_of_the_splits():
    rng = np.random.default_rng(2)
    s, v = rng.normal(size=(30, 3)) + 0.3, rng.normal(size=(30, 3))
    for name, combine in AGGREGATES.items():
        out = dataset_inference(s, v, splits=4, seed=9, aggregate=name)
        assert out["aggregate"] == name and out["p_value"] == combine(out["p_values"])
    # the same seed gives the same splits whatever the combination
    assert (dataset_inference(s, v, splits=4, seed=9, aggregate="harmonic")["p_values"]
            == dataset_inference(s, v, splits=4, seed=9)["p_values"])
    with pytest.raises(ValueError, match="aggregate 'fisher' is none of"):
        dataset_inference(s, v, aggregate="fisher")


def test_one_split_is_fit_on_one_half_and_welch_tested_on_the_other():
    # a single split, recomputed by hand from the same permutation: the clipped and
    # standardised fitting halves fit the logistic regression, whose decision values on
    # the held-out halves go into a one-sided Welch t-test
    from scipy import stats
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    s, v = rng.normal(size=(12, 2)) + 0.5, rng.normal(size=(10, 2))
    p = split_p_value(s, v, np.random.default_rng(1))
    r = np.random.default_rng(1)
    si, vi = r.permutation(12), r.permutation(10)
    fit = np.vstack([s[si[:6]], v[vi[:5]]])
    lo, hi = np.quantile(fit, [0.025, 0.975], axis=0)
    clipped = np.clip(fit, lo, hi)
    mu, sd = clipped.mean(axis=0), clipped.std(axis=0)
    model = LogisticRegression(max_iter=1000).fit((clipped - mu) / sd, np.r_[[1] * 6, [0] * 5])

    def dv(x):
        return model.decision_function((np.clip(x, lo, hi) - mu) / sd)

    want = stats.ttest_ind(dv(s[si[6:]]), dv(v[vi[5:]]), equal_var=False,
                           alternative="greater").pvalue
    assert p == pytest.approx(want, rel=1e-9)


def test_the_smallest_detecting_size():
    from copyprobe.membership.inference import smallest_detecting_size

    rng = np.random.default_rng(8)
    members, nonmembers = rng.normal(size=(30, 2)) + 3.0, rng.normal(size=(30, 2))
    out = smallest_detecting_size(members, nonmembers, splits=3, seed=1)
    # three standard deviations apart: the smallest set allowed already detects them
    assert out["size"] == MIN_PER_SET and out["p_values"][str(MIN_PER_SET)] < 0.05
    same = rng.normal(size=(12, 2))
    none = smallest_detecting_size(same, rng.normal(size=(12, 2)), splits=3, seed=1)
    assert none["size"] is None and list(none["p_values"]) == ["10", "11", "12"]
