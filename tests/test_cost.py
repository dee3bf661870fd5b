"""``copyprobe cost`` on a config of the extraction study: a local folder's documents counted
from its metadata table, Monte Carlo sampling at its worst case and expected count, and a
reason beside every count it cannot give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copyprobe.cli import main

CONFIG = """
cache_dir: {root}/cache
sources:
  mine: {{kind: local, path: {root}/docs}}
  open: {{kind: installed_licences}}
datasets:
  mine: [mine]
  open: [open]
extraction:
  datasets: [mine, open]
  windows: {{prefix_tokens: 50, suffix_tokens: 50, stride: 50}}
  max_windows_per_document: {windows}
  monte_carlo: {{max_samples: 100, batch: 10, extra_tokens: 8}}
models:
  api:
    backend: openai
    model_id: gpt-4o-mini
    cutoff: "2024-01-01"
    studies: [extraction]
    method: monte_carlo
    extraction_format: completion
    price: {{input_per_million: 1.0, output_per_million: 2.0}}
"""


def _cost(tmp_path: Path, capsys: pytest.CaptureFixture[str], windows: str) -> dict:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    lines = ["file,title,published"]
    for i in range(3):
        (docs / f"d{i}.txt").write_text("word " * 300)
        lines.append(f"d{i}.txt,Doc {i},2025-01-0{i + 1}")
    (docs / "metadata.csv").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG.format(root=tmp_path, windows=windows))
    assert main(["cost", str(cfg)]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_extraction_study_is_costed_at_its_worst_case_and_expected_count(tmp_path, capsys):
    out = _cost(tmp_path, capsys, "4")
    runs = {r["part"]: r for r in out["runs"] if r["study"] == "extraction"}
    # the local folder counted (3 rows of metadata.csv)
    assert runs["mine"]["calls"] == 3 * 4 * 100 and runs["mine"]["expected_calls"] == 3 * 4 * 10
    assert runs["mine"]["prompt_tokens"] == 1200 * 50
    assert runs["mine"]["completion_tokens"] == 1200 * 58  # suffix plus the extra tokens
    assert runs["mine"]["usd"] == pytest.approx((1200 * 50 * 1.0 + 1200 * 58 * 2.0) / 1e6)
    assert "worst case, 100 samples a window; expected about 10" in runs["mine"]["note"]
    # a source the config does not bound: no count, and why
    assert runs["open"]["calls"] is None
    assert "give --documents open=N" in runs["open"]["note"]
    model = out["models"][0]
    assert model["calls"] is None and "open: documents of source open not known" in \
        model["note"]


def test_unbounded_windows_say_why_they_are_not_counted(tmp_path, capsys):
    out = _cost(tmp_path, capsys, "null")
    mine = next(r for r in out["runs"] if r["part"] == "mine")
    assert mine["calls"] is None
    assert "extraction.max_windows_per_document: null" in mine["note"]
