"""The long-form view beside the window view: where a model also has an exact p_z map of the
same documents (extraction study), how far the two agree, per document and per model.
docs/longform.md describes the measures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

COLUMNS = ["model", "source", "doc_id", "nv_recall", "mean_log_pz_per_token",
           "block_words", "in_high_pz", "high_pz_share"]


def high_pz_words(windows: pd.DataFrame, book_words: int, threshold: float) -> np.ndarray:
    """Per book word, whether it lies in the suffix of a scored window with p_z at least
    ``threshold``; token offsets are mapped to words by relative position (the document's
    tokens taken as the end of its last window, scored or failed)."""
    high = np.zeros(book_words, dtype=bool)
    cut = windows[windows["window_index"] >= 0]
    ok = cut[cut["status"] == "scored"]
    if not len(ok) or not book_words:
        return high
    total = max(float((cut["start_token"] + cut["n_prefix_tokens"] + cut["n_tokens"]).max()),
                1.0)
    start = (ok["start_token"] + ok["n_prefix_tokens"]).to_numpy(dtype=float)
    end = start + ok["n_tokens"].to_numpy(dtype=float)
    hit = np.exp(ok["log_pz"].to_numpy(dtype=float)) >= threshold
    for s, e in zip(start[hit], end[hit], strict=True):
        high[int(np.floor(s / total * book_words)):int(np.ceil(e / total * book_words))] = True
    return high


def per_document(documents: pd.DataFrame, blocks: pd.DataFrame, windows: pd.DataFrame,
                 threshold: float, max_windows: int | None = None) -> pd.DataFrame:
    """One row per (model, source, document) measured by both studies (a scored window and an
    nv-recall): nv-recall, the extraction study's mean log p_z per token, the book words in
    long-form blocks, the share of those in high-p_z windows (``in_high_pz``; null without
    blocks) and the share of all the book's words in them (``high_pz_share``, the rate by
    chance). Both shares are null where the windows may stop before the document's end (as
    many as ``max_windows``, extraction.max_windows_per_document): words cannot be placed."""
    from copyprobe.extraction.discoverability import document_summary

    rows: list[dict[str, Any]] = []
    measured = documents[documents["nv_recall"].notna()]
    for (model, source, doc_id), w in windows.groupby(["model", "source", "doc_id"], sort=True):
        doc = measured[(measured["model"] == model) & (measured["source"] == source)
                       & (measured["doc_id"] == doc_id)]
        if not len(doc) or not (w["status"] == "scored").any():
            continue
        d = doc.iloc[0]
        n = int(d["book_words"])
        placed = max_windows is None or int((w["window_index"] >= 0).sum()) < max_windows
        high = high_pz_words(w, n, threshold)
        mine = np.zeros(n, dtype=bool)
        b = blocks[(blocks["model"] == model) & (blocks["source"] == source)
                   & (blocks["doc_id"] == doc_id)]
        for start, end in zip(b["book_start"], b["book_end"], strict=True):
            mine[int(start):int(end)] = True
        pz = document_summary(w)["mean_log_pz_per_token"].iloc[0]
        rows.append({"model": model, "source": source, "doc_id": doc_id,
                     "nv_recall": float(d["nv_recall"]), "mean_log_pz_per_token": float(pz),
                     "block_words": int(mine.sum()),
                     "in_high_pz": float(high[mine].mean()) if placed and mine.any()
                     else None,
                     "high_pz_share": float(high.mean()) if placed and n else None})
    return pd.DataFrame(rows, columns=COLUMNS)


def per_model(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: documents in both studies, long-form block words in high-p_z windows over
    all its block words (and the book words' rate by chance), and Spearman's rank correlation
    across documents of nv-recall with mean log p_z per token (null under 3 documents or
    when either is constant). The shares count only documents whose words could be placed
    (``high_pz_share`` not null)."""
    from scipy.stats import spearmanr

    out = []
    for model, g in rows.groupby("model", sort=True):
        placed = g[g["high_pz_share"].notna()]
        words = placed["block_words"].to_numpy(dtype=float)
        inside = (placed["in_high_pz"].fillna(0).to_numpy(dtype=float) * words).sum()
        pair = g[["nv_recall", "mean_log_pz_per_token"]].dropna()
        rho = p = None
        if len(pair) >= 3 and pair.nunique().min() > 1:
            r = spearmanr(pair["nv_recall"], pair["mean_log_pz_per_token"])
            rho, p = float(r.statistic), float(r.pvalue)
        out.append({"model": model, "documents": len(g),
                    "block_words": int(g["block_words"].sum()),
                    "block_words_in_high_pz": float(inside / words.sum()) if words.sum()
                    else None,
                    "high_pz_share": float(placed["high_pz_share"].mean()) if len(placed)
                    else None,
                    "spearman_rho": rho, "spearman_p": p})
    return pd.DataFrame(out, columns=["model", "documents", "block_words",
                                      "block_words_in_high_pz", "high_pz_share",
                                      "spearman_rho", "spearman_p"])


def from_files(documents: pd.DataFrame, block_files: list[str], window_files: list[str],
               pairs: list[tuple[str, str]], threshold: float,
               max_windows: int | None = None) -> pd.DataFrame:
    """:func:`per_document` from the workflow's tables: the long-form documents, and per
    (model, source) in ``pairs`` its BLOCKS and the extraction study's WINDOWS file."""
    from copyprobe.artifacts import read_table
    from copyprobe.extraction.tables import WINDOWS
    from copyprobe.longform.tables import BLOCKS

    if not pairs:
        return pd.DataFrame(columns=COLUMNS)
    blocks = pd.concat([read_table(p, BLOCKS).assign(source=s)
                        for p, (_, s) in zip(block_files, pairs, strict=True)],
                       ignore_index=True)
    windows = pd.concat([read_table(p, WINDOWS) for p in window_files], ignore_index=True)
    return per_document(documents, blocks, windows, threshold, max_windows)
