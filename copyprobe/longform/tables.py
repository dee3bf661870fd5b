"""The long-form study's tables: the near-verbatim blocks of a (model, document) as positions
in the book (BLOCKS), and the per-model distribution of nv-recall over documents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec

BLOCKS = TableSpec("longform_blocks", pa.schema([
    ("model", pa.string()),
    ("doc_id", pa.string()),
    ("book_start", pa.int64()),      # the block's first word in the book (0-based)
    ("book_end", pa.int64()),        # one past its last word
    ("out_start", pa.int64()),       # where the output wrote it (its words, 0-based)
    ("out_end", pa.int64()),
    ("words", pa.int64()),           # book_end - book_start
    ("verbatim_words", pa.int64()),  # of those, matched exactly (the rest: substitutions)
    ("position", pa.float64()),      # book_start / the book's words: 0 the start, 1 the end
]))


DOCUMENTS = TableSpec("longform_documents", pa.schema([
    ("model", pa.string()),
    ("doc_id", pa.string()),
    ("source", pa.string()),
    ("book_words", pa.int64()),
    ("output_words", pa.int64()),
    ("nv_recall", pa.float64()),           # null: no measurement (every call failed, or
    ("longest_block_words", pa.int64()),   # the document could not be probed: see error)
    ("matched_words", pa.int64()),         # m (the paper's Eq. 6): verbatim words in blocks
    ("missing_words", pa.int64()),         # book_words - m (Eq. 8)
    ("additional_words", pa.int64()),      # output_words - m (Eq. 8)
    ("rouge_l", pa.float64()),
    ("attempts", pa.int64()),
    ("passing_attempt", pa.int64()),       # null: no probe answer passed
    ("probe_score", pa.float64()),
    ("refusals", pa.int64()),
    ("errors", pa.int64()),
    ("turns", pa.int64()),
    ("calls", pa.int64()),
    ("cached_calls", pa.int64()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("stopped", pa.string()),              # docs/longform.md; "invalid": see error
    ("error", pa.string()),
]))


def per_model(summaries: Sequence[dict[str, Any]], *, ci: float = 0.95, n_boot: int = 2000,
              seed: int = 0) -> pd.DataFrame:
    """Per model: documents measured and not (every call failed), nv-recall's mean with a
    percentile-bootstrap interval, its median and largest value, and the stopping reasons."""
    from copyprobe.stats.common import bootstrap_ci

    df = pd.DataFrame(list(summaries))
    rows = []
    for model, g in df.groupby("model", sort=True):
        values = g["nv_recall"].dropna().to_numpy(dtype=float)
        interval = (bootstrap_ci([values], np.mean, n_boot=n_boot, ci=ci, seed=seed)[0]
                    if values.size else None)
        rows.append({
            "model": model, "documents": len(g), "measured": int(values.size),
            "nv_recall_mean": float(values.mean()) if values.size else None,
            "nv_recall_mean_ci_low": interval[0] if interval else None,
            "nv_recall_mean_ci_high": interval[1] if interval else None,
            "nv_recall_median": float(np.median(values)) if values.size else None,
            "nv_recall_max": float(values.max()) if values.size else None,
            "stopped": ", ".join(f"{k} {v}" for k, v in g["stopped"].value_counts().items()),
        })
    return pd.DataFrame(rows)
