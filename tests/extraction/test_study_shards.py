"""Scoring jobs: documents go to a shard (``extraction.shards``) by sha256 of their id, every
document to exactly one, the shards' window tables merge back into one, and a job with more
failed windows than the model's ``max_failure_share`` fails, naming the errors."""

from __future__ import annotations

import pandas as pd
import pytest

from copyprobe.extraction.window_scoring import merge_window_shards, shard_documents, shard_of


def test_shards_split_documents_stably_and_merge_back():
    docs = pd.DataFrame({"doc_id": [f"doc-{i}" for i in range(200)], "text": "t"})
    parts = [shard_documents(docs, f"{i:05d}-of-00003") for i in range(3)]
    assert sorted(d for p in parts for d in p["doc_id"]) == sorted(docs["doc_id"])
    assert all(40 < len(p) < 95 for p in parts)  # sha256 spreads them
    assert shard_of("doc-7", 3) == shard_of("doc-7", 3)  # stable, unlike hash()
    # the windows of each shard's documents merge into one table, by document and window
    frames = [pd.DataFrame({"doc_id": list(p["doc_id"]) * 2,
                            "window_index": [1] * len(p) + [0] * len(p)}) for p in parts]
    merged = merge_window_shards(frames)
    assert len(merged) == 400 and merged["doc_id"].is_monotonic_increasing
    first = merged[merged["doc_id"] == "doc-0"]
    assert list(first["window_index"]) == [0, 1]
    with pytest.raises(ValueError, match="doc-0.* shards 0 and 1"):
        merge_window_shards([frames[0].iloc[:1].assign(doc_id="doc-0"),
                             frames[1].iloc[:1].assign(doc_id="doc-0")])


def test_a_job_with_too_many_failed_windows_fails_naming_the_errors():
    from copyprobe.extraction.window_scoring import failure_report

    w = pd.DataFrame({"status": ["scored"] * 18 + ["failed", "failed", "skipped"],
                      "error_class": [""] * 18 + ["RateLimitError", "RateLimitError", "TooShort"],
                      "error": [""] * 18 + ["429 after 6 attempts", "429 again", "12 tokens"]})
    assert failure_report(w, 0.2) is None  # 2 of 20 windows; the skipped document aside
    report = failure_report(w, 0.05)
    assert report.splitlines()[0] == ("2 of 20 window(s) have no score (10.0% > "
                                      "max_failure_share 5.0%)")
    assert "RateLimitError: 2, first: 429 after 6 attempts" in report
    assert failure_report(w[w["status"] == "skipped"], 0.0) is None
