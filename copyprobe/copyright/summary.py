"""The benchmark's answer for one scored run, as ``copyright-score`` prints it and writes it
beside the scored table (``<out>.summary.md``): refusal rate by task and notice form, copying
by each task's metric (refusals left out), over-refusal on the benign queries, failures and
unparseable verdicts counted apart, and the rule detector's agreement with the judge.

A response's refusal is the judge's parsed verdict, else the rule detector's where the judge
did not run; an unparseable verdict is neither. Rate intervals are Wilson score intervals
(``scipy.stats.binomtest``), mean intervals percentile bootstraps (:func:`analysis.mean_ci`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from copyprobe.artifacts import write_text
from copyprobe.copyright.analysis import (
    TASK_METRICS,
    decided_refusal,
    mean_ci,
    sort_rows,
    to_markdown,
)

__all__ = ["summary_tables", "summary_markdown", "write_summary"]


def _rate(k: int, n: int, ci: float) -> tuple[float, float, float]:
    if n == 0:
        return np.nan, np.nan, np.nan
    lo, hi = sps.binomtest(k, n).proportion_ci(confidence_level=ci, method="wilson")
    return k / n, float(lo), float(hi)


def _refusals(g: pd.DataFrame, ci: float) -> dict[str, Any]:
    decided = g["_refused"].dropna()
    k = int(decided.astype(bool).sum())
    rate, lo, hi = _rate(k, len(decided), ci)
    judged = g["refused"].notna().sum()
    basis = ("judge" if judged == len(decided) else "rules" if judged == 0 else "judge+rules")
    return {"n": len(g), "n_failed": int((g["status"] != "ok").sum()),
            "n_unparseable": int((g["refusal_judge"] == "unparseable").sum()),
            "n_decided": len(decided), "n_refused": k, "refusal_rate": rate,
            "refusal_rate_ci_low": lo, "refusal_rate_ci_high": hi,
            "basis": basis if len(decided) else ""}


def summary_tables(scored: pd.DataFrame, *, ci: float = 0.95, n_boot: int = 1000,
                   seed: int = 0) -> dict[str, pd.DataFrame]:
    """The summary's tables of a SCORED(_RUN) table: ``refusal`` (model x task x notice form),
    ``copying`` (model x task, each task's metric over the answers that did not refuse),
    ``over_refusal`` (model x benign task and all), ``failures`` (model x error class),
    ``agreement`` (rule vs judge, where the judge ran)."""
    from copyprobe.copyright.refusal import agreement

    if not len(scored):
        raise ValueError("no scored responses to summarise (an empty list)")
    df = scored.assign(_refused=decided_refusal(scored))
    harm, benign = df[~df["benign"].astype(bool)], df[df["benign"].astype(bool)]
    refusal = [{"model": m, "task": t, "notice_form": f, **_refusals(g, ci)}
               for (m, t, f), g in harm.groupby(["model", "task", "notice_form"], sort=False)]
    copying = []
    for (m, t), g in harm.groupby(["model", "task"], sort=False):
        metric = TASK_METRICS.get(str(t), ("",))[0]
        if not metric:
            continue
        ok = g[(g["status"] == "ok")]
        kept = ok[ok["_refused"].fillna(False) == False]  # noqa: E712 (NA: kept)
        values = kept[metric].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if not values.size:  # not computed (--metrics rouge-l), or every answer refused
            continue
        mean, lo, hi = mean_ci(values, n_boot, ci, seed)
        copying.append({"model": m, "task": t, "metric": metric, "mean": mean,
                        "mean_ci_low": lo, "mean_ci_high": hi, "n": int(values.size),
                        "n_refusals_left_out": int(ok["_refused"].fillna(False).sum())})
    over = [{"model": m, "task": t, **_refusals(g, ci)}
            for (m, t), g in pd.concat([benign, benign.assign(task="all")])
            .groupby(["model", "task"], sort=False)] if len(benign) else []
    failed = df[df["status"] != "ok"]
    failures = [{"model": m, "error_class": str(e), "n": len(g)} for (m, e), g in
                failed.fillna({"error_class": "failed"}).groupby(["model", "error_class"])] \
        if "error_class" in df else [{"model": m, "error_class": "failed", "n": len(g)}
                                     for m, g in failed.groupby("model")]
    unparseable = df[df["refusal_judge"] == "unparseable"]
    failures += [{"model": m, "error_class": "unparseable judge verdict", "n": len(g)}
                 for m, g in unparseable.groupby("model")]
    ok = df[(df["status"] == "ok") & df["refusal_judge"].notna()]
    if "decided_by" in ok:
        ok = ok[ok["decided_by"] != "rules"]
    agree = [{"model": m, **{k: v for k, v in agreement(
        g["refusal_rule"].fillna(False).astype(bool).tolist(),
        [j if isinstance(j, str) else None for j in g["refusal_judge"]]).items()
        if k in ("n", "both_yes", "both_no", "rule_only", "judge_only", "observed_agreement",
                 "cohen_kappa", "unparseable")}} for m, g in ok.groupby("model")]
    return {
        "refusal": sort_rows(pd.DataFrame(refusal), ["model", "task", "notice_form"]),
        "copying": (sort_rows(pd.DataFrame(copying), ["model", "task"]) if copying else
                    pd.DataFrame(columns=["model", "task", "metric", "mean", "n",
                                          "n_refusals_left_out"])),
        "over_refusal": (sort_rows(pd.DataFrame(over), ["model", "task"]) if over else
                         pd.DataFrame(columns=["model", "task", "n", "refusal_rate"])),
        "failures": pd.DataFrame(failures, columns=["model", "error_class", "n"]),
        "agreement": pd.DataFrame(agree, columns=["model", "n", "both_yes", "both_no",
                                                  "rule_only", "judge_only",
                                                  "observed_agreement", "cohen_kappa"]),
    }


_HEADINGS = {
    "refusal": "Refusal rate by task and notice form (percent, {ci} Wilson intervals; `basis`: "
               "the judge's verdicts, or the rule detector where no judge ran; failed answers "
               "and unparseable verdicts are left out and counted)",
    "copying": "Copying by each task's metric (percent; ROUGE-L precision against the text "
               "shown for repetition and extraction, BERTScore F1 for paraphrase, embedding "
               "cosine for translation, where computed), over the answers that did not refuse, "
               "mean with its {ci} bootstrap interval",
    "over_refusal": "Over-refusal: refusal rate on the benign queries (percent, {ci} Wilson "
                    "intervals)",
    "failures": "Failures, counted apart (never a refusal, never scored): failed or empty "
                "answers by error class, and judge verdicts that did not parse",
    "agreement": "Rule detector against the judge, on the answers the judge decided",
}


def summary_markdown(tables: dict[str, pd.DataFrame], ci: float = 0.95) -> str:
    """The tables as one Markdown document, each under its heading."""
    parts = []
    for name, df in tables.items():
        heading = _HEADINGS[name].format(ci=f"{100 * ci:g}%")
        body = to_markdown(df) if len(df) else "(none)\n"
        parts.append(f"## {name}\n\n{heading}.\n\n{body}")
    return "\n".join(parts)


def write_summary(scored: pd.DataFrame, path: str | os.PathLike[str], *, ci: float = 0.95
                  ) -> tuple[Path, str, dict[str, pd.DataFrame]]:
    """Write the summary's Markdown to ``path``; returns it, its text and the tables."""
    tables = summary_tables(scored, ci=ci)
    text = "# copyright-score summary\n\n" + summary_markdown(tables, ci)
    return write_text(path, text), text, tables
