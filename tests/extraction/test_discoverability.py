"""(n,p) thresholds, stable extraction probabilities, verdicts, document summaries, curves."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from copyprobe.extraction.discoverability import (
    DEFAULT_N,
    DEFAULT_P,
    document_summary,
    extractable,
    extraction_probability,
    log_pz_threshold,
    np_curve,
    pz_threshold,
    verdict_column,
    verdict_columns,
    window_verdicts,
)


@pytest.mark.parametrize("p", [1e-9, 0.001, 0.01, 0.1, 0.5, 0.999, 1.0])
def test_threshold_for_one_sample_is_p(p: float) -> None:
    assert pz_threshold(1, p) == p


@pytest.mark.parametrize("n", DEFAULT_N)
@pytest.mark.parametrize("p", DEFAULT_P)
def test_thresholds_match_the_naive_formula(n: int, p: float) -> None:
    naive = 1.0 - (1.0 - p) ** (1.0 / n)
    assert pz_threshold(n, p) == pytest.approx(naive, rel=1e-9)
    # the threshold is exactly where 1 - (1 - p_z)^n reaches p
    assert extraction_probability(log_pz_threshold(n, p), n) == pytest.approx(p, rel=1e-9)


def test_threshold_is_stable_where_the_naive_formula_fails() -> None:
    # (1 - 1e-12)^(1/1e6) rounds to 1 in float64: the naive formula gives 0 or noise
    t = pz_threshold(1_000_000, 1e-12)
    assert t == pytest.approx(1e-18, rel=1e-6)
    assert log_pz_threshold(1_000_000, 1e-12) == pytest.approx(math.log(1e-18), rel=1e-9)


@pytest.mark.parametrize("n, p", [(0, 0.5), (1.5, 0.5), (True, 0.5), (10, 0.0), (10, 1.5)])
def test_threshold_rejects_bad_arguments(n: object, p: float) -> None:
    with pytest.raises(ValueError):
        pz_threshold(n, p)


def test_extraction_probability_known_values_and_edges() -> None:
    assert extraction_probability(math.log(0.5), 1) == pytest.approx(0.5)
    assert extraction_probability(math.log(0.5), 2) == pytest.approx(0.75)
    assert extraction_probability(0.0, 10) == 1.0
    assert extraction_probability(-math.inf, 10) == 0.0
    assert math.isnan(extraction_probability(math.nan, 10))
    # tiny positive rounding counts as 0, a real positive is an error
    assert extraction_probability(1e-9, 3) == 1.0
    with pytest.raises(ValueError, match="<= 0"):
        extraction_probability(0.1, 3)


def test_extraction_probability_is_stable_at_both_ends() -> None:
    # very negative: n * p_z, not 0 by cancellation (1 - (1 - 1e-304)^1000 is 0 in floats)
    assert extraction_probability(-700.0, 1000) == pytest.approx(1000 * math.exp(-700.0),
                                                                 rel=1e-12)
    assert extraction_probability(-700.0, 1000) > 0.0
    # below the smallest double (e^-745) it underflows to 0, not NaN (the verdicts compare
    # logs and never need it)
    assert extraction_probability(-1000.0, 1000) == 0.0
    assert not extractable([-1000.0], 1000, 0.001)[0]
    # near 0: p_z = 1 - 1e-12, so 1 - (1 - p_z)^2 = 1 - 1e-24 (1.0 in float64) and, more
    # tellingly, for n = 1 the value is p_z itself
    assert extraction_probability(-1e-12, 1) == pytest.approx(1.0 - 1e-12, abs=1e-15)
    # log(1 - p_z) for p_z near 1 comes from expm1: the complement is exact
    x = -1e-10
    assert 1.0 - extraction_probability(x, 1) == pytest.approx(1e-10, rel=1e-5)


@pytest.mark.parametrize("n", [1, 10, 1000, 10**6])
def test_extraction_probability_is_monotone(n: int) -> None:
    log_pz = np.r_[-np.logspace(4, -14, 400), 0.0]
    prob = extraction_probability(log_pz, n)
    assert prob.shape == log_pz.shape
    assert np.all(np.diff(prob) >= 0)
    assert np.all((prob >= 0) & (prob <= 1))
    assert prob[-1] == 1.0


def test_extractable_and_names() -> None:
    t = log_pz_threshold(100, 0.5)
    got = extractable([t, t - 1e-9, 0.0, math.nan, -math.inf], 100, 0.5)
    assert got.dtype == bool
    assert got.tolist() == [True, False, True, False, False]
    assert verdict_column(100, 0.5) == "np_n100_p0.5"
    assert verdict_column(1000, 0.001) == "np_n1000_p0.001"
    names = verdict_columns()
    assert len(names) == 16 and len(set(names)) == 16
    assert names[:2] == ["np_n1_p0.001", "np_n1_p0.01"]


def test_window_verdicts_on_a_constructed_table() -> None:
    windows = pd.DataFrame({"log_pz": [math.log(0.6), math.log(0.02), math.log(1e-5), np.nan]})
    out = window_verdicts(windows, ns=(1, 100), ps=(0.5, 0.001))
    assert "np_n1_p0.5" in out and "log_pz" in out and "np_n1_p0.5" not in windows
    assert out["p_z"].iloc[:3].tolist() == pytest.approx([0.6, 0.02, 1e-5])
    assert math.isnan(out["p_z"].iloc[3])
    # thresholds: (1,.5) 0.5; (1,.001) 0.001; (100,.5) 0.00691; (100,.001) 1.0e-5
    assert out["np_n1_p0.5"].tolist() == [True, False, False, False]
    assert out["np_n1_p0.001"].tolist() == [True, True, False, False]
    assert out["np_n100_p0.5"].tolist() == [True, True, False, False]
    assert out["np_n100_p0.001"].tolist() == [True, True, False, False]  # 1e-5 < 1.0005e-5
    assert out["np_n100_p0.001"].dtype == bool
    # a row marked failed is failed even with a number in log_pz
    marked = window_verdicts(windows.assign(status=["failed", "scored", "scored", "failed"]),
                             ns=(1,), ps=(0.5,))
    assert marked["np_n1_p0.5"].tolist() == [False] * 4 and math.isnan(marked["p_z"].iloc[0])


def _windows(rows: list[tuple[str, int, float, bool, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["doc_id", "window_index", "log_pz", "greedy_match",
                                       "status"]).assign(n_tokens=50)


HIGH, LOW = math.log(0.9), math.log(1e-30)


def test_document_summary_runs_gaps_and_failures() -> None:
    windows = _windows([
        # a: extractable 0,1,2 | failed 3 | 4,5 | gap (no window 6) | 7,8 | 9 not: the
        # longest run is 3 (6 if a failed window did not end a run, 4 if a gap did not)
        ("a", 0, HIGH, True, "scored"), ("a", 1, HIGH, True, "scored"),
        ("a", 2, HIGH, True, "scored"), ("a", 3, np.nan, False, "failed"),
        ("a", 4, HIGH, True, "scored"), ("a", 5, HIGH, False, "scored"),
        ("a", 7, HIGH, True, "scored"), ("a", 8, HIGH, False, "scored"),
        ("a", 9, LOW, False, "scored"),
        # b (rows out of order): 2, 3, 4, 5 extractable, 0 and 1 not -> longest run 4
        ("b", 3, HIGH, True, "scored"), ("b", 0, LOW, False, "scored"),
        ("b", 5, HIGH, True, "scored"), ("b", 2, HIGH, True, "scored"),
        ("b", 1, LOW, False, "scored"), ("b", 4, HIGH, True, "scored"),
        # c: nothing scored
        ("c", 0, np.nan, False, "failed"), ("c", 1, np.nan, False, "failed"),
    ])
    out = document_summary(windows, ns=(1,), ps=(0.5,)).set_index("doc_id")
    assert out.loc["a", "n_windows"] == 9 and out.loc["a", "n_scored"] == 8
    assert out.loc["a", "n_failed"] == 1
    assert out.loc["a", "longest_run_np_n1_p0.5"] == 3
    assert out.loc["a", "frac_np_n1_p0.5"] == pytest.approx(7 / 8)
    assert out.loc["a", "greedy_frac"] == pytest.approx(5 / 8)
    assert out.loc["a", "max_pz"] == pytest.approx(0.9)
    assert out.loc["a", "mean_log_pz_per_token"] == pytest.approx((7 * HIGH + LOW) / 8 / 50)
    assert out.loc["b", "longest_run_np_n1_p0.5"] == 4
    assert out.loc["b", "frac_np_n1_p0.5"] == pytest.approx(4 / 6)
    # no scored window: unknown, not zero
    assert out.loc["c", "n_scored"] == 0 and out.loc["c", "n_failed"] == 2
    for column in ("frac_np_n1_p0.5", "max_log_pz", "max_pz", "mean_log_pz_per_token",
                   "greedy_frac"):
        assert math.isnan(out.loc["c", column]), column
    assert out.loc["c", "longest_run_np_n1_p0.5"] == 0


def test_document_summary_columns_and_default_grid() -> None:
    windows = _windows([("d", 0, math.log(0.02), True, "scored")])
    out = document_summary(windows)
    assert len(out) == 1
    for column in verdict_columns():
        assert f"frac_{column}" in out and f"longest_run_{column}" in out
    # p_z = 0.02: (n=1) only at p <= 0.01; (n=10) 1-(0.98)^10 = 0.183 -> p <= 0.1
    row = out.iloc[0]
    assert row["frac_np_n1_p0.01"] == 1.0 and row["frac_np_n1_p0.1"] == 0.0
    assert row["frac_np_n10_p0.1"] == 1.0 and row["frac_np_n10_p0.5"] == 0.0
    assert row["frac_np_n100_p0.5"] == 1.0


def test_document_summary_rejects_bad_tables() -> None:
    with pytest.raises(ValueError, match="appears more than once"):
        document_summary(_windows([("a", 0, HIGH, True, "scored"),
                                   ("a", 0, HIGH, True, "scored")]))
    with pytest.raises(ValueError, match="'skipped'"):
        document_summary(_windows([("a", 0, HIGH, True, "skipped")]))
    with pytest.raises(ValueError, match="n_tokens"):
        document_summary(_windows([("a", 0, HIGH, True, "scored")]).drop(columns="n_tokens"))


def test_np_curve() -> None:
    windows = _windows([("a", 0, math.log(0.6), True, "scored"),
                        ("a", 1, math.log(0.02), False, "scored"),
                        ("a", 2, np.nan, False, "failed"),
                        ("b", 0, LOW, False, "scored")])
    curve = np_curve(windows, ns=(1, 10), ps=(0.5,))
    assert list(curve.columns) == ["n", "p", "threshold", "fraction", "n_windows"]
    assert curve["n_windows"].tolist() == [3, 3]
    assert curve["fraction"].tolist() == pytest.approx([1 / 3, 1 / 3])
    assert curve["threshold"].tolist() == pytest.approx([0.5, pz_threshold(10, 0.5)])
    empty = np_curve(windows.iloc[2:3], ns=(1,), ps=(0.5,))
    assert empty["n_windows"].tolist() == [0] and math.isnan(empty["fraction"].iloc[0])
