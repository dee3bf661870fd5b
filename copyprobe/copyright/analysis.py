"""The compliance benchmark's results from a SCORED table (copyprobe.copyright.scored_table).

Reference: docs/copyright-results.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from copyprobe.artifacts import write_text
from copyprobe.copyright.notices import NOTICE_FORMS
from copyprobe.copyright.queries import BENIGN_TASKS, TASKS
from copyprobe.copyright.scored_table import validate_scored
from copyprobe.stats.common import bootstrap_ci

__all__ = [
    "TASK_METRICS",
    "by_category",
    "by_notice_form",
    "infringement_rows",
    "mean_ci",
    "over_refusal",
    "refusal_counts",
    "sort_rows",
    "table1",
    "table5",
    "to_markdown",
    "write_csv",
    "write_tables",
]

#: The similarity metric(s) of each infringement task, the first being the one reported (the
#: paper reports ROUGE-L precision for repetition and extraction; F1 is given beside it).
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "repetition": ("rouge_l_precision", "rouge_l_f1"),
    "extraction": ("rouge_l_precision", "rouge_l_f1"),
    "paraphrase": ("bertscore_f1",),
    "translation": ("embedding_cosine",),
}
#: Tasks pooled into the ROUGE-L distributions of Figure 6, under this task label.
ROUGE_TASKS = ("repetition", "extraction")
ROUGE_POOL = "repetition+extraction"
NO_NOTICE = "none"
# Display order of the known notice forms and tasks; any other value follows, sorted.
FORM_ORDER = NOTICE_FORMS
TASK_ORDER = (*TASKS, ROUGE_POOL, *BENIGN_TASKS, "all")


def _order_key(order: Sequence[str]) -> Any:
    def key(s: pd.Series) -> pd.Series:
        return s.map(lambda v: (order.index(v), "") if v in order else (len(order), str(v)))
    return key


def sort_rows(df: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """``df`` sorted by ``cols``: notice forms and tasks in the benchmark's order, others
    alphabetically."""
    orders = {"notice_form": FORM_ORDER, "task": TASK_ORDER, "level": ("responses", "cells")}
    for col in reversed(cols):  # stable sorts from the last key to the first
        key = _order_key(orders[col]) if col in orders else None
        df = df.sort_values(col, key=key, kind="stable")
    return df.reset_index(drop=True)


def mean_ci(values: np.ndarray, n_boot: int, ci: float, seed: int) -> tuple[float, float, float]:
    """Mean and its percentile-bootstrap interval; NaN when there is no value."""
    if values.size == 0:
        return np.nan, np.nan, np.nan
    mean = float(values.mean())
    if n_boot <= 0:
        return mean, np.nan, np.nan
    (interval,) = bootstrap_ci([values], np.mean, n_boot=n_boot, ci=ci, seed=seed)
    lo, hi = interval if interval is not None else (np.nan, np.nan)
    return mean, lo, hi


def refusal_counts(g: pd.DataFrame, n_boot: int, ci: float, seed: int) -> dict[str, Any]:
    """The refusal counts of a group of scored rows and the judged refusal rate with its
    interval (parsed verdicts of generated responses only), beside the rule detector's rate."""
    ok = g[g["status"] == "ok"]
    judged = ok["refused"].dropna().to_numpy(dtype=float)
    rate, lo, hi = mean_ci(judged, n_boot, ci, seed)
    rule = ok["refusal_rule"].dropna().to_numpy(dtype=float)
    return {
        "n": len(g),
        "n_ok": len(ok),
        "n_failed": int((g["status"] == "failed").sum()),
        "n_judged": int(judged.size),
        "n_refused": int(judged.sum()),
        "n_unparseable": int((ok["refusal_judge"] == "unparseable").sum()),
        "n_unjudged": int(ok["refusal_judge"].isna().sum()),
        "refusal_rate": rate,
        "refusal_rate_ci_low": lo,
        "refusal_rate_ci_high": hi,
        "refusal_rule_rate": float(rule.mean()) if rule.size else np.nan,
    }


def decided_refusal(df: pd.DataFrame) -> pd.Series:
    """Per row: True/False (refused or not) or NA (failed, or a verdict that did not parse):
    the judge's parsed verdict, else the rule detector's where the judge did not run."""
    judge = df["refusal_judge"]
    rule = df["refusal_rule"].astype("boolean")
    out = df["refused"].astype("boolean").copy()
    use_rule = judge.isna() & out.isna()
    out[use_rule] = rule[use_rule]
    out[df["status"] != "ok"] = pd.NA
    return out


