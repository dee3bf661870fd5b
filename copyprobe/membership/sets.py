"""The standard membership scores where the studies compare D_pre with D_post: each score's
AUC and TPR at low FPR (:func:`copyprobe.membership.compare.compare_sets`, D_pre the
candidate members), AUC minus blind AUC, and dataset inference of D_pre against D_post, with
the caveat that a date split is not a random one; one small table per dataset
(docs/membership.md, "Set comparisons").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.membership.compare import compare_sets
from copyprobe.membership.inference import DEFAULT_AGGREGATE, dataset_inference
from copyprobe.membership.scores import MEASURES, NEEDS_MOMENTS, NEEDS_REFERENCE

#: the split labels: D_pre (published before the cutoff: the candidate members) and D_post
SPLITS = ("D_pre", "D_post")

#: printed under every table with a dataset-inference p-value of a date split
DATE_SPLIT_NOTE = (
    "D_pre and D_post are split by date, not at random: dataset inference assumes both sets "
    "drawn from one distribution, so its p-value is a statement about the split (topic, "
    "style, time) as much as about the model; the blind AUC beside it says how far the text "
    "alone separates them.")


def unavailable(*, has_moments: bool, reference: bool,
                backend: str = "") -> dict[str, str]:
    """The scores a model cannot give, each with the reason (printed in the table)."""
    out: dict[str, str] = {}
    if not has_moments:
        for name in NEEDS_MOMENTS:
            out[name] = (f"backend {backend or '?'} gives no next-token distribution "
                         "(mean and standard deviation of the log-probability), which Min-k%++ "
                         "needs")
    if not reference:
        for name in NEEDS_REFERENCE:
            out[name] = "no reference model configured"
    return out


def available_measures(missing: Mapping[str, str]) -> list[str]:
    """The scores of :data:`MEASURES` that are not in ``missing``, in their order."""
    return [m for m in MEASURES if m not in missing]


def compare_date_split(docs: pd.DataFrame, *, missing: Mapping[str, str] | None = None,
                       n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                       blind_folds: int = 5, warn_auc: float = 0.75, di_splits: int = 10,
                       di_aggregate: str = DEFAULT_AGGREGATE) -> dict[str, Any]:
    """D_pre against D_post on every available membership score. ``docs``: ``doc_id``,
    ``text``, ``split`` (``D_pre``/``D_post``) and a column per score of
    :func:`available_measures`. Returns :func:`compare_sets`' result plus ``missing`` (score:
    reason), ``dataset_inference`` (its result, or ``p_value`` None with ``error``) and
    ``date_split_note``. ``ValueError`` for an unknown split label."""
    missing = dict(missing or {})
    bad = sorted(set(docs["split"].astype(str)) - set(SPLITS))
    if bad:
        raise ValueError(f"membership set comparison: split label(s) {bad}, expected {SPLITS}")
    measures = available_measures(missing)
    data = docs.assign(member=docs["split"].astype(str) == SPLITS[0])
    out = compare_sets(data, measures, n_boot=n_boot, seed=seed, ci=ci,
                       blind_folds=blind_folds, warn_auc=warn_auc)
    out["missing"] = missing
    features = data[measures].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    features = features * np.array([MEASURES[m] for m in measures])
    kept = np.isfinite(features).all(axis=1)
    member = data["member"].to_numpy(bool)
    try:
        out["dataset_inference"] = dataset_inference(
            features[kept & member], features[kept & ~member], splits=di_splits, seed=seed,
            aggregate=di_aggregate)
    except ValueError as exc:
        out["dataset_inference"] = {"p_value": None, "error": str(exc),
                                    "aggregate": di_aggregate}
    out["date_split_note"] = DATE_SPLIT_NOTE
    return out


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
        for name, s in r["measures"].items():
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


#: the tokens of each document scored (its first ones), as ``membership-score``'s default
MAX_TOKENS = 512


def score_date_split(docs: pd.DataFrame, spec: Mapping[str, Any], manifest: Mapping[str, Any],
                     statistics: Mapping[str, Any]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Score a (model, dataset)'s curated documents (``doc_id``, ``text``, ``split`` pre/post;
    other splits left out) in one cached teacher-forced pass and compare D_pre with D_post
    (:func:`compare_date_split`, settings from the config's ``statistics``). A model that
    cannot score a given text gets ``{"skipped": reason}`` and an empty table."""
    from copyprobe.generation.scoring import cannot_score_reason
    from copyprobe.membership.engine import SCORES, Model, score_table

    reason = cannot_score_reason(str(spec["name"]), spec)
    if reason is not None:
        return ({"skipped": f"no membership scores: {reason}"},
                pd.DataFrame(columns=SCORES.columns))
    model = Model.from_slice(spec, manifest)
    labels = {"pre": SPLITS[0], "post": SPLITS[1]}
    docs = docs[docs["split"].isin(labels)].assign(split=lambda d: d["split"].map(labels))
    docs = docs.reset_index(drop=True)
    moments = model.has_moments()
    table = score_table(docs, model, max_tokens=MAX_TOKENS, moments=moments)
    scored = docs.merge(table[table["status"] == "scored"].drop(columns=["model"]),
                        on="doc_id")
    missing = unavailable(has_moments=moments, reference=False, backend=spec["backend"])
    st = dict(statistics)
    try:
        result = compare_date_split(
            scored, missing=missing, n_boot=st["n_boot"], seed=st["seed"],
            blind_folds=st["blind_folds"], warn_auc=st["blind_warn_auc"],
            di_splits=st["di_splits"], di_aggregate=st["di_aggregate"])
    except ValueError as exc:  # fewer than 2 scored documents in a split
        return {"skipped": f"no comparison: {exc}"}, table
    result["failed_documents"] = int(len(table) - len(scored))
    return result, table


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
