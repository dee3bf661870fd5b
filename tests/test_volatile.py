"""The columns and provenance fields that may differ between two runs from scratch."""

from __future__ import annotations

from copyprobe.artifacts import (
    CORPUS,
    GENERATIONS,
    VOLATILE_COLUMNS,
    VOLATILE_META,
    provenance,
    stable_provenance,
)


def test_volatile_columns_are_columns_of_the_artifacts():
    assert {"retrieved_at"} == VOLATILE_COLUMNS & set(CORPUS.columns)
    assert {"latency_s", "created_at", "from_cache", "attempts"} == \
        VOLATILE_COLUMNS & set(GENERATIONS.columns)
    # what a generation produced is never volatile
    assert not VOLATILE_COLUMNS & {"text", "cache_key", "status", "completion_tokens", "seed"}


def test_stable_provenance_drops_only_the_volatile_fields():
    meta = provenance("generate", {"max_tokens": 12},
                      summary={"requests": 2, "model_calls": 1, "cache_hits": 1, "failed": 0,
                               "prompt_tokens": 149})
    assert "created_at" in meta and "created_at" in VOLATILE_META
    assert stable_provenance(meta) == {
        "step": "generate", "copyprobe_version": meta["copyprobe_version"],
        "params": {"max_tokens": 12}, "summary": {"requests": 2, "failed": 0}}
    # a field of that name elsewhere is kept: the paths are exact
    assert stable_provenance({"params": {"model_calls": 3}}) == {"params": {"model_calls": 3}}
