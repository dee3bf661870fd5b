"""paper_stats reproduces the MSR paper's Table 1 (Wikipedia rows) and scipy directly."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from copyprobe.stats import cliffs_delta, paper_stats

# Authors' released Wikipedia vectors, f_k for k = 5..12, n = 6 splits.
WIKI = {
    "GPT-3.5": (
        [32, 20, 14, 10, 6, 5, 5, 4],
        [153, 124, 108, 97, 87, 80, 74, 69],
        # Table 1: delta, KS, H, p
        (-1.0, 1.0, 11.31, 0.0008),
    ),
    "GPT-4": (
        [34, 20, 12, 7, 4, 3, 2, 2],
        [97, 72, 59, 46, 34, 26, 19, 14],
        (-0.828, 0.75, 7.77, 0.0053),
    ),
    "LLaMA": (
        [74, 45, 26, 18, 11, 10, 7, 5],
        [125, 87, 63, 53, 34, 27, 18, 14],
        (-0.578, 0.5, 3.78, 0.0519),
    ),
}

KEYS = {
    "cliffs_delta", "ks", "ks_p", "kw_h", "kw_p", "n_pre", "n_post",
    "f_pre", "f_post", "notes", "verdict",
}


def _json_clean(d: dict) -> None:
    json.dumps(d, allow_nan=False)  # raises on NaN / inf / numpy scalars


@pytest.mark.parametrize("model", list(WIKI))
def test_table1_wikipedia(model: str) -> None:
    post, pre, (delta, ks, h, p) = WIKI[model]
    r = paper_stats(pre, post)
    assert set(r) == KEYS
    assert round(r["cliffs_delta"], 3) == delta
    assert round(r["ks"], 2) == ks
    assert round(r["kw_h"], 2) == h
    assert round(r["kw_p"], 4) == p
    assert r["n_pre"] == r["n_post"] == 8
    assert r["f_pre"] == [float(v) for v in pre]
    assert r["f_post"] == [float(v) for v in post]
    assert r["notes"] == []
    _json_clean(r)


@pytest.mark.parametrize("model", list(WIKI))
def test_matches_scipy_directly(model: str) -> None:
    post, pre, _ = WIKI[model]
    r = paper_stats(pre, post)
    u = stats.mannwhitneyu(post, pre, method="asymptotic").statistic
    ks = stats.ks_2samp(post, pre)
    kw = stats.kruskal(post, pre)
    assert r["cliffs_delta"] == pytest.approx(2 * u / (8 * 8) - 1, abs=1e-12)
    assert r["ks"] == pytest.approx(ks.statistic, abs=1e-12)
    assert r["ks_p"] == pytest.approx(ks.pvalue, rel=1e-12)
    assert r["kw_h"] == pytest.approx(kw.statistic, rel=1e-12)
    assert r["kw_p"] == pytest.approx(kw.pvalue, rel=1e-12)
    # the MW convention equals the direct pairwise definition P(post>pre) - P(post<pre)
    assert r["cliffs_delta"] == pytest.approx(cliffs_delta(post, pre), abs=1e-12)
    for key in ("cliffs_delta", "ks", "ks_p", "kw_h", "kw_p"):
        assert type(r[key]) is float


def test_verdicts() -> None:
    post, pre, _ = WIKI["GPT-3.5"]
    assert paper_stats(pre, post)["verdict"] == "D_pre higher (p=0.0008)"
    post, pre, _ = WIKI["GPT-4"]
    assert paper_stats(pre, post)["verdict"] == "D_pre higher (p=0.0053)"
    post, pre, _ = WIKI["LLaMA"]
    assert paper_stats(pre, post)["verdict"] == "no difference detected (p=0.0519)"


def test_sign_convention_swapped() -> None:
    post, pre, _ = WIKI["GPT-4"]
    r = paper_stats(post, pre)  # swap: "post" now higher
    assert r["cliffs_delta"] == pytest.approx(0.828125)
    assert r["verdict"].startswith("D_post higher")


def test_all_zeros() -> None:
    r = paper_stats([0] * 8, [0] * 8)
    _json_clean(r)
    assert r["verdict"] == "no document reached k words in either set"
    assert r["kw_h"] is None and r["kw_p"] is None
    assert "Kruskal-Wallis undefined: all values identical" in r["notes"]
    assert r["cliffs_delta"] == 0.0 and r["ks"] == 0.0


def test_identical_constant_vectors() -> None:
    r = paper_stats([7] * 8, [7] * 8)
    _json_clean(r)
    assert r["verdict"] == "identical vectors: no test possible"
    assert r["kw_h"] is None and r["kw_p"] is None
    assert any("all values identical" in n for n in r["notes"])


def test_identical_nonconstant_vectors() -> None:
    v = [9, 7, 5, 4, 3, 2, 1, 0]
    r = paper_stats(v, list(v))
    _json_clean(r)
    assert r["cliffs_delta"] == 0.0 and r["ks"] == 0.0
    assert r["kw_h"] == pytest.approx(0.0) and r["kw_p"] == pytest.approx(1.0)
    assert r["verdict"].startswith("identical vectors: no difference detected")


@pytest.mark.parametrize(
    "pre, post", [([], []), ([], [1, 2]), ([3, 2], [])]
)
def test_empty(pre: list, post: list) -> None:
    r = paper_stats(pre, post)
    _json_clean(r)
    assert set(r) == KEYS
    assert all(r[k] is None for k in ("cliffs_delta", "ks", "ks_p", "kw_h", "kw_p"))
    assert r["notes"] and "empty" in r["notes"][-1]
    assert "no test possible" in r["verdict"]


def test_single_values() -> None:
    r = paper_stats([5], [2])
    _json_clean(r)
    assert r["cliffs_delta"] == -1.0
    assert any("single value" in n for n in r["notes"])
    r = paper_stats([5], [5])
    _json_clean(r)
    assert r["kw_p"] is None
    assert r["verdict"] == "identical vectors: no test possible"


def test_nonfinite_dropped_and_monotonicity_noted() -> None:
    r = paper_stats([10, float("nan"), 4, math.inf], [1, 3, 0])
    _json_clean(r)
    assert r["n_pre"] == 2 and r["n_post"] == 3
    assert any("non-finite" in n for n in r["notes"])
    assert any("f_post increases with k" in n for n in r["notes"])
