"""Statistics over per-document scores (e.g. each document's longest verbatim match length).

The MSR paper compares eight cumulative counts per set; comparing the per-document scores
directly uses every document as an observation and gives effect sizes with bootstrap
confidence intervals and membership-inference metrics (ROC AUC, TPR at 1% FPR).

Sign convention (same as the paper): Cliff's delta is ``P(post > pre) - P(post < pre)``, so
"D_pre higher" is negative. For the ROC, D_pre is the positive ("member") class and a
document is called a member when its score is >= the threshold; hence
``roc_auc == (1 - cliffs_delta) / 2``.

No scikit-learn dependency: the ROC curve is computed here with numpy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _sps

from copyprobe.stats.paper import _clean_sample, _finite_or_none, _fmt_p

__all__ = ["cliffs_delta", "per_document_stats", "roc_curve", "roc_auc"]

# Max cells (replicates x distinct values) materialised at once by the bootstrap.
_BOOT_CELLS = 4_000_000


def cliffs_delta(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Cliff's delta ``P(X > Y) - P(X < Y)`` over all pairs, ties counting 0.

    ``O((n + m) log m)`` via ``searchsorted`` on the sorted ``y``. Returns ``None`` when
    either sample is empty. Raises ``ValueError`` on NaN/infinite values (the dict-returning
    functions drop those, with a note, before calling this).

    With ``x = post`` and ``y = pre`` this is the MSR convention (D_pre higher is negative)
    and equals ``2U/(n1*n2) - 1`` for ``U = mannwhitneyu(x, y).statistic``.
    """
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.size == 0 or ya.size == 0:
        return None
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
        raise ValueError("cliffs_delta: samples must be finite (no NaN or infinity)")
    ys = np.sort(ya)
    y_below = np.searchsorted(ys, xa, side="left")  # number of y < x_i
    y_above = ys.size - np.searchsorted(ys, xa, side="right")  # number of y > x_i
    diff = int(y_below.sum(dtype=np.int64)) - int(y_above.sum(dtype=np.int64))
    return diff / (xa.size * ys.size)


