"""The extraction study's tables: WINDOWS (one row per scored window), the per-document table
of a (model, dataset), the statistics JSON's summary, and the study's table across models.

Conventions: ``status`` is ``scored``, ``failed`` (no score: an error or a non-finite
log-probability) or ``skipped`` (a document shorter than one window: ``window_index`` -1,
the reason in ``error``). ``log_pz`` is the natural log of p_z; ``mean_logprob`` is it per
suffix token. ``path`` says which computation made an exact score (one_pass, stepwise,
prompt_logprobs, server_echo); Monte Carlo rows keep their counts and interval in the
``mc_*`` columns and null ``greedy_match``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.stats.per_document import MIN_DOCUMENTS

__all__ = ["WINDOWS", "documents_spec", "documents_table", "split_label", "summary",
           "extraction_table", "table_markdown"]

WINDOWS = TableSpec(
    "extraction_windows",
    pa.schema(
        [
            ("model", pa.string()),
            ("source", pa.string()),
            ("doc_id", pa.string()),
            ("split", pa.string()),
            ("window_index", pa.int64()),
            ("start_token", pa.int64()),
            ("n_prefix_tokens", pa.int64()),
            ("n_tokens", pa.int64()),
            ("log_pz", pa.float64()),
            ("mean_logprob", pa.float64()),
            ("greedy_match", pa.bool_()),
            ("path", pa.string()),
            ("method", pa.string()),
            ("status", pa.string()),
            ("error_class", pa.string()),
            ("error", pa.string()),
            ("from_cache", pa.bool_()),
            ("latency_s", pa.float64()),
            ("mc_hits", pa.int64()),
            ("mc_samples", pa.int64()),
            ("mc_lo", pa.float64()),
            ("mc_hi", pa.float64()),
            ("mc_decision", pa.string()),
        ]
    ),
)

#: The curated split's name -> the label the comparison reads.
SPLIT_LABELS = {"pre": "D_pre", "post": "D_post"}


def split_label(split: str) -> str:
    return SPLIT_LABELS.get(split, split)


def documents_spec(ns: Sequence[int], ps: Sequence[float]) -> TableSpec:
    """The per-document table's schema for an (n,p) grid: keys and split, then the summary
    columns of :func:`copyprobe.extraction.discoverability.document_summary`."""
    from copyprobe.extraction.discoverability import verdict_columns

    grid = verdict_columns(ns, ps)
    return TableSpec("extraction_documents", pa.schema(
        [("model", pa.string()), ("dataset", pa.string()), ("source", pa.string()),
         ("doc_id", pa.string()), ("split", pa.string()),
         ("n_windows", pa.int64()), ("n_scored", pa.int64()), ("n_failed", pa.int64()),
         *((f"frac_{c}", pa.float64()) for c in grid),
         *((f"longest_run_{c}", pa.int64()) for c in grid),
         ("max_log_pz", pa.float64()), ("max_pz", pa.float64()),
         ("mean_log_pz_per_token", pa.float64()), ("greedy_frac", pa.float64())]))


def documents_table(windows: pd.DataFrame, *, model: str, dataset: str, ns: Sequence[int],
                    ps: Sequence[float]) -> pd.DataFrame:
    """One row per document of the dataset's windows (skipped documents included, with no
    window scored), its split labelled D_pre / D_post (``none``: neither side)."""
    from copyprobe.extraction.discoverability import document_summary

    keys = windows[["source", "doc_id", "split"]].drop_duplicates("doc_id")
    real = windows[windows["window_index"] >= 0]
    summ = document_summary(real, ns, ps) if len(real) else pd.DataFrame(columns=["doc_id"])
    out = keys.merge(summ, on="doc_id", how="left")
    out["split"] = out["split"].map(split_label)
    for col in ("n_windows", "n_scored", "n_failed"):
        out[col] = out[col].fillna(0).astype("int64")
    out.insert(0, "dataset", dataset)
    out.insert(0, "model", model)
    spec = documents_spec(ns, ps)
    for col in spec.columns:
        if col not in out:
            out[col] = np.nan
    return out[spec.columns]


def headline_column(headline: Mapping[str, Any]) -> str:
    """The per-document column of the table's metric."""
    from copyprobe.extraction.discoverability import verdict_column

    if headline["metric"] == "extractable_fraction":
        return f"frac_{verdict_column(headline['n'], headline['p'])}"
    return str(headline["metric"])


