"""The core config block ``spans.indexes``: each index's corpora, unit and build resources.

``spans.indexes.NAME: {corpora, unit, shards, cpus, mem_gb, builder}`` (``builder`` has no
default: absent is ``auto``, so entries written before it keep their form). A corpora item is
a source name (its ``results/corpus/<source>.parquet``), or a path (a Parquet, JSONL or folder that
:func:`copyprobe.spans.corpus.iter_corpus` reads); a study may rewrite items of its own before
the checks run (the MSR study turns a dataset name into its sources) and add indexes of its own
(a copyright benchmark's ``copyright-<benchmark>``, :func:`index_entry`). The checks are
:func:`copyprobe.config`'s (``_check_span_indexes``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from copyprobe.paths import CORPUS

#: The schema's defaults of an index entry (an index a study adds takes them too).
DEFAULTS: dict[str, Any] = {"unit": "words", "shards": 1, "cpus": 1, "mem_gb": 2}


def index_entry(corpora: Sequence[str], **settings: Any) -> dict[str, Any]:
    """A complete index entry (defaults filled in) over ``corpora``."""
    return {"corpora": list(corpora), **DEFAULTS, **settings}


def indexes(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return cfg.get("spans", {}).get("indexes", {})


def index_spec(cfg: Mapping[str, Any], name: str) -> dict[str, Any]:
    try:
        return indexes(cfg)[name]
    except KeyError:
        raise KeyError(f"no span index {name!r} under spans.indexes (known: "
                       f"{', '.join(sorted(indexes(cfg))) or 'none'})") from None


def corpus_paths(cfg: Mapping[str, Any], name: str) -> list[str]:
    """The files and folders an index is built from, in its corpora's order."""
    return [CORPUS.format(source=c) if c in cfg["sources"] else c
            for c in index_spec(cfg, name)["corpora"]]
