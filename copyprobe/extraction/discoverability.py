"""(n,p)-discoverability: from a window's exact extraction probability to verdicts and summaries.

Reference: docs/extraction.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "DEFAULT_N",
    "DEFAULT_P",
    "document_summary",
    "extractable",
    "extraction_probability",
    "log_pz_threshold",
    "np_curve",
    "pz_threshold",
    "verdict_column",
    "verdict_columns",
    "window_verdicts",
]

#: Numbers of samples ``n`` of the (n,p) grid (Hayes et al. 2024 report n up to 10^6).
DEFAULT_N = (1, 10, 100, 1000)
#: Target probabilities ``p`` of the (n,p) grid.
DEFAULT_P = (0.001, 0.01, 0.1, 0.5)

#: Statuses of the window table's ``status`` column.
STATUSES = ("scored", "failed")
#: A log p_z above 0 by at most this much is float rounding of a sum of log-probs (taken as
#: 0); anything larger is an error.
LOG_PZ_SLACK = 1e-6


def _check_np(n: Any, p: Any) -> tuple[int, float]:
    if isinstance(n, bool) or not float(n).is_integer() or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    p = float(p)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must lie in (0, 1], got {p!r}")
    return int(n), p


def pz_threshold(n: int, p: float) -> float:
    """The smallest ``p_z`` that is (n,p)-discoverable: ``1 - (1 - p)^(1/n)``.

    Computed as ``-expm1(log1p(-p) / n)``, exact to rounding for every ``n`` (the naive
    formula loses all digits once ``(1 - p)^(1/n)`` rounds to 1). ``pz_threshold(1, p) == p``
    and ``p = 1`` needs ``p_z = 1``.
    """
    n, p = _check_np(n, p)
    if p == 1.0:
        return 1.0
    if n == 1:
        return p
    return -math.expm1(math.log1p(-p) / n)


def log_pz_threshold(n: int, p: float) -> float:
    """``log`` of :func:`pz_threshold` (the threshold compared with a window's ``log p_z``)."""
    return math.log(pz_threshold(n, p))


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - exp(x))`` for ``x <= 0``, accurate at both ends (``-inf`` at ``x = 0``)."""
    out = np.full(x.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        near = x > -math.log(2.0)
        out[near] = np.log(-np.expm1(x[near]))
        far = x <= -math.log(2.0)
        out[far] = np.log1p(-np.exp(x[far]))
    return out


def _log_pz_array(log_pz: Any) -> np.ndarray:
    arr = np.asarray(log_pz, dtype=float)
    bad = arr > LOG_PZ_SLACK
    if np.any(bad):
        raise ValueError(f"log p_z must be <= 0 (a probability), got {arr[bad].ravel()[0]!r}")
    return np.minimum(arr, 0.0)


def extraction_probability(log_pz: Any, n: int) -> Any:
    """Probability that at least one of ``n`` samples reproduces the suffix:
    ``1 - (1 - p_z)^n`` from ``log p_z``, as ``-expm1(n * log(1 - p_z))``.

    Works on scalars (returns a float) and arrays (elementwise); NaN stays NaN, ``log_pz = 0``
    gives 1 and ``log_pz = -inf`` gives 0. Stable at both ends: for ``log_pz = -1000`` it is
    ``n * e^-1000`` (not 0 by cancellation), for ``log_pz = -1e-12`` the ``1 - p_z`` is taken
    from ``expm1``, not by subtraction. Values above 0 by float rounding (at most
    :data:`LOG_PZ_SLACK`) count as 0; larger ones raise ``ValueError``.
    """
    n = _check_np(n, 0.5)[0]
    arr = _log_pz_array(log_pz)
    flat = np.atleast_1d(arr)
    with np.errstate(invalid="ignore"):
        out = -np.expm1(n * _log1mexp(flat))
    out = out.reshape(arr.shape)
    return float(out) if np.ndim(out) == 0 else out


def extractable(log_pz: Any, n: int, p: float) -> np.ndarray:
    """Boolean array: ``log_pz >= log_pz_threshold(n, p)`` elementwise (NaN: False)."""
    arr = _log_pz_array(log_pz)
    with np.errstate(invalid="ignore"):
        return np.asarray(arr >= log_pz_threshold(n, p))


def _fmt_p(p: float) -> str:
    return f"{p:g}"


def verdict_column(n: int, p: float) -> str:
    """Name of the (n,p) verdict column: ``np_n100_p0.5``, ``np_n1000_p0.001``."""
    n, p = _check_np(n, p)
    return f"np_n{n}_p{_fmt_p(p)}"


def verdict_columns(ns: Sequence[int] = DEFAULT_N, ps: Sequence[float] = DEFAULT_P) -> list[str]:
    """The verdict column names of the grid, ``n`` outer and ``p`` inner, in the given order."""
    return [verdict_column(n, p) for n in ns for p in ps]


def _grid(ns: Sequence[int], ps: Sequence[float]) -> list[tuple[int, float, str]]:
    grid = [(int(n), float(p), verdict_column(n, p)) for n in ns for p in ps]
    names = [c for _, _, c in grid]
    if len(set(names)) != len(names):
        raise ValueError(f"the (n,p) grid repeats a pair: {names}")
    return grid


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: the window table has no column(s) {missing} "
                         f"(it has {list(frame.columns)})")


def window_verdicts(windows: pd.DataFrame, ns: Sequence[int] = DEFAULT_N,
                    ps: Sequence[float] = DEFAULT_P) -> pd.DataFrame:
    """A copy of ``windows`` with ``p_z = exp(log_pz)`` and one boolean column per (n,p)
    (:func:`verdict_column`); failed windows (``log_pz`` NaN, or ``status`` ``failed`` when
    the column exists) are False everywhere and have ``p_z`` NaN."""
    _require(windows, ["log_pz"], "window_verdicts")
    out = windows.copy()
    log_pz = _log_pz_array(out["log_pz"].to_numpy(dtype=float))
    log_pz = np.where(_scored_mask(out), log_pz, np.nan)
    out["p_z"] = np.exp(log_pz)
    for n, p, column in _grid(ns, ps):
        out[column] = extractable(log_pz, n, p)
    return out


def _scored_mask(windows: pd.DataFrame) -> np.ndarray:
    """Rows that carry a score: status ``scored`` and a ``log_pz`` that is finite or -inf (a
    Monte Carlo estimate with no hit: p_z estimated 0, extractable nowhere; exact scores are
    always finite, the score runner fails the others); a ``scored`` row with NaN counts as
    failed."""
    lp = windows["log_pz"].to_numpy(dtype=float)
    finite = np.isfinite(lp) | np.isneginf(lp)
    if "status" not in windows.columns:
        return finite
    status = windows["status"].astype(str)
    unknown = sorted(set(status) - set(STATUSES))
    if unknown:
        row = int(np.flatnonzero(~status.isin(STATUSES).to_numpy())[0])
        raise ValueError(f"window table row {row}: status {unknown[0]!r} is not one of "
                         f"{list(STATUSES)} (unknown statuses: {unknown})")
    return finite & (status == "scored").to_numpy()


def _longest_runs(doc: np.ndarray, index: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Per row of a table sorted by (doc, index): the length of the run of consecutive
    ``index`` values with ``flag`` set that ends at that row (0 where ``flag`` is False)."""
    same = np.zeros(flag.size, dtype=bool)
    same[1:] = (doc[1:] == doc[:-1]) & (index[1:] == index[:-1] + 1) & flag[:-1]
    starts = flag & ~same
    run_id = np.cumsum(starts)
    # position within the run: row number minus the row number of the run's start
    start_row = np.zeros(flag.size, dtype=np.int64)
    start_row[starts] = np.flatnonzero(starts)
    start_row = np.maximum.accumulate(start_row)
    length = np.arange(flag.size) - start_row + 1
    return np.where(flag & (run_id > 0), length, 0)