def _similarity(ok: pd.DataFrame, metric: str, n_boot: int, ci: float, seed: int,
                prefix: str = "similarity", *, spread: bool = False) -> dict[str, Any]:
    values = ok[metric].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    mean, lo, hi = mean_ci(values, n_boot, ci, seed)
    out = {f"{prefix}": mean, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi,
           f"n_{prefix}": int(values.size)}
    if spread:
        q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0]) if values.size else [np.nan] * 5
        out.update({f"{prefix}_{name}": float(v)
                    for name, v in zip(("min", "p25", "median", "p75", "max"), q)})
    return out


def _per_task(df: pd.DataFrame, keys: list[str], n_boot: int, ci: float, seed: int, *,
              spread: bool, f1: bool) -> pd.DataFrame:
    """One row per ``keys`` group of the infringement rows: similarity of the task's metric and
    the refusal counts. ``keys`` must include ``task``."""
    rows = []
    for values, g in df.groupby(keys, sort=False, dropna=False):
        key = dict(zip(keys, values))
        metrics = TASK_METRICS.get(key["task"], ("rouge_l_precision",) if key["task"] == ROUGE_POOL
                                   else ())
        row: dict[str, Any] = {**key, "metric": metrics[0] if metrics else ""}
        refused = decided_refusal(g).fillna(False).astype(bool)
        ok = g[(g["status"] == "ok") & ~refused]
        if metrics:
            row.update(_similarity(ok, metrics[0], n_boot, ci, seed, spread=spread))
        if f1:
            row.update(_similarity(ok, "rouge_l_f1", n_boot, ci, seed, prefix="rouge_l_f1")
                       if len(metrics) > 1 else
                       {"rouge_l_f1": np.nan, "rouge_l_f1_ci_low": np.nan,
                        "rouge_l_f1_ci_high": np.nan, "n_rouge_l_f1": 0})
        row.update(refusal_counts(g, n_boot, ci, seed))
        row["n_refusals_left_out"] = int(refused.sum())
        rows.append(row)
    if not rows:  # e.g. no row without a notice: an empty table, not an error
        return pd.DataFrame(columns=[*keys, "metric", "n", "n_failed", "refusal_rate"])
    return sort_rows(pd.DataFrame(rows), keys)


def infringement_rows(scored: pd.DataFrame, notice_form: str | None) -> pd.DataFrame:
    """The non-benign rows, of ``notice_form`` only unless it is None."""
    df = scored[~scored["benign"]]
    return df if notice_form is None else df[df["notice_form"] == notice_form]


