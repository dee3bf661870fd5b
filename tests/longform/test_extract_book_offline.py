"""``copyprobe extract-book`` offline on the packaged Gemma-3-270M base model (llama.cpp), with
config/examples/longform.yaml and a small budget: the model continues the 0BSD licence's
opening near-verbatim, the first probe passes, and a rerun sends nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copyprobe.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "examples" / "longform.yaml"
LICENCE = Path(__file__).parent / "data" / "0bsd.txt"


def _run(tmp_path: Path, capsys) -> dict:
    code = main(["extract-book", "--model-config", str(EXAMPLE), "--model", "gemma3-270m",
                 str(LICENCE), "--out", str(tmp_path / "out"), "--max-turns", "1",
                 "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out[:out.index("\n}\n") + 2])


@pytest.mark.slow
def test_gemma_writes_out_the_licence_near_verbatim_and_a_rerun_sends_nothing(tmp_path,
                                                                               capsys):
    s = _run(tmp_path, capsys)
    assert s["passing_attempt"] == 0 and s["refusals"] == 0
    # measured (2 turns): 49 of the licence's 97 words verbatim in one block, nv-recall 0.505
    assert s["longest_block_words"] >= 30 and s["nv_recall"] >= 30 / 97
    again = _run(tmp_path, capsys)
    assert again["cached_calls"] == again["calls"] == s["calls"]
    assert again["nv_recall"] == s["nv_recall"]