def metric_columns(headline: Mapping[str, Any]) -> list[str]:
    """The per-document measures compared between D_pre and D_post, the headline's first."""
    first = headline_column(headline)
    return [first, *(c for c in ("max_log_pz", "mean_log_pz_per_token", "greedy_frac")
                     if c != first)]


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def summary(windows: pd.DataFrame, docs: pd.DataFrame, headline: Mapping[str, Any]
            ) -> dict[str, Any]:
    """What the study's table shows of a (model, dataset) beside the comparison: windows by
    status, and per split the documents, the windows extractable at the headline (n,p) (as a
    share of the scored windows) and the largest p_z."""
    from copyprobe.extraction.discoverability import window_verdicts

    n, p = headline["n"], headline["p"]
    status = windows["status"].value_counts()
    scored = windows[windows["status"] == "scored"]
    verdicts = window_verdicts(scored, [n], [p]) if len(scored) else scored
    from copyprobe.extraction.discoverability import verdict_column

    col = verdict_column(n, p)
    per_split: dict[str, Any] = {}
    for split in ("D_pre", "D_post"):
        w = verdicts[verdicts["split"].map(split_label) == split] if len(verdicts) else verdicts
        d = docs[docs["split"] == split]
        per_split[split] = {
            "documents": int(len(d)), "windows": int(len(w)),
            "extractable": int(w[col].sum()) if len(w) else 0,
            "fraction_extractable": _finite(w[col].mean()) if len(w) else None,
            "max_log_pz": _finite(w["log_pz"].max()) if len(w) else None,
        }
    return {"headline": dict(headline),
            "windows": {s: int(status.get(s, 0)) for s in ("scored", "failed", "skipped")},
            "methods": sorted(windows["method"].dropna().unique().tolist()),
            "paths": sorted(windows["path"].dropna().unique().tolist()),
            "splits": per_split}


# ---- the comparison's numbers, read in one place (analysis.compare_splits makes them)

def _interval(obj: Any) -> tuple[float | None, float | None]:
    """A bootstrap interval ``[low, high]`` (None: not computed)."""
    if isinstance(obj, (list, tuple)) and len(obj) == 2:
        return _finite(obj[0]), _finite(obj[1])
    return None, None


def comparison_numbers(stats: Mapping[str, Any], metric: str) -> dict[str, float | None]:
    """The metric's AUC and CI, the blind AUC, and AUC minus blind with its CI, read from
    :func:`copyprobe.extraction.analysis.compare_splits`' output (the blind AUC is the one on
    the documents the metric kept, the one the difference uses)."""
    per = stats.get("metrics", {}).get(metric) or {}
    gap = stats.get("auc_minus_blind", {}).get(metric) or {}
    auc_lo, auc_hi = _interval(per.get("auc_ci"))
    gap_lo, gap_hi = _interval(gap.get("ci"))
    return {"auc": _finite(per.get("auc")), "auc_low": auc_lo, "auc_high": auc_hi,
            "blind_auc": _finite(gap.get("blind_auc")),
            "auc_minus_blind": _finite(gap.get("difference")),
            "auc_minus_blind_low": gap_lo, "auc_minus_blind_high": gap_hi}


TABLE_COLUMNS = ["model", "dataset", "method", "windows_scored", "windows_failed",
                 "documents_skipped", "extractable_pre", "extractable_post", "max_log_pz",
                 "metric", "auc", "auc_low", "auc_high", "blind_auc", "auc_minus_blind",
                 "auc_minus_blind_low", "auc_minus_blind_high", "small_sample"]


