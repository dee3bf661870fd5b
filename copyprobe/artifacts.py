"""Parquet artifacts: explicit schemas, atomic writes and provenance.

Every step of the pipeline writes one table through :func:`write_table`. The table is cast to
its declared schema (a wrong column type is an error that names the column), written to a
temporary file beside the target and renamed into place, so an interrupted job never leaves a
half-written artifact that a rerun would trust. File-level provenance (copyprobe version,
creation time, the step and its parameters) is stored in the Parquet key-value metadata under
``copyprobe``; row-level provenance lives in ordinary columns.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from copyprobe import __version__
from copyprobe.store import atomic_write

METADATA_KEY = b"copyprobe"


class ArtifactError(ValueError):
    """A table does not match its declared schema, or a file is not a copyprobe artifact."""


@dataclass(frozen=True)
class TableSpec:
    """A named Parquet schema for one kind of artifact."""

    name: str
    schema: pa.Schema

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)


def _utc_ts() -> pa.DataType:
    return pa.timestamp("us", tz="UTC")


CORPUS = TableSpec(
    "corpus",
    pa.schema(
        [
            ("doc_id", pa.string()),
            ("source", pa.string()),
            ("title", pa.string()),
            ("text", pa.string()),
            ("published", pa.date32()),
            ("date_basis", pa.string()),
            ("url", pa.string()),
            ("licence", pa.string()),
            ("retrieved_at", _utc_ts()),
            ("provenance", pa.string()),
            # Where the text was taken from, at which version (empty where the source has none):
            # a wiki page id and revision, a book uuid and its pinned version, a file path.
            ("page_id", pa.string()),
            ("revision_id", pa.string()),
            ("revision_timestamp", _utc_ts()),
            # The row is this document as it stood at a model cutoff (null: valid for every
            # model); curation keeps, per model, the rows of its cutoff and the undated ones.
            ("as_of", pa.date32()),
            # Copyright facts of a material (the compliance benchmark's input; empty elsewhere).
            ("category", pa.string()),
            ("rights_holder", pa.string()),
            ("rights_year", pa.int32()),
            ("rights_notice", pa.string()),
        ]
    ),
)

#: Exactly which version of which item each document came from: a source given this table back
#: (``manifest: FILE``) fetches the same versions, so a study can be rerun from it.
MANIFEST = TableSpec(
    "manifest",
    pa.schema(
        [
            ("doc_id", pa.string()),
            ("source", pa.string()),
            ("title", pa.string()),
            ("page_id", pa.string()),
            ("revision_id", pa.string()),
            ("revision_timestamp", _utc_ts()),
            ("published", pa.date32()),
            ("as_of", pa.date32()),
            ("url", pa.string()),
            ("text_sha256", pa.string()),
        ]
    ),
)

SKIPPED = TableSpec(
    "skipped",
    pa.schema([("source", pa.string()), ("ref", pa.string()), ("reason", pa.string())]),
)

CURATED = TableSpec(
    "curated",
    pa.schema(
        [
            ("model", pa.string()),
            ("source", pa.string()),
            ("doc_id", pa.string()),
            ("split", pa.string()),
            ("kept", pa.bool_()),
            ("reason", pa.string()),
            ("published", pa.date32()),
            ("cutoff", pa.date32()),
            ("n_words", pa.int64()),
            # Why a document was dropped, as a code (copyprobe.curation.EXCLUSIONS; "" if kept),
            # and for a duplicate the kept document it repeats and their shingle similarity.
            ("exclusion", pa.string()),
            ("duplicate_of", pa.string()),
            ("similarity", pa.float64()),
            ("as_of", pa.date32()),
        ]
    ),
)

#: The curation report of one model: one row per (dataset, split), split being "pre", "post" or
#: "none" (documents that fit neither side of the cutoff). The blind baseline and the count of
#: other models' versions belong to the dataset and repeat on each of its rows.
CURATION_REPORT = TableSpec(
    "curation_report",
    pa.schema(
        [
            ("model", pa.string()),
            ("cutoff", pa.date32()),
            ("dataset", pa.string()),
            ("sources", pa.list_(pa.string())),
            ("split", pa.string()),
            ("kept", pa.int64()),
            ("excluded", pa.int64()),
            ("excluded_no_date", pa.int64()),
            ("excluded_margin", pa.int64()),
            ("excluded_too_short", pa.int64()),
            ("excluded_too_long", pa.int64()),
            ("excluded_exact_duplicate", pa.int64()),
            ("excluded_near_duplicate", pa.int64()),
            ("published_min", pa.date32()),
            ("published_max", pa.date32()),
            ("words_min", pa.float64()),
            ("words_p25", pa.float64()),
            ("words_median", pa.float64()),
            ("words_p75", pa.float64()),
            ("words_max", pa.float64()),
            ("licences", pa.map_(pa.string(), pa.int64())),
            ("cross_source_duplicates", pa.int64()),
            ("cross_split_duplicates", pa.int64()),
            ("other_versions", pa.int64()),
            ("blind_auc", pa.float64()),
            ("blind_auc_low", pa.float64()),
            ("blind_auc_high", pa.float64()),
            ("blind_folds", pa.int64()),
            ("blind_note", pa.string()),
        ]
    ),
)

PROMPTS = TableSpec(
    "prompts",
    pa.schema(
        [
            ("request_id", pa.string()),
            ("model", pa.string()),
            ("source", pa.string()),
            ("doc_id", pa.string()),
            ("split", pa.string()),
            ("status", pa.string()),
            ("reason", pa.string()),
            ("prompt_format", pa.string()),
            ("prompt", pa.string()),
            ("reference", pa.string()),
            ("document", pa.string()),
            ("n", pa.int32()),
            ("num_words", pa.int32()),
        ]
    ),
)

GENERATIONS = TableSpec(
    "generations",
    pa.schema(
        [
            ("request_id", pa.string()),
            ("cache_key", pa.string()),
            ("text", pa.string()),
            ("status", pa.string()),
            ("error_class", pa.string()),
            ("error", pa.string()),
            ("backend", pa.string()),
            ("model", pa.string()),
            ("model_id", pa.string()),
            ("revision", pa.string()),
            ("dtype", pa.string()),
            ("decoding", pa.string()),
            ("seed", pa.int64()),
            ("sample_index", pa.int32()),
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            ("finish_reason", pa.string()),
            ("latency_s", pa.float64()),
            ("attempts", pa.int32()),
            ("cost_usd", pa.float64()),
            ("versions", pa.string()),
            ("created_at", _utc_ts()),
            ("shard", pa.string()),
            ("from_cache", pa.bool_()),
        ]
    ),
)

MATCHES = TableSpec(
    "matches",
    pa.schema(
        [
            ("model", pa.string()),
            ("source", pa.string()),
            ("doc_id", pa.string()),
            ("split", pa.string()),
            ("request_id", pa.string()),
            ("sample_index", pa.int32()),
            ("status", pa.string()),
            ("paper_lcs", pa.string()),
            ("paper_lcs_words", pa.int32()),
            ("paper_unique", pa.bool_()),
            ("word_longest", pa.int32()),
            ("word_longest_text", pa.string()),
            ("word_maximal", pa.string()),
            ("word_kgram_counts", pa.list_(pa.int32())),
            ("word_lcp", pa.int32()),
            ("word_edit_similarity", pa.float64()),
            ("reference_words", pa.int32()),
            ("generation_words", pa.int32()),
        ]
    ),
)


#: Columns that record when, how fast or by which way something ran, not what it produced:
#: the only columns of any artifact that may differ between two runs of the same config from
#: scratch. Timing: the corpus's retrieval time, a generation's latency and time of the call,
#: the guard's time per check. The way: whether an answer came from the call cache and in how
#: many attempts (two models whose requests share cache entries, such as one model file under
#: two names, answer from whichever job asked first; the answers are the same). Everything
#: else must be identical.
VOLATILE_COLUMNS = frozenset({
    "retrieved_at",  # CORPUS
    "latency_s", "created_at", "from_cache", "attempts",  # GENERATIONS
    "notice_s", "status_s", "risk_s", "total_s",  # the guard's decisions
    "output_s",  # the guard's output check
})

#: The same for the file-level provenance (dotted paths into it): when the file was written,
#: and a generation shard's counts of model calls, cache hits, retries and the tokens and cost
#: those calls spent.
VOLATILE_META = frozenset({
    "created_at",
    *(f"summary.{k}" for k in ("model_calls", "cache_hits", "retries", "prompt_tokens",
                               "completion_tokens", "cost_usd")),
})


def provenance(step: str, params: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """File-level provenance for an artifact written by ``step``."""
    out: dict[str, Any] = {
        "step": step,
        "copyprobe_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if params is not None:
        out["params"] = dict(params)
    out.update(extra)
    return out


def stable_provenance(meta: Mapping[str, Any], _prefix: str = "") -> dict[str, Any]:
    """``meta`` (an artifact's provenance) without its :data:`VOLATILE_META` fields."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        path = f"{_prefix}{key}"
        if path in VOLATILE_META:
            continue
        out[key] = stable_provenance(value, f"{path}.") if isinstance(value, Mapping) else value
    return out


def to_table(df: pd.DataFrame, spec: TableSpec) -> pa.Table:
    """Cast ``df`` to ``spec``; an absent or ill-typed column is an error naming the column."""
    missing = [c for c in spec.columns if c not in df.columns]
    if missing:
        raise ArtifactError(f"{spec.name} table lacks column(s) {missing}")
    arrays = []
    for field in spec.schema:
        col = df[field.name]
        try:
            arrays.append(pa.array(col.tolist() if col.dtype == object else col, type=field.type,
                                   from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{spec.name} table: column {field.name!r} does not fit {field.type}: {exc}"
            ) from exc
    return pa.Table.from_arrays(arrays, schema=spec.schema)


def write_table(
    df: pd.DataFrame, path: str | os.PathLike[str], spec: TableSpec, meta: Mapping[str, Any]
) -> Path:
    """Write ``df`` as ``spec`` to ``path`` atomically, with ``meta`` as file provenance."""
    table = to_table(df, spec)
    md = dict(table.schema.metadata or {})
    md[METADATA_KEY] = json.dumps({"table": spec.name, **meta}, default=str).encode()
    table = table.replace_schema_metadata(md)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file atomically."""
    return atomic_write(path, text)


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write JSON atomically (sorted keys, NaN rejected so undefined values are explicit)."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_table(path: str | os.PathLike[str], spec: TableSpec | None = None) -> pd.DataFrame:
    """Read an artifact; with ``spec``, check that its columns are there (error names the file)."""
    p = Path(path)
    try:
        table = pq.read_table(p)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ArtifactError(f"{p}: not a readable Parquet file: {exc}") from exc
    if spec is not None:
        missing = [c for c in spec.columns if c not in table.schema.names]
        if missing:
            raise ArtifactError(f"{p}: not a {spec.name} table, missing column(s) {missing}")
    return table.to_pandas()


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The copyprobe provenance stored in an artifact's metadata."""
    md = pq.read_schema(path).metadata or {}
    raw = md.get(METADATA_KEY)
    return json.loads(raw) if raw else {}


# ---- span attribution: the maximal verbatim spans of every generation found in a
# span index (copyprobe.spans.attribution), and a summary per generation.

#: A span's documents (the first ``max_docs`` in index order).
SPAN_DOC = pa.struct([("source", pa.string()), ("doc_id", pa.string()), ("title", pa.string()),
                      ("url", pa.string()), ("word_start", pa.int64())])

#: One row per maximal span of at least ``min_words`` words of a generation found in an index.
SPANS = TableSpec(
    "spans",
    pa.schema(
        [
            ("request_id", pa.string()),
            ("model", pa.string()),
            ("source", pa.string()),
            ("sample_index", pa.int32()),
            ("span_ix", pa.int32()),
            # words of the index's unit in the generation (end exclusive), and its characters
            ("word_start", pa.int32()),
            ("word_end", pa.int32()),
            ("n_words", pa.int32()),
            ("char_start", pa.int64()),
            ("char_end", pa.int64()),
            ("text", pa.string()),
            # occurrences in the whole index; distinct documents (exact when n_docs_exact)
            ("count", pa.int64()),
            ("n_docs", pa.int32()),
            ("n_docs_exact", pa.bool_()),
            ("docs", pa.list_(SPAN_DOC)),
            ("index", pa.string()),
            ("index_digest", pa.string()),
        ]
    ),
)

#: One row per generation: how much of it the index covers. A failed generation is a row with
#: its status and empty measures, never scored text.
ATTRIBUTION = TableSpec(
    "attribution",
    pa.schema(
        [
            ("request_id", pa.string()),
            ("model", pa.string()),
            ("source", pa.string()),
            ("sample_index", pa.int32()),
            ("status", pa.string()),
            ("generation_words", pa.int32()),
            ("n_spans", pa.int32()),
            ("longest_span_words", pa.int32()),
            # words of the generation inside at least one span, and their share of its words
            ("covered_words", pa.int32()),
            ("coverage", pa.float64()),
            # "source:doc_id" of the document the most span words are found in ("" for none)
            ("top_doc", pa.string()),
            ("find_s", pa.float64()),
            ("index", pa.string()),
            ("index_digest", pa.string()),
        ]
    ),
)

#: The attribution's time per generation is a timing too.
VOLATILE_COLUMNS = VOLATILE_COLUMNS | frozenset({"find_s"})