def roc_curve(
    scores: Sequence[float], labels: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve ``(fpr, tpr, thresholds)`` for "positive when score >= threshold".

    Thresholds are the distinct scores in decreasing order preceded by ``+inf`` (the
    (0, 0) point), i.e. ``sklearn.metrics.roc_curve(..., drop_intermediate=False)``.
    Labels: 1 = positive, 0 = negative; both classes must be present (``ValueError``).
    """
    s = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(labels).ravel().astype(np.int64)
    if s.size != y.size:
        raise ValueError("roc_curve: scores and labels differ in length")
    n_pos = int((y == 1).sum())
    n_neg = int((y == 0).sum())
    if n_pos + n_neg != y.size:
        raise ValueError("roc_curve: labels must be 0 or 1")
    if n_pos == 0 or n_neg == 0:
        raise ValueError("roc_curve: both classes are needed")
    order = np.argsort(-s, kind="mergesort")
    s_sorted = s[order]
    y_sorted = y[order]
    last_of_run = np.r_[np.flatnonzero(np.diff(s_sorted)), s_sorted.size - 1]
    tps = np.cumsum(y_sorted)[last_of_run]
    fps = (last_of_run + 1) - tps
    tpr = np.r_[0, tps] / n_pos
    fpr = np.r_[0, fps] / n_neg
    thresholds = np.r_[np.inf, s_sorted[last_of_run]]
    return fpr, tpr, thresholds


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under :func:`roc_curve` (trapezoids, so tied scores count 0.5)."""
    fpr, tpr, _ = roc_curve(scores, labels)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def _tpr_at_fpr(scores: np.ndarray, labels: np.ndarray, max_fpr: float) -> float:
    """Largest TPR over thresholds whose false-positive count is <= floor(max_fpr * n_neg)."""
    fpr, tpr, _ = roc_curve(scores, labels)
    n_neg = int((labels == 0).sum())
    allowed_fp = math.floor(max_fpr * n_neg + 1e-9)
    fp_counts = np.rint(fpr * n_neg)
    return float(tpr[fp_counts <= allowed_fp].max())


def _bootstrap(
    pre: np.ndarray, post: np.ndarray, n_boot: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Bootstrap replicates of mean_pre, mean_post and Cliff's delta (post vs pre).

    Each group is resampled independently with replacement (index resampling). Values are
    coded once by rank among the K distinct pooled values; a replicate's per-value counts
    come from one ``bincount`` and its delta from cumulative sums, so a replicate costs
    O(n + K) and replicates are vectorised in chunks of bounded memory.
    """
    values = np.unique(np.concatenate([pre, post]))
    k = values.size
    n_pre, n_post = pre.size, post.size
    code_pre = np.searchsorted(values, pre)
    code_post = np.searchsorted(values, post)
    mean_pre = np.empty(n_boot)
    mean_post = np.empty(n_boot)
    delta = np.empty(n_boot)
    chunk = max(1, _BOOT_CELLS // max(n_pre, n_post, k))
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        offsets = (np.arange(b, dtype=np.int64) * k)[:, None]
        i_pre = rng.integers(0, n_pre, size=(b, n_pre))
        i_post = rng.integers(0, n_post, size=(b, n_post))
        c_pre = np.bincount((code_pre[i_pre] + offsets).ravel(), minlength=b * k).reshape(b, k)
        c_post = np.bincount((code_post[i_post] + offsets).ravel(), minlength=b * k).reshape(b, k)
        cum_pre = np.cumsum(c_pre, axis=1)
        pre_below = cum_pre - c_pre  # resampled pre values < values[j]
        pre_above = n_pre - cum_pre  # resampled pre values > values[j]
        sl = slice(start, start + b)
        delta[sl] = (c_post * (pre_below - pre_above)).sum(axis=1) / (n_pre * n_post)
        mean_pre[sl] = pre[i_pre].mean(axis=1)
        mean_post[sl] = post[i_post].mean(axis=1)
    return {"mean_pre": mean_pre, "mean_post": mean_post, "delta": delta}


def _percentile_ci(reps: np.ndarray, ci: float) -> list[float] | None:
    lo, hi = np.quantile(reps, [(1.0 - ci) / 2.0, 1.0 - (1.0 - ci) / 2.0])
    lo_f, hi_f = _finite_or_none(lo), _finite_or_none(hi)
    if lo_f is None or hi_f is None:
        return None
    return [lo_f, hi_f]


def per_document_stats(
    pre: Sequence[float],
    post: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Compare per-document scores of D_pre and D_post (e.g. longest-match lengths).

    Parameters
    ----------
    pre, post:
        One score per document; higher means more regurgitation.
    n_boot:
        Percentile-bootstrap replicates (each group resampled independently, seeded
        ``numpy.random.Generator``). ``0`` disables the confidence intervals.
    seed:
        Seed of the bootstrap generator; results are deterministic given the seed.
    ci:
        Confidence level of the intervals, in (0, 1).
    alpha:
        Significance level used only for the ``verdict`` sentence (Mann-Whitney p).

    Returns
    -------
    dict with keys ``n_pre``, ``n_post``, ``mean_pre``, ``mean_post``, ``median_pre``,
    ``median_post``, ``mean_pre_ci``, ``mean_post_ci``, ``cliffs_delta``,
    ``cliffs_delta_ci``, ``ks``, ``ks_p``, ``kw_h``, ``kw_p``, ``mw_u``, ``mw_p``,
    ``roc_auc``, ``roc_auc_ci``, ``tpr_at_1pct_fpr``, ``notes``, ``verdict``. CIs are
    ``[lo, hi]`` lists. Undefined values are ``None`` with a reason in ``notes``; nothing is
    NaN or infinite; degenerate data never raises (bad ``n_boot``/``ci`` do: ValueError).
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")

    notes: list[str] = []
    a_pre = _clean_sample(pre, "pre", notes)
    a_post = _clean_sample(post, "post", notes)
    n_pre, n_post = int(a_pre.size), int(a_post.size)

    out: dict[str, Any] = {
        "n_pre": n_pre,
        "n_post": n_post,
        "mean_pre": None,
        "mean_post": None,
        "median_pre": None,
        "median_post": None,
        "mean_pre_ci": None,
        "mean_post_ci": None,
        "cliffs_delta": None,
        "cliffs_delta_ci": None,
        "ks": None,
        "ks_p": None,
        "kw_h": None,
        "kw_p": None,
        "mw_u": None,
        "mw_p": None,
        "roc_auc": None,
        "roc_auc_ci": None,
        "tpr_at_1pct_fpr": None,
        "notes": notes,
        "verdict": "",
    }

    if n_pre:
        out["mean_pre"] = _finite_or_none(a_pre.mean())
        out["median_pre"] = _finite_or_none(np.median(a_pre))
    if n_post:
        out["mean_post"] = _finite_or_none(a_post.mean())
        out["median_post"] = _finite_or_none(np.median(a_post))

    if n_pre == 0 or n_post == 0:
        empty = [name for name, n in (("D_pre", n_pre), ("D_post", n_post)) if n == 0]
        notes.append(
            f"comparison statistics undefined: no scores in {' and '.join(empty)}"
        )
        if n_boot and (n_pre or n_post):
            rng = np.random.default_rng(seed)
            for key, arr in (("mean_pre_ci", a_pre), ("mean_post_ci", a_post)):
                if arr.size:
                    idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
                    out[key] = _percentile_ci(arr[idx].mean(axis=1), ci)
        out["verdict"] = f"no scores in {' and '.join(empty)}: no test possible"
        return out

    pooled = np.concatenate([a_pre, a_post])
    constant = bool(np.all(pooled == pooled[0]))

    # ---- effect size and ROC ---------------------------------------------------------
    delta = cliffs_delta(a_post, a_pre)
    out["cliffs_delta"] = _finite_or_none(delta)
    scores = np.concatenate([a_pre, a_post])
    labels = np.r_[np.ones(n_pre, dtype=np.int64), np.zeros(n_post, dtype=np.int64)]
    out["roc_auc"] = _finite_or_none(roc_auc(scores, labels))
    out["tpr_at_1pct_fpr"] = _finite_or_none(_tpr_at_fpr(scores, labels, 0.01))
    if n_post < 100:
        notes.append(
            f"the 1% FPR point rests on fewer than 100 non-members (D_post has {n_post}), "
            "so tpr_at_1pct_fpr equals the TPR at FPR 0"
        )

    # ---- tests -------------------------------------------------------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ks = _sps.ks_2samp(a_post, a_pre)
        mw = _sps.mannwhitneyu(a_post, a_pre, alternative="two-sided")
        kw = None if constant else _sps.kruskal(a_post, a_pre)
    out["ks"] = _finite_or_none(ks.statistic)
    out["ks_p"] = _finite_or_none(ks.pvalue)
    if out["ks"] is None or out["ks_p"] is None:
        notes.append("KS statistic or p-value undefined")
    out["mw_u"] = _finite_or_none(mw.statistic)
    if constant:
        notes.append("Kruskal-Wallis undefined: all values identical")
        notes.append("Mann-Whitney p undefined: all values identical (zero rank variance)")
    else:
        out["mw_p"] = _finite_or_none(mw.pvalue)
        out["kw_h"] = _finite_or_none(kw.statistic)
        out["kw_p"] = _finite_or_none(kw.pvalue)
        if out["mw_p"] is None:
            notes.append("Mann-Whitney p undefined: scipy returned no finite value")
        if out["kw_h"] is None or out["kw_p"] is None:
            notes.append("Kruskal-Wallis undefined: scipy returned no finite value")

    # ---- bootstrap ---------------------------------------------------------------------
    if n_boot == 0:
        notes.append("confidence intervals not computed: n_boot=0")
    else:
        reps = _bootstrap(a_pre, a_post, n_boot, np.random.default_rng(seed))
        out["mean_pre_ci"] = _percentile_ci(reps["mean_pre"], ci)
        out["mean_post_ci"] = _percentile_ci(reps["mean_post"], ci)
        out["cliffs_delta_ci"] = _percentile_ci(reps["delta"], ci)
        out["roc_auc_ci"] = _percentile_ci((1.0 - reps["delta"]) / 2.0, ci)
        single = [name for name, n in (("D_pre", n_pre), ("D_post", n_post)) if n == 1]
        if single:
            notes.append(
                f"{' and '.join(single)} {'each has' if len(single) > 1 else 'has'} a single "
                "document: its bootstrap resamples are all identical, so the intervals "
                "understate the uncertainty"
            )

    # ---- verdict -----------------------------------------------------------------------
    d = out["cliffs_delta"]
    p = out["mw_p"]
    if constant and pooled[0] == 0:
        out["verdict"] = "all scores are 0 in both sets: no test possible"
    elif constant:
        out["verdict"] = "all scores identical: no test possible"
    elif p is None or d is None:
        out["verdict"] = "no test possible: Mann-Whitney p undefined"
    elif p < alpha and d != 0:
        side = "D_pre" if d < 0 else "D_post"
        out["verdict"] = (
            f"{side} higher (Cliff's delta={d:.3f}, AUC={out['roc_auc']:.3f}, "
            f"Mann-Whitney {_fmt_p(p)})"
        )
    else:
        out["verdict"] = f"no difference detected (Cliff's delta={d:.3f}, Mann-Whitney {_fmt_p(p)})"
    return out
