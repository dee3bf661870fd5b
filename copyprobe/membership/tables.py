"""The membership set comparisons as tables: one row per (dataset, model, score), one small
Markdown table per dataset with the blind AUC, dataset inference's p-value and the date-split
caveat (docs/membership.md, "Set comparisons"). Reads only the comparisons' JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.membership.scores import MEASURES

#: the split labels: D_pre (published before the cutoff: the candidate members) and D_post
SPLITS = ("D_pre", "D_post")

#: printed under every table with a dataset-inference p-value of a date split
DATE_SPLIT_NOTE = (
    "D_pre and D_post are split by date, not at random: dataset inference assumes both sets "
    "drawn from one distribution, so its p-value is a statement about the split (topic, "
    "style, time) as much as about the model; the blind AUC beside it says how far the text "
    "alone separates them.")


def _lo_hi(ci: Any) -> tuple[float | None, float | None]:
    return (None, None) if not ci else (ci[0], ci[1])


def table_rows(results: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (dataset, model, score) from results carrying ``model``, ``dataset`` and
    :func:`compare_date_split`'s keys; a missing score is a row with its reason."""
    rows = []
    for r in results:
        base = {"dataset": r["dataset"], "model": r["model"], "n_pre": r["n_members"],
                "n_post": r["n_nonmembers"], "blind_auc": r["blind_auc"],
                "di_p_value": r["dataset_inference"].get("p_value"),
                "small_sample": bool(r["small_sample"])}
        # in MEASURES' order (the JSON on disk has its keys sorted)
        for name in sorted(r["measures"], key=lambda n: (list(MEASURES) + [n]).index(n)):
            s = r["measures"][name]
            auc_lo, auc_hi = _lo_hi(s["auc_ci"])
            gap_lo, gap_hi = _lo_hi(s["auc_minus_blind_ci"])
            rows.append({**base, "measure": name, "auc": s["auc"], "auc_low": auc_lo,
                         "auc_high": auc_hi, "tpr_at_1pct_fpr": s["tpr_at_1pct_fpr"],
                         "tpr_at_0.1pct_fpr": s["tpr_at_0.1pct_fpr"],
                         "auc_minus_blind": s["auc_minus_blind"], "auc_minus_blind_low": gap_lo,
                         "auc_minus_blind_high": gap_hi, "missing_reason": None})
        for name, reason in r.get("missing", {}).items():
            rows.append({**base, "measure": name, "missing_reason": reason})
    cols = ["dataset", "model", "measure", "n_pre", "n_post", "auc", "auc_low", "auc_high",
            "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr", "auc_minus_blind", "auc_minus_blind_low",
            "auc_minus_blind_high", "blind_auc", "di_p_value", "small_sample",
            "missing_reason"]
    return pd.DataFrame(rows, columns=cols)


def _num(x: Any, nd: int = 2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def _with_ci(x: Any, lo: Any, hi: Any) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return _num(x) if lo is None or pd.isna(lo) else f"{_num(x)} [{_num(lo)}, {_num(hi)}]"


def _p(x: Any) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{x:.3g}"


def to_markdown(df: pd.DataFrame, results: Sequence[Mapping[str, Any]] = ()) -> str:
    """One small table per dataset (rows: model and score), then per model the blind AUC and
    dataset inference's p-value, the reasons for missing scores and the date-split note."""
    notes = {(r["dataset"], r["model"]): r for r in results}
    out = []
    for dataset, part in df.groupby("dataset", sort=False):
        out += [f"### Membership scores, D_pre against D_post: {dataset}", "",
                "| model | score | AUC [95% CI] | TPR@1% FPR | TPR@0.1% FPR | "
                "AUC - blind [95% CI] |", "|---|---|---|---|---|---|"]
        for r in part.to_dict("records"):
            if isinstance(r["missing_reason"], str):
                out.append(f"| {r['model']} | {r['measure']} | missing: {r['missing_reason']} "
                           "| | | |")
                continue
            auc = _with_ci(r["auc"], r["auc_low"], r["auc_high"])
            gap = _with_ci(r["auc_minus_blind"], r["auc_minus_blind_low"],
                           r["auc_minus_blind_high"])
            out.append(f"| {r['model']} | {r['measure']} | {auc} | "
                       f"{_num(r['tpr_at_1pct_fpr'])} | {_num(r['tpr_at_0.1pct_fpr'])} | {gap} |")
        out.append("")
        for model, m in part.groupby("model", sort=False):
            first = m.iloc[0]
            r = notes.get((dataset, model), {})
            di = r.get("dataset_inference", {})
            di_text = (f"p = {_p(first.di_p_value)} ({di.get('aggregate', '')} of "
                       f"{di.get('splits', '?')} splits)" if di.get("p_value") is not None
                       else f"no p-value: {di.get('error', 'not run')}")
            out.append(f"- {model}: {int(first.n_pre)} D_pre, {int(first.n_post)} D_post "
                       f"documents; blind AUC {_num(first.blind_auc)}; dataset inference "
                       f"of D_pre against D_post: {di_text}"
                       + ("; small sample" if first.small_sample else "") + ".")
        out += ["", DATE_SPLIT_NOTE, ""]
    return "\n".join(out)


def sets_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The membership section under a study's table: the per-dataset tables of the compared
    results and a line per skipped (model, dataset) with its reason ("" without results)."""
    if not results:
        return ""
    done = [r for r in results if "skipped" not in r]
    parts = ["", "## The standard membership scores, D_pre against D_post", ""]
    if done:
        parts.append(to_markdown(table_rows(done), done))
    parts += [f"- {r['model']} on {r['dataset']}: {r['skipped']}" for r in results
              if "skipped" in r]
    return "\n".join(parts) + "\n"
