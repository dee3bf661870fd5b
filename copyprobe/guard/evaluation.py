"""What the guard buys: guarded and unguarded models side by side on the same benchmark.

Reference: docs/guard-evaluation.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.artifacts import write_text
from copyprobe.copyright.analysis import refusal_counts, sort_rows, to_markdown, write_csv
from copyprobe.copyright.scored_table import validate_scored
from copyprobe.stats.common import bootstrap_ci

COMPONENTS = ("notice", "status", "risk")
ALL = "all"


def _judged(g: pd.DataFrame) -> np.ndarray:
    ok = g[g["status"] == "ok"]
    return ok["refused"].dropna().to_numpy(dtype=float)


def _diff(a: np.ndarray, b: np.ndarray, n_boot: int, ci: float, seed: int
          ) -> tuple[float, float, float]:
    """Mean of ``b`` minus mean of ``a`` and its interval (independent resamples of each)."""
    if a.size == 0 or b.size == 0:
        return np.nan, np.nan, np.nan

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    (iv,) = bootstrap_ci([a, b], stat, n_boot=n_boot, ci=ci, seed=seed)
    lo, hi = iv if iv is not None else (np.nan, np.nan)
    return float(b.mean() - a.mean()), lo, hi


_SIDE = ("n", "n_judged", "n_failed", "refusal_rate", "refusal_rate_ci_low",
         "refusal_rate_ci_high", "refusal_rule_rate")


def _side(prefix: str, g: pd.DataFrame, n_boot: int, ci: float, seed: int) -> dict[str, Any]:
    counts = refusal_counts(g, n_boot, ci, seed)
    return {f"{prefix}_{k}": counts[k] for k in _SIDE}


def _compare(base: pd.DataFrame, guarded: pd.DataFrame, n_boot: int, ci: float, seed: int
             ) -> dict[str, Any]:
    row = {**_side("base", base, n_boot, ci, seed), **_side("guarded", guarded, n_boot, ci, seed)}
    d, lo, hi = _diff(_judged(base), _judged(guarded), n_boot, ci, seed)
    row.update(delta=d, delta_ci_low=lo, delta_ci_high=hi)
    return row


def _check(scored: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("benchmark", "rights") if c not in scored.columns]
    if missing:
        raise ValueError(f"the pooled scored table lacks column(s) {missing} (added when the "
                         "benchmarks' tables are pooled)")
    return validate_scored(scored)


def table2(scored: pd.DataFrame, pairs: Mapping[str, str], *, n_boot: int = 2000,
           ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per (guarded model, its base) x task x notice form, on infringing requests about
    copyrighted materials: refusal without and with the guard and the difference; rows with
    task or notice form ``all`` pool them."""
    scored = _check(scored)
    df = scored[~scored["benign"] & (scored["rights"] == "copyrighted")]
    rows = []
    for guarded, base in pairs.items():
        b_all, g_all = df[df["model"] == base], df[df["model"] == guarded]
        for task in [*sorted(set(b_all["task"]) | set(g_all["task"])), ALL]:
            forms = sorted(set(b_all["notice_form"]) | set(g_all["notice_form"]))
            for form in [*forms, ALL]:
                def pick(d: pd.DataFrame) -> pd.DataFrame:
                    if task != ALL:
                        d = d[d["task"] == task]
                    return d if form == ALL else d[d["notice_form"] == form]

                rows.append({"model": base, "guarded_model": guarded, "task": task,
                             "notice_form": form,
                             **_compare(pick(b_all), pick(g_all), n_boot, ci, seed)})
    if not rows:
        return pd.DataFrame(columns=["model", "guarded_model", "task", "notice_form", "delta"])
    return sort_rows(pd.DataFrame(rows), ["model", "guarded_model", "notice_form", "task"])


