"""Tables of the MSR study, from stats JSON results (see copyprobe.msr.analysis).

* :func:`table_rows` / :func:`to_markdown`: one row per (dataset, model), laid out like the
  MSR paper's Table 1, with the per-document statistics, HELM's prefix and edit similarity
  and the blind baseline beside it;
* :func:`sweep_table`: the paper-mode statistics per setting of one parameter (the paper's
  Table 2: input lengths);
* :func:`comparison_rows`: settings comparisons (e.g. temperature 0.1 vs 0.7).

Undefined values are written as words, never as NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from copyprobe.msr.analysis import DOC_DIRECTION, PAPER_DIRECTION, SMALL_SAMPLE_DOCUMENTS

COLUMNS = [
    "dataset", "model", "decoding", "msr_settings", "documents_pre", "documents_post",
    "generations_failed", "small_sample",
    "cliffs_delta", "ks_statistic", "kw_h", "kw_p", "paper_verdict",
    "f_pre", "f_post",
    "doc_cliffs_delta", "doc_cliffs_delta_ci", "doc_mw_p", "doc_roc_auc", "doc_roc_auc_ci",
    "doc_tpr_at_1pct_fpr", "max_longest_pre", "max_longest_post", "doc_verdict",
    "lcp_mean_pre", "lcp_mean_post", "lcp_cliffs_delta",
    "edit_similarity_mean_pre", "edit_similarity_mean_post", "edit_similarity_cliffs_delta",
    "blind_auc", "blind_warning", "notes",
]

SWEEP_COLUMNS = ["parameter", "setting", "k_values", "documents_pre", "documents_post",
                 "small_sample", "cliffs_delta", "ks_statistic", "kw_h", "kw_p", "verdict",
                 "f_pre", "f_post"]

DIRECTION_NOTE = (f"Direction: {PAPER_DIRECTION}; {DOC_DIRECTION}. Both use the MSR paper's "
                  "sign: negative means D_pre is higher.")


def _r(x: Any, nd: int = 3) -> Any:
    return round(x, nd) if isinstance(x, float) else x


def _ci(v: Any) -> str:
    return "undefined" if not v else f"[{v[0]:.3f}, {v[1]:.3f}]"


def _vector(values: Iterable[float]) -> str:
    return " ".join(str(int(x)) for x in values)


def _k_range(ks: list[int]) -> str:
    return f"{ks[0]}-{ks[-1]}" if ks else ""


def decoding_label(settings: Mapping[str, Any] | None) -> str:
    """How the generations were decoded, in words: ``greedy`` or ``temperature 0.1``, with
    top_p and the number of samples when they are not the defaults."""
    d = (settings or {}).get("decoding") or {}
    if not d:
        return "not recorded"
    t = float(d.get("temperature", 0.0) or 0.0)
    parts = ["greedy" if t == 0.0 else f"temperature {t:g}"]
    top_p = d.get("top_p")
    if t != 0.0 and top_p is not None and float(top_p) != 1.0:
        parts.append(f"top_p {float(top_p):g}")
    samples = int(d.get("samples", 1) or 1)
    if samples > 1:
        parts.append(f"{samples} samples")
    return ", ".join(parts)


def msr_label(settings: Mapping[str, Any] | None) -> str:
    """The MSR settings in words, e.g. ``n=6, 1000 words``."""
    m = (settings or {}).get("msr") or {}
    parts = []
    if "n" in m:
        parts.append(f"n={m['n']}")
    if "num_words" in m:
        parts.append(f"{m['num_words']} words")
    return ", ".join(parts) or "not recorded"


def _small_sample(r: Mapping[str, Any]) -> str:
    """``yes (3 vs 3 documents)`` when either set has fewer than the minimum, else ``no``;
    derived from the document counts as well as from the per-document flag."""
    n_pre, n_post = r["documents_pre"], r["documents_post"]
    small = (bool(r["per_document"].get("small_sample"))
             or min(n_pre, n_post) < SMALL_SAMPLE_DOCUMENTS)
    return f"yes ({n_pre} vs {n_post} documents)" if small else "no"


def table_rows(results: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in results:
        p, d, b, h = r["paper"], r["per_document"], r["blind_baseline"], r["helm"]
        docs = r["documents"]
        lcp, es = h["longest_common_prefix"], h["edit_similarity"]
        settings = r.get("settings")
        rows.append({
            "dataset": r["dataset"], "model": r["model"],
            "decoding": decoding_label(settings), "msr_settings": msr_label(settings),
            "documents_pre": r["documents_pre"], "documents_post": r["documents_post"],
            "generations_failed": r["generations_failed"], "small_sample": _small_sample(r),
            "cliffs_delta": _r(p["cliffs_delta"]), "ks_statistic": _r(p["ks_statistic"]),
            "kw_h": _r(p["kw_h"], 2), "kw_p": _r(p["kw_p"], 4), "paper_verdict": p["verdict"],
            "f_pre": _vector(p["f_pre"]), "f_post": _vector(p["f_post"]),
            "doc_cliffs_delta": _r(d.get("cliffs_delta")),
            "doc_cliffs_delta_ci": _ci(d.get("cliffs_delta_ci")),
            "doc_mw_p": _r(d.get("mw_p"), 4), "doc_roc_auc": _r(d.get("roc_auc")),
            "doc_roc_auc_ci": _ci(d.get("roc_auc_ci")),
            "doc_tpr_at_1pct_fpr": _r(d.get("tpr_at_1pct_fpr")),
            "max_longest_pre": max((x["longest"] for x in docs if x["split"] == "pre"),
                                   default=0),
            "max_longest_post": max((x["longest"] for x in docs if x["split"] == "post"),
                                    default=0),
            "doc_verdict": d.get("verdict", ""),
            "lcp_mean_pre": _r(lcp.get("mean_pre"), 2),
            "lcp_mean_post": _r(lcp.get("mean_post"), 2),
            "lcp_cliffs_delta": _r(lcp.get("cliffs_delta")),
            "edit_similarity_mean_pre": _r(es.get("mean_pre")),
            "edit_similarity_mean_post": _r(es.get("mean_post")),
            "edit_similarity_cliffs_delta": _r(es.get("cliffs_delta")),
            "blind_auc": _r(b.get("auc")), "blind_warning": bool(b.get("warning")),
            "notes": " | ".join(r["notes"]),
        })
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["dataset", "model"], kind="stable").reset_index(drop=True)


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "undefined"
    return str(v).replace("|", "/")


def _markdown(df: pd.DataFrame, show: list[tuple[str, str]]) -> list[str]:
    lines = ["| " + " | ".join(h for _, h in show) + " |",
             "|" + "|".join("---" for _ in show) + "|"]
    for row in df.itertuples(index=False):
        d = row._asdict()
        lines.append("| " + " | ".join(_cell(d[c]) for c, _ in show) + " |")
    return lines


def to_markdown(df: pd.DataFrame) -> str:
    """A compact Markdown table (paper columns + key extras), then the notes per row."""
    show = [("dataset", "Dataset"), ("model", "Model"), ("decoding", "Decoding"),
            ("documents_pre", "docs pre"), ("documents_post", "docs post"),
            ("small_sample", "small sample"),
            ("cliffs_delta", "Cliff's delta"), ("ks_statistic", "KS"),
            ("kw_h", "KW H"), ("kw_p", "KW p"), ("doc_cliffs_delta", "doc delta"),
            ("doc_roc_auc", "doc AUC"), ("max_longest_pre", "max match pre"),
            ("max_longest_post", "max match post"), ("lcp_mean_pre", "prefix pre"),
            ("lcp_mean_post", "prefix post"), ("edit_similarity_mean_pre", "edit sim pre"),
            ("edit_similarity_mean_post", "edit sim post"), ("blind_auc", "blind AUC"),
            ("paper_verdict", "paper mode")]
    lines = _markdown(df, show)
    lines.append("")
    lines.append(
        "Cliff's delta, KS, KW: paper mode, over the vectors F_post and F_pre of f_k. doc: "
        "per-document longest common word substring. " + DIRECTION_NOTE + " prefix / edit "
        "sim: HELM's longest common prefix (words) and edit similarity, mean per document. "
        "blind AUC: a text-only classifier of D_pre vs D_post that never queries a model. "
        "max match: longest verbatim match in words. small sample: fewer than "
        f"{SMALL_SAMPLE_DOCUMENTS} documents in a set; read every statistic of that row as "
        "anecdotal.")
    for row in df.itertuples(index=False):
        lines.append("")
        lines.append(f"- {row.dataset} / {row.model} ({row.decoding}; {row.msr_settings}): "
                     f"f_pre = [{row.f_pre}], f_post = [{row.f_post}]; per document: "
                     f"{row.doc_verdict}" + (f". Notes: {row.notes}" if row.notes else ""))
    return "\n".join(lines) + "\n"


def sweep_table(results_by_label: Mapping[str, Mapping[str, Any]],
                parameter: str) -> pd.DataFrame:
    """Paper-mode statistics per setting of one parameter, in the order given (the MSR
    paper's Table 2 has one row per input length)."""
    rows = []
    for label, r in results_by_label.items():
        p = r["paper"]
        rows.append({
            "parameter": parameter, "setting": str(label),
            "k_values": _k_range(list(r["k_values"])),
            "documents_pre": r["documents_pre"], "documents_post": r["documents_post"],
            "small_sample": _small_sample(r),
            "cliffs_delta": _r(p["cliffs_delta"]), "ks_statistic": _r(p["ks_statistic"]),
            "kw_h": _r(p["kw_h"], 2), "kw_p": _r(p["kw_p"], 4), "verdict": p["verdict"],
            "f_pre": _vector(p["f_pre"]), "f_post": _vector(p["f_post"]),
        })
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def sweep_markdown(df: pd.DataFrame) -> str:
    """The sweep table as Markdown, with the direction of the delta under it."""
    show = [("setting", str(df["parameter"].iloc[0]) if len(df) else "setting"),
            ("k_values", "k"), ("documents_pre", "docs pre"),
            ("documents_post", "docs post"), ("small_sample", "small sample"),
            ("cliffs_delta", "Cliff's delta"), ("ks_statistic", "KS"), ("kw_h", "KW H"),
            ("kw_p", "KW p"), ("verdict", "paper mode")]
    return "\n".join([*_markdown(df, show), "", f"Direction: {PAPER_DIRECTION}."]) + "\n"


COMPARISON_COLUMNS = ["dataset", "split", "label_a", "label_b", "k_values", "f_a", "f_b",
                      "cliffs_delta", "ks_statistic", "kw_h", "kw_p", "verdict",
                      "paired_documents", "paired_a_higher", "paired_b_higher",
                      "paired_ties", "wilcoxon_p", "direction"]


def comparison_rows(comparisons: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per settings comparison (:func:`copyprobe.msr.analysis.compare_settings`)."""
    rows = []
    for c in comparisons:
        p, q = c["paper"], c["paired"]
        rows.append({
            "dataset": c["dataset"], "split": c["split"], "label_a": c["label_a"],
            "label_b": c["label_b"], "k_values": _k_range(list(c["k_values"])),
            "f_a": _vector(p["f_a"]), "f_b": _vector(p["f_b"]),
            "cliffs_delta": _r(p["cliffs_delta"]), "ks_statistic": _r(p["ks_statistic"]),
            "kw_h": _r(p["kw_h"], 2), "kw_p": _r(p["kw_p"], 4), "verdict": p["verdict"],
            "paired_documents": q["documents"], "paired_a_higher": q["a_higher"],
            "paired_b_higher": q["b_higher"], "paired_ties": q["ties"],
            "wilcoxon_p": _r(q["wilcoxon_p"], 4), "direction": p["direction"],
        })
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
