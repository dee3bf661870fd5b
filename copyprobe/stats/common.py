"""Helpers shared by the ``copyprobe.stats`` modules: clean numbers, effect size, ROC, bootstrap,
exact binomial intervals.

Every number that leaves the package is a finite Python ``float``/``int`` or ``None``
(:func:`finite_or_none`). ROC figures come from scikit-learn and bootstrap intervals from
:func:`scipy.stats.bootstrap`; only Cliff's delta is written here, as a rank formula that
works along an axis so the bootstrap can evaluate thousands of resamples at once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats as _sps
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as _sk_roc_curve

__all__ = [
    "bootstrap_ci",
    "clean_sample",
    "clopper_pearson",
    "clopper_pearson_upper",
    "cliffs_delta",
    "finite_or_none",
    "fmt_p",
    "roc_auc",
    "tpr_at_fpr",
    "tpr_at_fpr_along",
]

# Upper bound on the values (resamples x observations) one vectorised bootstrap call holds.
_BOOT_CELLS = 4_000_000


def finite_or_none(x: Any) -> float | None:
    """``float(x)`` when finite, else ``None`` (covers NaN, +/-inf, None)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def clean_sample(values: Sequence[float], name: str, notes: list[str]) -> np.ndarray:
    """1-D float array of the finite entries of ``values``; dropped entries go to ``notes``."""
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        arr = np.array(
            [v for v in (finite_or_none(x) for x in values) if v is not None], dtype=float
        )
        notes.append(f"{name}: non-numeric values were dropped")
        return arr
    finite = np.isfinite(arr)
    n_bad = int(arr.size - finite.sum())
    if n_bad:
        notes.append(f"{name}: {n_bad} non-finite value(s) (NaN or infinity) were dropped")
        arr = arr[finite]
    return arr


def fmt_p(p: float | None) -> str:
    """A p-value as text: 4 decimals, scientific notation below 0.0001."""
    if p is None:
        return "p undefined"
    if p < 1e-4:
        return f"p={p:.1e}"
    return f"p={p:.4f}"


