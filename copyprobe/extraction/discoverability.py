"""TEMP stand-in (drop at merge): the math helper's module replaces it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

DEFAULT_N = (1, 10, 100, 1000)
DEFAULT_P = (0.001, 0.01, 0.1, 0.5)


def pz_threshold(n, p):
    return 1.0 - (1.0 - p) ** (1.0 / n)


def extraction_probability(log_pz, n):
    return -np.expm1(n * np.log1p(-np.exp(np.asarray(log_pz, dtype=float))))


def extractable(log_pz, n, p):
    return np.asarray(log_pz, dtype=float) >= math.log(pz_threshold(n, p))


def verdict_column(n, p):
    return f"n{n}_p{p:g}"


def verdict_columns(ns, ps):
    return [verdict_column(n, p) for n in ns for p in ps]


def window_verdicts(windows_df, ns, ps):
    out = windows_df.copy()
    lp = out["log_pz"].astype(float)
    ok = out["status"] == "scored"
    for n in ns:
        for p in ps:
            out[verdict_column(n, p)] = ok & extractable(lp.fillna(-np.inf), n, p)
    out["p_z"] = np.exp(lp)
    return out


def _run(flags):
    best = cur = 0
    for f in flags:
        cur = cur + 1 if f else 0
        best = max(best, cur)
    return best


def document_summary(windows_df, ns, ps):
    w = window_verdicts(windows_df, ns, ps)
    rows = []
    for doc, g in w.sort_values("window_index").groupby("doc_id", sort=False):
        s = g[g["status"] == "scored"]
        row = {"doc_id": doc, "n_windows": len(g), "n_scored": len(s),
               "n_failed": int((g["status"] == "failed").sum())}
        for c in verdict_columns(ns, ps):
            row[f"frac_{c}"] = float(s[c].mean()) if len(s) else float("nan")
            row[f"longest_run_{c}"] = _run(s[c])
        row["max_log_pz"] = float(s["log_pz"].max()) if len(s) else float("nan")
        row["max_pz"] = float(np.exp(row["max_log_pz"]))
        row["mean_log_pz_per_token"] = (float((s["log_pz"] / s["n_tokens"]).mean())
                                        if len(s) else float("nan"))
        row["greedy_frac"] = float(s["greedy_match"].astype(float).mean()) if len(s) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def np_curve(windows, ns, ps):
    s = windows[windows["status"] == "scored"]
    rows = []
    for n in ns:
        for p in ps:
            t = pz_threshold(n, p)
            rows.append({"n": n, "p": p, "threshold": t,
                         "fraction": float(extractable(s["log_pz"], n, p).mean()) if len(s) else float("nan"),
                         "n_windows": len(s)})
    return pd.DataFrame(rows)
