"""The SCORED table: one row per model response of the compliance benchmark, with its metrics
and refusal verdicts, and the check that a table handed to the analysis really is one.

Reference: docs/copyright-results.md.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import ArtifactError, TableSpec, read_table

__all__ = ["METRIC_COLUMNS", "SCORED", "ScoredTableError", "read_scored", "validate_scored"]

SCORED = TableSpec(
    "copyright_scored",
    pa.schema(
        [
            ("request_id", pa.string()),
            ("model", pa.string()),
            ("material_id", pa.string()),
            ("title", pa.string()),
            ("category", pa.string()),
            ("notice_form", pa.string()),
            ("task", pa.string()),
            ("query_id", pa.string()),
            ("benign", pa.bool_()),
            ("status", pa.string()),
            ("response", pa.string()),
            ("rouge_l_precision", pa.float64()),
            ("rouge_l_recall", pa.float64()),
            ("rouge_l_f1", pa.float64()),
            ("bertscore_f1", pa.float64()),
            ("embedding_cosine", pa.float64()),
            ("refusal_rule", pa.bool_()),
            ("refusal_judge", pa.string()),
            ("refused", pa.bool_()),
        ]
    ),
)

METRIC_COLUMNS = ("rouge_l_precision", "rouge_l_recall", "rouge_l_f1", "bertscore_f1",
                  "embedding_cosine")
STATUSES = ("ok", "failed")
VERDICTS = ("yes", "no", "unparseable")
_KEY_COLUMNS = ("model", "notice_form", "task", "category")


class ScoredTableError(ArtifactError):
    """A table is not a valid SCORED table; the message names the column and, where one is at
    fault, the row's request_id."""


def _where(df: pd.DataFrame, mask: pd.Series, source: str) -> str:
    """'<source>, row(s) with request_id a, b (and N more)' for the first rows of ``mask``."""
    ids = df.loc[mask, "request_id"].astype(str).tolist()
    more = f" (and {len(ids) - 3} more)" if len(ids) > 3 else ""
    return f"{source}, request_id {', '.join(ids[:3])}{more}"


def _as_bool(df: pd.DataFrame, col: str, source: str, *, nullable: bool) -> pd.Series:
    s = df[col]
    null = s.isna()
    if null.any() and not nullable:
        raise ScoredTableError(f"{_where(df, null, source)}: column {col!r} is empty "
                               "(must be true or false)")
    bad = ~null & ~s.map(lambda v: isinstance(v, (bool, np.bool_)))
    if bad.any():
        raise ScoredTableError(f"{_where(df, bad, source)}: column {col!r} must be true or false, "
                               f"got {df.loc[bad, col].iloc[0]!r}")
    return s.astype("boolean") if nullable else s.astype(bool)


def validate_scored(df: pd.DataFrame, source: str = "scored table") -> pd.DataFrame:
    """A checked copy of ``df`` with the SCORED columns (extra columns are kept).

    ``refused`` comes back as pandas' nullable ``boolean``, the metrics as float64. Raises
    :class:`ScoredTableError` naming ``source``, the column and the offending request_ids on: a
    missing column, an empty key (model, notice form, task, category), a status other than
    ok/failed, a judge verdict other than yes/no/unparseable/null, ``refused`` disagreeing with
    the verdict, a non-numeric or infinite metric, a non-boolean flag.
    """
    missing = [c for c in SCORED.columns if c not in df.columns]
    if missing:
        raise ScoredTableError(f"{source}: missing column(s) {', '.join(map(repr, missing))}")
    out = df.copy()
    for col in _KEY_COLUMNS:
        empty = out[col].isna() | (out[col].astype(str).str.strip() == "")
        if empty.any():
            raise ScoredTableError(f"{_where(out, empty, source)}: column {col!r} is empty")
    bad = ~out["status"].isin(STATUSES)
    if bad.any():
        raise ScoredTableError(f"{_where(out, bad, source)}: column 'status' must be one of "
                               f"{STATUSES}, got {out.loc[bad, 'status'].iloc[0]!r}")
    for col in METRIC_COLUMNS:
        try:
            out[col] = pd.to_numeric(out[col], errors="raise").astype(float)
        except (TypeError, ValueError) as exc:
            raise ScoredTableError(f"{source}: column {col!r} is not numeric: {exc}") from exc
        inf = np.isinf(out[col])
        if inf.any():
            raise ScoredTableError(f"{_where(out, inf, source)}: column {col!r} is infinite")
    out["benign"] = _as_bool(out, "benign", source, nullable=False)
    out["refusal_rule"] = _as_bool(out, "refusal_rule", source, nullable=True)
    out["refused"] = _as_bool(out, "refused", source, nullable=True)
    judge = out["refusal_judge"]
    bad = judge.notna() & ~judge.isin(VERDICTS)
    if bad.any():
        raise ScoredTableError(f"{_where(out, bad, source)}: column 'refusal_judge' must be one "
                               f"of {VERDICTS} or null, got {judge[bad].iloc[0]!r}")
    expected = judge.map({"yes": True, "no": False}).astype("boolean")
    disagree = (expected.isna() != out["refused"].isna()) | (
        expected.notna() & out["refused"].notna() & (expected != out["refused"]))
    if disagree.fillna(False).any():
        mask = disagree.fillna(False).astype(bool)
        raise ScoredTableError(f"{_where(out, mask, source)}: column 'refused' must be the judge's "
                               "verdict (true for yes, false for no, null otherwise)")
    return out


def read_scored(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read and validate a SCORED Parquet file (errors name the file)."""
    return validate_scored(read_table(path, SCORED), source=str(path))