def document_summary(windows: pd.DataFrame, ns: Sequence[int] = DEFAULT_N,
                     ps: Sequence[float] = DEFAULT_P) -> pd.DataFrame:
    """One row per ``doc_id`` (sorted) with the document's extractability.

    Columns: ``doc_id``, ``n_windows``, ``n_scored``, ``n_failed``; per (n,p) ``frac_<col>``
    (the fraction of the *scored* windows that are extractable) and ``longest_run_<col>``
    (the longest run of windows with consecutive ``window_index`` that are all extractable:
    a failed or missing window ends a run); ``max_log_pz`` and ``max_pz`` (the most
    extractable window), ``mean_log_pz_per_token`` (mean over scored windows of
    ``log_pz / n_tokens``) and ``greedy_frac`` (the fraction of scored windows whose suffix
    is the greedy continuation). A document without a scored window has NaN fractions and
    maxima (unknown, not 0) and runs of 0.

    ``windows`` needs ``doc_id``, ``window_index``, ``log_pz``, ``greedy_match``,
    ``n_tokens`` and ``status`` (``scored``/``failed``); a repeated
    ``(doc_id, window_index)`` is a ``ValueError``.
    """
    _require(windows, ["doc_id", "window_index", "log_pz", "greedy_match", "n_tokens",
                       "status"], "document_summary")
    grid = _grid(ns, ps)
    table = windows.sort_values(["doc_id", "window_index"], kind="stable").reset_index(drop=True)
    dup = table.duplicated(["doc_id", "window_index"])
    if dup.any():
        row = table[dup].iloc[0]
        raise ValueError(f"window table: window {row['window_index']} of document "
                         f"{row['doc_id']!r} appears more than once")
    scored = _scored_mask(table)
    log_pz = np.where(scored, table["log_pz"].to_numpy(dtype=float), np.nan)
    doc_codes, doc_ids = pd.factorize(table["doc_id"], sort=True)
    index = table["window_index"].to_numpy(dtype=np.int64)
    n_tokens = table["n_tokens"].to_numpy(dtype=float)
    greedy = table["greedy_match"].astype("boolean").fillna(False).to_numpy(dtype=bool)

    cols: dict[str, Any] = {"doc_id": doc_codes, "scored": scored.astype(np.int64),
                            "failed": (~scored).astype(np.int64), "log_pz": log_pz,
                            "per_token": np.where(scored, log_pz / n_tokens, np.nan),
                            "greedy": np.where(scored, greedy.astype(float), np.nan)}
    for n, p, column in grid:
        flag = extractable(log_pz, n, p)
        cols[f"frac_{column}"] = np.where(scored, flag.astype(float), np.nan)
        cols[f"longest_run_{column}"] = _longest_runs(doc_codes, index, flag)
    grouped = pd.DataFrame(cols).groupby("doc_id", sort=True)

    # means over scored rows: NaN rows are skipped, an all-NaN group gives NaN
    out = pd.DataFrame({"doc_id": doc_ids})
    out["n_windows"] = grouped.size().to_numpy()
    out["n_scored"] = grouped["scored"].sum().to_numpy()
    out["n_failed"] = grouped["failed"].sum().to_numpy()
    for _, _, column in grid:
        out[f"frac_{column}"] = grouped[f"frac_{column}"].mean().to_numpy()
    for _, _, column in grid:
        out[f"longest_run_{column}"] = grouped[f"longest_run_{column}"].max().to_numpy()
    out["max_log_pz"] = grouped["log_pz"].max().to_numpy()
    out["max_pz"] = np.exp(out["max_log_pz"])
    out["mean_log_pz_per_token"] = grouped["per_token"].mean().to_numpy()
    out["greedy_frac"] = grouped["greedy"].mean().to_numpy()
    return out


def np_curve(windows: pd.DataFrame, ns: Sequence[int] = DEFAULT_N,
             ps: Sequence[float] = DEFAULT_P) -> pd.DataFrame:
    """The extractable fraction of the scored windows at each (n,p), long format.

    Columns ``n``, ``p``, ``threshold`` (:func:`pz_threshold`), ``fraction`` (NaN with no
    scored window) and ``n_windows`` (the scored windows it is taken over). Failed windows
    (NaN ``log_pz``, or ``status`` ``failed`` when the column exists) are left out.
    """
    _require(windows, ["log_pz"], "np_curve")
    scored = _scored_mask(windows)
    log_pz = windows["log_pz"].to_numpy(dtype=float)[scored]
    rows = []
    for n, p, _ in _grid(ns, ps):
        hits = extractable(log_pz, n, p)
        rows.append({"n": n, "p": p, "threshold": pz_threshold(n, p),
                     "fraction": float(hits.mean()) if hits.size else math.nan,
                     "n_windows": int(hits.size)})
    return pd.DataFrame(rows, columns=["n", "p", "threshold", "fraction", "n_windows"])