def _sets(scored: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {
        "set1_open_materials": scored[~scored["benign"] & (scored["rights"] == "open")],
        "set2_benign_queries": scored[scored["benign"] & (scored["rights"] == "copyrighted")],
    }


def table6(scored: pd.DataFrame, pairs: Mapping[str, str], *, n_boot: int = 2000,
           ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Over-refusal per pair: set 1 (infringing-task queries on open materials) and set 2 (the
    benign queries on copyrighted materials), without and with the guard."""
    scored = _check(scored)
    rows = []
    for name, df in _sets(scored).items():
        for guarded, base in pairs.items():
            rows.append({"set": name, "model": base, "guarded_model": guarded,
                         **_compare(df[df["model"] == base], df[df["model"] == guarded],
                                    n_boot, ci, seed)})
    if not rows:
        return pd.DataFrame(columns=["set", "model", "guarded_model", "delta"])
    return pd.DataFrame(rows)


def components(guard: Mapping[str, Any]) -> dict[str, Any]:
    """Which components a guard block switches on, and its policy."""
    return {**{c: guard.get(c, True) is not False for c in COMPONENTS},
            "policy": guard.get("policy", "remind")}


def ablation(scored: pd.DataFrame, pairs: Mapping[str, str],
             guards: Mapping[str, Mapping[str, Any]], *, n_boot: int = 2000, ci: float = 0.95,
             seed: int = 0) -> pd.DataFrame:
    """Per guarded variant: its components and policy, the refusal of infringing requests on
    copyrighted materials (all tasks and forms) and the over-refusal of both sets, each beside
    its base's."""
    scored = _check(scored)
    infringing = scored[~scored["benign"] & (scored["rights"] == "copyrighted")]
    sets = _sets(scored)
    rows = []
    for guarded, base in pairs.items():
        row: dict[str, Any] = {"model": base, "guarded_model": guarded,
                               **components(guards.get(guarded, {}))}
        for label, df in (("infringing", infringing), *sets.items()):
            cmp = _compare(df[df["model"] == base], df[df["model"] == guarded], n_boot, ci,
                           seed)
            row.update({f"{label}_{k}": v for k, v in cmp.items()
                        if k.endswith(("refusal_rate", "_n_judged")) or k.startswith("delta")})
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["model", "guarded_model", *COMPONENTS, "policy"])
    return sort_rows(pd.DataFrame(rows), ["model", "guarded_model"])


def latency(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per guarded model: how many requests the guard passed, reminded and blocked, and the
    seconds each check added (median and 95th percentile over the requests it ran on; the
    status verifier runs only when no notice is found) and in all (``total``: the notice
    identifier and status verifier run while the risk analyzer runs, so it is about
    max(notice + status, risk))."""
    rows = []
    for model, g in decisions.groupby("model", sort=True):
        row: dict[str, Any] = {"guarded_model": model, "n": len(g)}
        for action in ("pass", "remind", "block"):
            row[f"n_{action}"] = int((g["action"] == action).sum())
        for check in (*COMPONENTS, "total"):
            v = pd.to_numeric(g[f"{check}_s"], errors="coerce").dropna().to_numpy(dtype=float)
            row[f"{check}_runs"] = int(v.size)
            row[f"{check}_median_ms"] = float(np.median(v) * 1000) if v.size else np.nan
            row[f"{check}_p95_ms"] = float(np.quantile(v, 0.95) * 1000) if v.size else np.nan
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["guarded_model", "n", "n_pass", "n_remind", "n_block"])
    return pd.DataFrame(rows)


CAPTIONS = {
    "table2": "Table 2: refusal rate of infringing requests on copyrighted materials without "
              "(`base_`) and with (`guarded_`) the guard, per task and notice form (`all` pools "
              "them), in percent with {ci} bootstrap intervals; `delta` is guarded minus base "
              "in percentage points. Judged verdicts only; failed and unparseable rows apart.",
    "table6": "Table 6: over-refusal without and with the guard. Set 1: infringing-task "
              "queries on open (public-domain or openly licensed) materials; set 2: benign "
              "queries (summary, author, comment, background) on copyrighted materials.",
    "latency": "What the guard did and what it cost per guarded model: requests passed, "
               "reminded and blocked, and the milliseconds each check added (median and 95th "
               "percentile over the requests it ran on; `total` is the guard's whole delay, "
               "the risk analyzer running alongside the other two checks). Cached decisions "
               "keep the timings of the run that made them.",
    "ablation": "Guard ablation: each guarded variant's components (notice identifier, status "
                "verifier, query risk analyzer) and policy, its refusal of infringing requests "
                "and its over-refusal on sets 1 and 2, beside its base model's.",
}


def write_guard_tables(scored: pd.DataFrame, pairs: Mapping[str, str],
                       guards: Mapping[str, Mapping[str, Any]], out_dir: str | os.PathLike[str],
                       *, decisions: pd.DataFrame | None = None, n_boot: int = 2000,
                       ci: float = 0.95, seed: int = 0) -> dict[str, list[Path]]:
    """table2, table6, ablation and (with ``decisions``, the guarded models' decision
    sidecars) latency, as CSV and Markdown under ``out_dir``."""
    kw = {"n_boot": n_boot, "ci": ci, "seed": seed}
    tables = {"table2": table2(scored, pairs, **kw), "table6": table6(scored, pairs, **kw),
              "ablation": ablation(scored, pairs, guards, **kw)}
    out = Path(out_dir)
    written = {}
    for name, df in tables.items():
        caption = CAPTIONS[name].format(ci=f"{100 * ci:g}%")
        written[name] = [write_csv(df, out / f"{name}.csv"),
                         write_text(out / f"{name}.md", to_markdown(df, caption))]
    if decisions is not None:
        df = latency(decisions)
        written["latency"] = [write_csv(df, out / "latency.csv"),
                              write_text(out / "latency.md",
                                         to_markdown(df, CAPTIONS["latency"]))]
    return written
