"""Shards: splitting a PROMPTS table, naming shards, merging their tables."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from copyprobe.generation.shards import merge_shards, parse_shard, shard_count, shard_rows


def _prompts(n_ready: int, n_skipped: int = 0) -> pd.DataFrame:
    rows = [{"request_id": f"r{i}", "status": "ready"} for i in range(n_ready)]
    rows += [{"request_id": f"s{i}", "status": "skipped"} for i in range(n_skipped)]
    return pd.DataFrame(rows)


def test_shards_are_consecutive_runs_of_ready_rows():
    parts = shard_rows(_prompts(5, n_skipped=2), 2)
    assert [list(p["request_id"]) for p in parts] == [["r0", "r1"], ["r2", "r3"], ["r4"]]
    assert shard_count(_prompts(5, n_skipped=2), 2) == 3
    assert shard_count(_prompts(5), None) == 1
    assert shard_count(_prompts(4), 4) == 1


def test_parse_shard_names():
    assert parse_shard("00002-of-00005") == (2, 5)
    for bad in ("00005-of-00005", "2of5", "x-of-3"):
        with pytest.raises(ValueError, match="bad shard name"):
            parse_shard(bad)


def test_merge_refuses_a_request_in_two_shards():
    a = pd.DataFrame({"request_id": ["r0", "r1"], "sample_index": [0, 0]})
    b = pd.DataFrame({"request_id": ["r1"], "sample_index": [0]})
    assert len(merge_shards([a, b.assign(sample_index=1)])) == 3
    with pytest.raises(ValueError, match="1 request"):
        merge_shards([a, b])


def test_answers_cached_before_are_served(tmp_path):
    """A shard's answers and a ground-truth run's MSR answers go through one set-up
    (identity, backend, decoding, request settings, cache): answers stored under the keys
    the code before that set-up computed (each request's max_tokens scaled to its reference)
    are served from the cache by both, and nothing is sent (nothing listens at the URL)."""
    from copyprobe.generation import generate_shard
    from copyprobe.generation.cache import GenerationCache
    from copyprobe.membership.engine import Model
    from copyprobe.membership.truth_measures import generate
    from copyprobe.prompt import Prompt

    prompts = pd.DataFrame({
        "request_id": ["a", "b"], "status": "ready", "prompt_format": "chat",
        "prompt": [Prompt("chat", messages=({"role": "user", "content": t},)).to_json()
                   for t in ("one two", "three four")],
        "reference": [" ".join(["word"] * 10), " ".join(["word"] * 40)]})
    spec = {"backend": "openai", "name": "m", "model_id": "m",
            "base_url": "http://127.0.0.1:9/v1", "api_key_optional": True,
            "cache_dir": str(tmp_path / "cache"), "requests": {"max_attempts": 1},
            "decoding": {"temperature": 0.0, "max_tokens": 512, "seed": 0,
                         "max_tokens_per_reference_word": 1.5}}
    cache = GenerationCache(tmp_path / "cache" / "generations")
    for rid, key in KEYS_BEFORE.items():
        cache.put(key, {"text": f"answer {rid}", "prompt_tokens": 3, "completion_tokens": 2,
                        "finish_reason": "stop", "latency_s": 0.1,
                        "created_at": "2026-12-01T00:00:00+00:00"})
    shard, summary = generate_shard(prompts, spec, {"path": None})
    truth = generate(prompts, Model("m", spec, None))
    for out in (shard, truth):
        assert dict(zip(out["request_id"], out["cache_key"], strict=True)) == KEYS_BEFORE
        assert out["from_cache"].all() and out["text"].tolist() == ["answer a", "answer b"]
        assert [json.loads(d)["max_tokens"] for d in out["decoding"]] == [32, 60]
    assert summary.model_calls == 0


#: the keys of the requests above, computed by the code before generate_shard and the
#: ground-truth run's MSR answers shared their set-up
KEYS_BEFORE = {"a": "83785fca894bf9ab33c80785a539ddc2cbb00fd19927441f8446478dc76c5f4e",
               "b": "ad440115069221bace7bff42d01200d2a7f01d1ad5d5b86d4b84c22bbc8a80a3"}
