"""Shards: splitting a PROMPTS table, naming shards, merging their tables."""

from __future__ import annotations

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