def cliffs_delta(x: Any, y: Any, axis: int = -1) -> Any:
    """Cliff's delta ``P(X > Y) - P(X < Y)`` over all pairs, ties counting 0.

    Computed as ``2U/(n*m) - 1`` with the Mann-Whitney ``U`` of ``x`` from average ranks of
    the pooled sample (so ``O((n + m) log(n + m))``), along ``axis`` of N-d inputs (equal
    shapes apart from ``axis``, e.g. one resample per row). For 1-D
    input the result is a float, or ``None`` when either sample is empty. Raises
    ``ValueError`` on NaN/infinite values (the dict-returning functions drop those, with a
    note, before calling this).

    With ``x = post`` and ``y = pre`` this is the MSR convention (D_pre higher is negative).
    """
    xa = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    ya = np.moveaxis(np.asarray(y, dtype=float), axis, -1)
    n, m = xa.shape[-1], ya.shape[-1]
    if n == 0 or m == 0:
        return None
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
        raise ValueError("cliffs_delta: samples must be finite (no NaN or infinity)")
    ranks = _sps.rankdata(np.concatenate([xa, ya], axis=-1), axis=-1)
    u = ranks[..., :n].sum(axis=-1) - n * (n + 1) / 2.0
    delta = 2.0 * u / (n * m) - 1.0
    return float(delta) if np.ndim(delta) == 0 else delta


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve, label 1 positive, "positive when score >= threshold"
    (``sklearn.metrics.roc_auc_score``; tied scores count one half)."""
    return float(roc_auc_score(np.asarray(labels), np.asarray(scores, dtype=float)))


def tpr_at_fpr(scores: Sequence[float], labels: Sequence[int], max_fpr: float) -> float:
    """Largest TPR over thresholds with at most ``floor(max_fpr * n_neg)`` false positives.

    Counting false positives (not comparing rates) keeps e.g. 2 of 200 at 1% exact.
    """
    y = np.asarray(labels)
    fpr, tpr, _ = _sk_roc_curve(y, np.asarray(scores, dtype=float), drop_intermediate=False)
    n_neg = int((y == 0).sum())
    allowed_fp = math.floor(max_fpr * n_neg + 1e-9)
    return float(tpr[np.rint(fpr * n_neg) <= allowed_fp].max())


def tpr_at_fpr_along(pos: Any, neg: Any, max_fpr: float, axis: int = -1) -> Any:
    """:func:`tpr_at_fpr` of positives ``pos`` against negatives ``neg`` along ``axis`` (one
    resample per row, for the bootstrap): with ``a = floor(max_fpr * n_neg)`` false
    positives allowed, the share of positives above the ``(a + 1)``-th largest negative."""
    pa = np.moveaxis(np.asarray(pos, dtype=float), axis, -1)
    na = np.sort(np.moveaxis(np.asarray(neg, dtype=float), axis, -1), axis=-1)
    n_neg = na.shape[-1]
    allowed_fp = math.floor(max_fpr * n_neg + 1e-9)
    if allowed_fp >= n_neg:
        return np.ones(pa.shape[:-1]) if pa.ndim > 1 else 1.0
    threshold = na[..., n_neg - 1 - allowed_fp]
    tpr = (pa > threshold[..., None]).mean(axis=-1)
    return float(tpr) if np.ndim(tpr) == 0 else tpr


def bootstrap_ci(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., Any],
    *,
    n_boot: int,
    ci: float,
    seed: int,
) -> list[list[float] | None]:
    """Percentile-bootstrap intervals of a (possibly vector-valued) statistic.

    ``scipy.stats.bootstrap`` with ``method="percentile"`` resamples each sample
    independently (``paired=False``) ``n_boot`` times from ``numpy.random.default_rng(seed)``.
    ``statistic(*samples, axis=-1)`` must work along the last axis and return one value per
    output (a scalar, or a stack of ``k`` outputs); the result is one ``[lo, hi]`` per output,
    ``None`` where an end is not finite. Every sample must be non-empty. scipy needs two
    observations per sample: a one-value sample resamples to itself, so it is passed as two
    copies, which leaves statistics of proportions or means (all used here) unchanged.

    The percentile method, not scipy's default BCa: BCa's jackknife acceleration is undefined
    (NaN, with a warning) when every resample gives the same value, which all-zero match
    lengths make common here.
    """
    data = [np.repeat(s, 2) if s.size == 1 else s for s in samples]
    if any(s.size == 0 for s in data):
        raise ValueError("bootstrap_ci: every sample must be non-empty")
    batch = max(1, _BOOT_CELLS // sum(s.size for s in data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _sps.bootstrap(data, statistic, n_resamples=n_boot, batch=batch, vectorized=True,
                             paired=False, axis=-1, confidence_level=ci, method="percentile",
                             rng=np.random.default_rng(seed))
    lows = np.atleast_1d(res.confidence_interval.low)
    highs = np.atleast_1d(res.confidence_interval.high)
    out: list[list[float] | None] = []
    for lo, hi in zip(lows, highs):
        lo_f, hi_f = finite_or_none(lo), finite_or_none(hi)
        out.append(None if lo_f is None or hi_f is None else [lo_f, hi_f])
    return out


def _binomial_counts(k: Any, m: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    ka = np.asarray(k, dtype=float)
    ma = np.asarray(m, dtype=float)
    if np.any(ka < 0) or np.any(ka > ma) or np.any(ka != np.round(ka)):
        raise ValueError(f"need whole numbers 0 <= k <= m, got k={k!r}, m={m!r}")
    return ka, ma


def clopper_pearson(k: Any, m: Any, alpha: float = 0.05) -> tuple[Any, Any]:
    """The exact (Clopper-Pearson) two-sided ``1 - alpha`` interval of a binomial rate from
    ``k`` hits in ``m`` trials: ``(Beta(alpha/2; k, m-k+1), Beta(1-alpha/2; k+1, m-k))``
    quantiles, with ``lo = 0`` at ``k = 0``, ``hi = 1`` at ``k = m`` and ``(0, 1)`` at
    ``m = 0``. ``k`` and ``m`` may be arrays (then so are the ends)."""
    ka, ma = _binomial_counts(k, m, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(ka > 0, _sps.beta.ppf(alpha / 2, np.maximum(ka, 1), ma - ka + 1), 0.0)
        hi = np.where(ka < ma, _sps.beta.ppf(1 - alpha / 2, ka + 1, np.maximum(ma - ka, 1)),
                      1.0)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def clopper_pearson_upper(k: Any, m: Any, alpha: float = 0.05) -> Any:
    """The exact one-sided ``1 - alpha`` upper bound of a binomial rate from ``k`` events in
    ``m`` trials: the ``Beta(1 - alpha; k + 1, m - k)`` quantile, 1 at ``k = m`` (and at
    ``m = 0``). With ``k = 0`` it is ``1 - alpha ** (1 / m)``, about ``3 / m`` at 95% (the
    "rule of three"): no over-refusal in 80 requests still allows a rate up to 3.7%, in 1000
    up to 0.3%. ``k`` and ``m`` may be arrays (then so is the bound)."""
    ka, ma = _binomial_counts(k, m, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        hi = np.where(ka < ma, _sps.beta.ppf(1 - alpha, ka + 1, np.maximum(ma - ka, 1)), 1.0)
    return float(hi) if hi.ndim == 0 else hi
