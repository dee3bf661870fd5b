"""Clopper-Pearson intervals, the sequential test on deterministic samplers, resumption, and
the simulated comparison with a fixed design."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from copyprobe.extraction.discoverability import pz_threshold
from copyprobe.extraction.montecarlo import (
    MCResult,
    SequentialTest,
    clopper_pearson,
    compare_sequential_fixed,
    fixed_design_samples,
    run_sequential,
)


def test_clopper_pearson_known_values() -> None:
    lo, hi = clopper_pearson(0, 10, 0.05)
    assert lo == 0.0
    assert hi == pytest.approx(1.0 - 0.025 ** (1 / 10), rel=1e-12)
    lo, hi = clopper_pearson(10, 10, 0.05)
    assert lo == pytest.approx(0.025 ** (1 / 10), rel=1e-12) and hi == 1.0
    assert clopper_pearson(0, 0) == (0.0, 1.0)
    # 3 of 10 at 95%: the textbook interval (0.0667, 0.6525)
    lo, hi = clopper_pearson(3, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.0667, 0.6525)
    # the defining property: each tail has probability alpha/2 at the interval's ends
    assert stats.binom.sf(2, 10, lo) == pytest.approx(0.025, rel=1e-9)
    assert stats.binom.cdf(3, 10, hi) == pytest.approx(0.025, rel=1e-9)


def test_clopper_pearson_arrays_and_errors() -> None:
    lo, hi = clopper_pearson(np.array([0, 5, 10]), np.array([10, 10, 10]))
    assert lo[0] == 0.0 and hi[2] == 1.0
    assert np.all(lo < hi)
    for k, m in ((-1, 10), (11, 10), (1.5, 10)):
        with pytest.raises(ValueError, match="0 <= k <= m"):
            clopper_pearson(k, m)
    with pytest.raises(ValueError, match="alpha"):
        clopper_pearson(1, 10, alpha=0.0)


def test_test_settings_and_bonferroni_level() -> None:
    test = SequentialTest(threshold=0.5)
    assert test.min_samples == test.batch == 10
    assert test.look_points() == list(range(10, 101, 10))
    assert test.planned_looks == math.ceil(100 / 10) and test.look_alpha == pytest.approx(0.005)
    odd = SequentialTest(threshold=0.5, batch=30, max_samples=100, min_samples=60)
    assert odd.look_points() == [60, 90, 100] and odd.planned_looks == 3
    for bad in ({"threshold": 0.0}, {"threshold": 0.5, "alpha": 1.0},
                {"threshold": 0.5, "batch": 0}, {"threshold": 0.5, "max_samples": 5,
                                                 "min_samples": 10}):
        with pytest.raises(ValueError):
            SequentialTest(**bad)


class Recorder:
    """A deterministic sampler that records the calls it gets."""

    def __init__(self, hit) -> None:
        self.hit = hit
        self.calls: list[tuple[int, int]] = []

    def __call__(self, start: int, count: int) -> list[bool]:
        self.calls.append((start, count))
        return [self.hit(i) for i in range(start, start + count)]


def test_all_hits_decides_extractable_after_one_batch() -> None:
    sampler = Recorder(lambda i: True)
    result = run_sequential(sampler, SequentialTest(threshold=pz_threshold(1, 0.5)))
    assert result.decision == "extractable"
    assert (result.hits, result.samples, result.looks) == (10, 10, 1)
    assert sampler.calls == [(0, 10)]
    assert result.lo >= 0.5 and result.hi == 1.0 and result.estimate == 1.0


def test_no_hits_decides_not_extractable_early() -> None:
    sampler = Recorder(lambda i: False)
    result = run_sequential(sampler, SequentialTest(threshold=0.5))
    assert result.decision == "not_extractable"
    assert result.samples == 10 and result.hi < 0.5
    # a low threshold needs more zero-hit samples: hi = 1 - (alpha'/2)^(1/m) < 0.05
    sampler = Recorder(lambda i: False)
    result = run_sequential(sampler, SequentialTest(threshold=0.05, max_samples=200))
    m = math.ceil(math.log(0.05 / 20 / 2) / math.log(0.95))
    assert result.samples == math.ceil(m / 10) * 10
    assert result.decision == "not_extractable" and result.looks == result.samples // 10


def test_calls_have_increasing_starts_and_end_at_max_samples() -> None:
    # hits at exactly the threshold rate never decide: the test runs to max_samples, and the
    # last call asks for the remainder only
    sampler = Recorder(lambda i: i % 2 == 0)
    result = run_sequential(sampler, SequentialTest(threshold=0.5, batch=30, max_samples=100))
    assert result.decision == "undecided"
    assert sampler.calls == [(0, 30), (30, 30), (60, 30), (90, 10)]
    assert (result.hits, result.samples, result.looks) == (50, 100, 4)
    assert result.lo < 0.5 <= result.hi and result.estimate == 0.5


def test_resumes_from_a_cache_after_a_kill() -> None:
    """A sampler backed by a cache keyed by sample index: a first run killed mid-way leaves
    its samples, the rerun calls the model only for the indices not yet cached."""
    cache: dict[int, bool] = {}
    generated: list[int] = []
    truth = np.random.default_rng(3).random(100) < 0.4

    def sample(start: int, count: int, fail_at: int | None = None) -> list[bool]:
        out = []
        for i in range(start, start + count):
            if i not in cache:
                if fail_at is not None and i == fail_at:
                    raise KeyboardInterrupt
                generated.append(i)
                cache[i] = bool(truth[i])
            out.append(cache[i])
        return out

    test = SequentialTest(threshold=0.5)
    with pytest.raises(KeyboardInterrupt):
        run_sequential(lambda s, c: sample(s, c, fail_at=25), test)
    assert generated == list(range(25))
    resumed = run_sequential(sample, test)
    assert generated == list(range(resumed.samples))  # every index generated exactly once
    fresh = run_sequential(lambda s, c: [bool(t) for t in truth[s:s + c]], test)
    assert resumed == fresh


def test_wrong_flag_count_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"sample\(0, 10\) returned 9 flags"):
        run_sequential(lambda s, c: [False] * (c - 1), SequentialTest(threshold=0.5))


def test_mc_result_dict() -> None:
    assert MCResult(0, 0, 0.0, 1.0, "undecided", 0).as_dict()["estimate"] is None
    assert math.isnan(MCResult(0, 0, 0.0, 1.0, "undecided", 0).estimate)
    assert MCResult(3, 10, 0.1, 0.6, "undecided", 1).as_dict()["estimate"] == 0.3


def test_fixed_design_samples() -> None:
    # at rate 0 the width is 1 - (alpha/2)^(1/m): the smallest m below 0.1 in closed form
    m = fixed_design_samples(0.1, 0.0, 0.05)
    assert m == math.ceil(math.log(0.025) / math.log(0.9))
    lo, hi = clopper_pearson(round(0.3 * 200), 200)
    m = fixed_design_samples(hi - lo, 0.3, 0.05)
    assert m <= 200
    lo, hi = clopper_pearson(round(0.3 * (m - 1)), m - 1)
    assert hi - lo > clopper_pearson(60, 200)[1] - clopper_pearson(60, 200)[0]
    with pytest.raises(ValueError, match="no fixed design"):
        fixed_design_samples(1e-4, 0.5, limit=1000)


def test_compare_sequential_fixed_errors_and_savings() -> None:
    test = SequentialTest(threshold=pz_threshold(1, 0.5))
    table = compare_sequential_fixed([0.0, 0.05, 0.5, 0.9], test, rng_seed=0, trials=400)
    assert list(table["q"]) == [0.0, 0.05, 0.5, 0.9]
    row = table.set_index("q")
    # far from the threshold the test stops at its first look and is never wrong
    assert row.loc[0.0, "seq_mean_samples"] == 10 and row.loc[0.0, "seq_not_extractable"] == 1
    assert row.loc[0.9, "seq_extractable"] == 1 and row.loc[0.9, "seq_error"] == 0
    assert row.loc[0.0, "saving"] > 1
    # at the threshold it mostly cannot decide, and errs at most at rate alpha
    assert row.loc[0.5, "seq_undecided"] > 0.5
    assert (table["seq_error"] <= test.alpha + 0.02).all()
    assert (table["seq_extractable"] + table["seq_not_extractable"]
            + table["seq_undecided"]).to_numpy() == pytest.approx(1.0)
    again = compare_sequential_fixed([0.0, 0.05, 0.5, 0.9], test, rng_seed=0, trials=400)
    assert again.equals(table)