def extraction_table(stats: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (model, dataset) stats JSON (written by rule extraction_stats)."""
    rows = []
    for s in stats:
        summ, head = s["summary"], s["summary"]["headline"]
        metric = s["metric"]
        pre, post = summ["splits"]["D_pre"], summ["splits"]["D_post"]
        tops = [v for v in (pre["max_log_pz"], post["max_log_pz"]) if v is not None]
        rows.append({"model": s["model"], "dataset": s["dataset"],
                     "method": ",".join(summ["methods"]),
                     "windows_scored": summ["windows"]["scored"],
                     "windows_failed": summ["windows"]["failed"],
                     "documents_skipped": summ["windows"]["skipped"],
                     "extractable_pre": pre["fraction_extractable"],
                     "extractable_post": post["fraction_extractable"],
                     "max_log_pz": max(tops) if tops else None,
                     "metric": metric, **comparison_numbers(s["comparison"], metric),
                     "small_sample": min(pre["documents"], post["documents"]) < MIN_DOCUMENTS,
                     "n": head["n"], "p": head["p"]})
    df = pd.DataFrame(rows, columns=[*TABLE_COLUMNS, "n", "p"])
    return df


def _fmt(v: Any, digits: int = 3) -> str:
    f = _finite(v)
    return "n/a" if f is None else f"{f:.{digits}f}"


def _ci(v: Any, lo: Any, hi: Any) -> str:
    if _finite(v) is None:
        return "n/a"
    if _finite(lo) is None or _finite(hi) is None:
        return _fmt(v)
    return f"{_fmt(v)} [{_fmt(lo)}, {_fmt(hi)}]"


def table_markdown(df: pd.DataFrame) -> str:
    """The table as Markdown, with notes that say how to read each column."""
    head = df[["n", "p"]].drop_duplicates()
    np_text = ", ".join(f"(n={int(r.n)}, p={r.p:g})" for r in head.itertuples()) or "(none)"
    lines = ["| model | dataset | method | windows scored (failed, docs skipped) | "
             "D_pre extractable | D_post extractable | max p_z | metric | AUC [CI] | "
             "blind AUC | AUC - blind [CI] | small sample |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        top = _finite(r.max_log_pz)
        lines.append(
            f"| {r.model} | {r.dataset} | {r.method} | {r.windows_scored} "
            f"({r.windows_failed}, {r.documents_skipped}) | {_fmt(r.extractable_pre)} | "
            f"{_fmt(r.extractable_post)} | {'n/a' if top is None else f'{math.exp(top):.3g}'} "
            f"| {r.metric} | {_ci(r.auc, r.auc_low, r.auc_high)} | {_fmt(r.blind_auc)} | "
            f"{_ci(r.auc_minus_blind, r.auc_minus_blind_low, r.auc_minus_blind_high)} | "
            f"{'yes' if r.small_sample else 'no'} |")
    notes = [
        "",
        "Notes:",
        "",
        f"- Extractable: the share of scored windows whose suffix the model produces with "
        f"probability at least p within n samples, 1 - (1 - p_z)^n >= p, at {np_text} "
        "(Hayes et al. 2024; n=1, p=0.5 is Cooper et al. 2025's p_z >= 0.5).",
        "- p_z: the product over the suffix's tokens of p(token | everything before it), "
        "teacher-forced; max p_z is the largest over the dataset's windows.",
        "- AUC: D_pre against D_post on the per-document metric (0.5: no difference; above: "
        "D_pre more extractable), with its bootstrap interval. Blind AUC: a text-only "
        "classifier that never queries the model. AUC - blind: what the model tells beyond "
        "what the text alone tells (the headline).",
        "- Monte Carlo rows (method monte_carlo) estimate p_z from sampled continuations.",
        f"- Small sample: fewer than {MIN_DOCUMENTS} documents in D_pre or D_post (as MSR's "
        "table flags it): the AUC and its interval rest on a handful of documents.",
    ]
    return "\n".join([*lines, *notes]) + "\n"
