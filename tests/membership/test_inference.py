"""Dataset inference: its false-positive rate on null data and its power on shifted data."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.membership.inference import (
    MIN_PER_SET,
    dataset_inference,
    false_positive_rate,
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