def table1(scored: pd.DataFrame, *, notice_form: str | None = NO_NOTICE, n_boot: int = 2000,
           ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per model and task: the task's similarity metric (``metric``; mean ``similarity`` with
    its interval), ROUGE-L F1 beside precision for repetition and extraction, the refusal rate
    with its interval, and the counts. Rows of ``notice_form`` only (None: every form)."""
    scored = validate_scored(scored)
    return _per_task(infringement_rows(scored, notice_form), ["model", "task"], n_boot, ci, seed,
                     spread=False, f1=True)


def _with_rouge_pool(df: pd.DataFrame) -> pd.DataFrame:
    pool = df[df["task"].isin(ROUGE_TASKS)].assign(task=ROUGE_POOL)
    return pd.concat([df, pool], ignore_index=True)


def by_notice_form(scored: pd.DataFrame, *, n_boot: int = 2000, ci: float = 0.95,
                   seed: int = 0) -> pd.DataFrame:
    """Per model, notice form and task: the similarity distribution (mean with interval, min,
    quartiles, max) and the refusal rate; plus the task ``repetition+extraction`` pooling the
    ROUGE-L precision of both (Figure 6's distributions)."""
    scored = validate_scored(scored)
    df = _with_rouge_pool(infringement_rows(scored, None))
    return _per_task(df, ["model", "notice_form", "task"], n_boot, ci, seed, spread=True,
                     f1=False)


def by_category(scored: pd.DataFrame, *, notice_form: str | None = NO_NOTICE, n_boot: int = 2000,
                ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per model, material category and task: similarity and refusal rate (Figure 8), on the
    rows of ``notice_form`` only (None: every form)."""
    scored = validate_scored(scored)
    return _per_task(infringement_rows(scored, notice_form), ["model", "category", "task"], n_boot,
                     ci, seed, spread=True, f1=False)


def _correlate(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Pearson (for a 0/1 ``y`` this is the point-biserial r) and Spearman, with p-values;
    NaN and a note when either side is constant or there are fewer than 3 pairs."""
    out: dict[str, Any] = {"n": int(x.size), "pearson_r": np.nan, "pearson_p": np.nan,
                           "spearman_rho": np.nan, "spearman_p": np.nan, "note": ""}
    if x.size < 3:
        out["note"] = "fewer than 3 pairs"
    elif np.all(x == x[0]) or np.all(y == y[0]):
        out["note"] = ("refusal is constant" if np.all(y == y[0]) else "metric is constant")
    else:
        r = sps.pearsonr(x, y)
        rho = sps.spearmanr(x, y)
        out.update(pearson_r=float(r.statistic), pearson_p=float(r.pvalue),
                   spearman_rho=float(rho.statistic), spearman_p=float(rho.pvalue))
    return out


def table5(scored: pd.DataFrame, *, notice_form: str | None = None,
           pool_models: bool = True) -> pd.DataFrame:
    """How each task's similarity metric goes with refusal, with p-values.

    ``level == "responses"``: per model (and ``model == "all"`` pooling the models when
    ``pool_models``) and task, over the ok responses with a parsed verdict and a defined metric,
    the point-biserial correlation (Pearson's r with refusal as 0/1) and Spearman's rho between
    the metric and refusal. ``level == "cells"``: per task, across the (model, notice form)
    cells, the correlation of the cell's mean metric with its refusal rate, which is what
    a table over many models can report (the paper's Table 5 gives one Pearson and one
    Spearman value per task). Negative values: responses that refuse are less similar.
    """
    scored = validate_scored(scored)
    df = infringement_rows(scored, notice_form)
    df = df[(df["status"] == "ok") & df["refused"].notna()]
    groups: list[tuple[str, pd.DataFrame]] = [(str(m), g) for m, g in df.groupby("model")]
    if pool_models and len(groups) > 1:
        groups.append(("all", df))
    rows = []
    for model, g in groups:
        for task, t in g.groupby("task"):
            metric = TASK_METRICS.get(str(task), ("",))[0]
            if not metric:
                continue
            t = t[np.isfinite(t[metric].to_numpy(dtype=float))]
            x = t[metric].to_numpy(dtype=float)
            y = t["refused"].to_numpy(dtype=float)
            rows.append({"level": "responses", "model": model, "task": task, "metric": metric,
                         **_correlate(x, y), "n_refused": int(y.sum())})
    for task, t in df.groupby("task"):
        metric = TASK_METRICS.get(str(task), ("",))[0]
        if not metric:
            continue
        t = t[np.isfinite(t[metric].to_numpy(dtype=float))]
        cells = t.groupby(["model", "notice_form"]).agg(m=(metric, "mean"),
                                                        r=("refused", "mean"))
        rows.append({"level": "cells", "model": "all", "task": task, "metric": metric,
                     **_correlate(cells["m"].to_numpy(dtype=float),
                                  cells["r"].to_numpy(dtype=float)),
                     "n_refused": int(t["refused"].astype(bool).sum())})
    cols = ["level", "model", "task", "metric", "n", "n_refused", "pearson_r", "pearson_p",
            "spearman_rho", "spearman_p", "note"]
    return sort_rows(pd.DataFrame(rows, columns=cols), ["level", "model", "task"])


def over_refusal(scored: pd.DataFrame, *, n_boot: int = 2000, ci: float = 0.95,
                 seed: int = 0) -> pd.DataFrame:
    """Refusal rate on the benign rows per model and task, and per model over all benign tasks
    (``task == "all"``), with intervals and counts. Empty when there are no benign rows."""
    scored = validate_scored(scored)
    benign = scored[scored["benign"]]
    df = pd.concat([benign, benign.assign(task="all")], ignore_index=True)
    rows = [{"model": m, "task": t, **refusal_counts(g, n_boot, ci, seed)}
            for (m, t), g in df.groupby(["model", "task"], sort=False)]
    cols = ["model", "task", "n", "n_ok", "n_failed", "n_judged", "n_refused", "n_unparseable",
            "n_unjudged", "refusal_rate", "refusal_rate_ci_low", "refusal_rate_ci_high",
            "refusal_rule_rate"]
    return sort_rows(pd.DataFrame(rows, columns=cols), ["model", "task"])


# ---- writers --------------------------------------------------------------------------------

def write_csv(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """``df`` as CSV (no index, full float precision, empty cells for NaN), written atomically."""
    return write_text(path, df.to_csv(index=False, lineterminator="\n"))


def _pct(v: Any) -> str:
    return "–" if v is None or pd.isna(v) else f"{100 * float(v):.2f}"


def _cell(row: pd.Series, col: str) -> str:
    """A value as Markdown: rates and means in percent with their interval, counts as integers,
    correlations to 3 decimals, p-values in 2 significant digits, milliseconds to 1 decimal."""
    v = row[col]
    if f"{col}_ci_low" in row.index:
        lo, hi = row[f"{col}_ci_low"], row[f"{col}_ci_high"]
        ci = "" if pd.isna(lo) else f" [{_pct(lo)}, {_pct(hi)}]"
        return _pct(v) + ci
    if col.endswith("_ms"):  # durations in milliseconds
        return "–" if pd.isna(v) else f"{float(v):.1f}"
    if col.endswith(("_p", "_pvalue")):
        return "–" if pd.isna(v) else f"{float(v):.2g}"
    if col in ("pearson_r", "spearman_rho", "cohen_kappa"):
        return "–" if pd.isna(v) else f"{float(v):.3f}"
    if isinstance(v, (float, np.floating)) and not (col == "n" or col.startswith("n_")):
        return _pct(v)
    return str(v).replace("|", "/")


def to_markdown(df: pd.DataFrame, caption: str = "",
                columns: Iterable[str] | None = None) -> str:
    """A Markdown table of ``columns`` (default: all but the interval ends, which are shown
    in brackets beside their value), with ``caption`` as a paragraph below it."""
    show = [c for c in (columns or df.columns) if not c.endswith(("_ci_low", "_ci_high"))]
    lines = ["| " + " | ".join(show) + " |", "|" + "|".join("---" for _ in show) + "|"]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_cell(row, c) for c in show) + " |")
    if df.empty:
        lines.append("| " + " | ".join("" for _ in show) + " |")
    return "\n".join(lines) + ("\n\n" + caption if caption else "") + "\n"


CAPTIONS = {
    "table1": "Table 1: per model and infringement task, without a copyright notice: the task's "
              "similarity metric (`metric`: ROUGE-L precision for repetition and extraction, "
              "F1 beside it; BERTScore F1 for paraphrase; embedding cosine for translation) over "
              "the answers that did not refuse, and the judge's refusal rate, in percent with "
              "{ci} bootstrap intervals. Failed "
              "responses and unparseable verdicts are counted apart, never as refusals.",
    "by_notice_form": "Per model, notice form and task: the similarity distribution (mean with "
                      "its {ci} interval, quartiles) and the refusal rate, in percent; "
                      "`repetition+extraction` pools the ROUGE-L precision of both tasks "
                      "(Figure 6).",
    "by_category": "Per model, material category and task, without a notice: similarity and "
                   "refusal rate in percent with {ci} intervals (Figure 8).",
    "table5": "Table 5: correlation of each task's similarity metric with refusal. `responses`: "
              "per model over single responses (Pearson's r with refusal as 0/1, i.e. the "
              "point-biserial correlation, and Spearman's rho); `cells`: across (model, notice "
              "form) cells, cell mean against cell refusal rate. Negative: refusing responses "
              "are less similar.",
    "over_refusal": "Over-refusal: refusal rate on the benign queries (summary, author, "
                    "comment, background), in percent with {ci} intervals.",
}


def write_tables(scored: pd.DataFrame, out_dir: str | os.PathLike[str], *, n_boot: int = 2000,
                 ci: float = 0.95, seed: int = 0) -> dict[str, list[Path]]:
    """Every table as ``<name>.csv`` and ``<name>.md`` under ``out_dir``; returns the paths."""
    scored = validate_scored(scored)
    kw = {"n_boot": n_boot, "ci": ci, "seed": seed}
    tables = {
        "table1": table1(scored, **kw),
        "by_notice_form": by_notice_form(scored, **kw),
        "by_category": by_category(scored, **kw),
        "table5": table5(scored),
        "over_refusal": over_refusal(scored, **kw),
    }
    out = Path(out_dir)
    written: dict[str, list[Path]] = {}
    for name, df in tables.items():
        caption = CAPTIONS[name].format(ci=f"{100 * ci:g}%")
        written[name] = [write_csv(df, out / f"{name}.csv"),
                         write_text(out / f"{name}.md", to_markdown(df, caption))]
    return written
