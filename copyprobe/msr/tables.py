"""The results table: one row per (dataset, model), laid out like the MSR paper's Table 1, with
the per-document statistics and the blind baseline beside it. Undefined values are written as
words, never as NaN."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

COLUMNS = [
    "dataset", "model", "n_pre", "n_post", "failed",
    "cliffs_delta", "ks", "kw_h", "kw_p", "paper_verdict",
    "f_pre", "f_post",
    "doc_cliffs_delta", "doc_cliffs_delta_ci", "doc_mw_p", "doc_roc_auc", "doc_roc_auc_ci",
    "doc_tpr_at_1pct_fpr", "max_longest_pre", "max_longest_post", "doc_verdict",
    "blind_auc", "blind_warning", "notes",
]


def _r(x: Any, nd: int = 3) -> Any:
    return round(x, nd) if isinstance(x, float) else x


def _ci(v: Any) -> str:
    return "undefined" if not v else f"[{v[0]:.3f}, {v[1]:.3f}]"


def table_rows(results: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in results:
        p, d, b = r["paper"], r["per_document"], r["blind_baseline"]
        s = r["scores"]
        rows.append({
            "dataset": r["dataset"], "model": r["model"], "n_pre": r["n_pre"],
            "n_post": r["n_post"], "failed": r["failed"],
            "cliffs_delta": _r(p["cliffs_delta"]), "ks": _r(p["ks"]), "kw_h": _r(p["kw_h"], 2),
            "kw_p": _r(p["kw_p"], 4), "paper_verdict": p["verdict"],
            "f_pre": " ".join(str(int(x)) for x in p["f_pre"]),
            "f_post": " ".join(str(int(x)) for x in p["f_post"]),
            "doc_cliffs_delta": _r(d.get("cliffs_delta")),
            "doc_cliffs_delta_ci": _ci(d.get("cliffs_delta_ci")),
            "doc_mw_p": _r(d.get("mw_p"), 4), "doc_roc_auc": _r(d.get("roc_auc")),
            "doc_roc_auc_ci": _ci(d.get("roc_auc_ci")),
            "doc_tpr_at_1pct_fpr": _r(d.get("tpr_at_1pct_fpr")),
            "max_longest_pre": max(s["longest_pre"], default=0),
            "max_longest_post": max(s["longest_post"], default=0),
            "doc_verdict": d.get("verdict", ""),
            "blind_auc": _r(b.get("auc")), "blind_warning": bool(b.get("warning")),
            "notes": " | ".join(r["notes"]),
        })
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["dataset", "model"], kind="stable").reset_index(drop=True)


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "undefined"
    return str(v).replace("|", "/")


def to_markdown(df: pd.DataFrame) -> str:
    """A compact Markdown table (paper columns + key extras), then the notes per row."""
    show = [("dataset", "Dataset"), ("model", "Model"), ("n_pre", "n pre"),
            ("n_post", "n post"), ("cliffs_delta", "Cliff's delta"), ("ks", "KS"),
            ("kw_h", "KW H"), ("kw_p", "KW p"), ("doc_cliffs_delta", "doc delta"),
            ("doc_roc_auc", "doc AUC"), ("max_longest_pre", "max match pre"),
            ("max_longest_post", "max match post"), ("blind_auc", "blind AUC"),
            ("paper_verdict", "paper mode")]
    lines = ["| " + " | ".join(h for _, h in show) + " |",
             "|" + "|".join("---" for _ in show) + "|"]
    for row in df.itertuples(index=False):
        d = row._asdict()
        lines.append("| " + " | ".join(_cell(d[c]) for c, _ in show) + " |")
    lines.append("")
    lines.append("Cliff's delta, KS, KW: paper mode, over the vectors F_post and F_pre of f_k "
                 "(negative delta: D_pre higher). doc: per-document longest common word "
                 "substring. blind AUC: a text-only classifier of D_pre vs D_post that never "
                 "queries a model. max match: longest verbatim match in words.")
    for row in df.itertuples(index=False):
        lines.append("")
        lines.append(f"- {row.dataset} / {row.model}: f_pre = [{row.f_pre}], "
                     f"f_post = [{row.f_post}]; per document: {row.doc_verdict}"
                     + (f". Notes: {row.notes}" if row.notes else ""))
    return "\n".join(lines) + "\n"
