"""The generation rules on a local model (the real SmolLM2 through llama.cpp, a tiny config):
replacing the model file reruns prepare_model and generation, and a generate job reserves the
cores its engine uses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from copyprobe.generation.base import DEFAULT_LOCAL_THREADS
from copyprobe.models import sha256_file

pytestmark = pytest.mark.slow
TARGET = "results/generations/smol/main/docs.parquet"


def snakemake(wd: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=wd,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def planned_rules(proc: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):", proc.stdout + proc.stderr,
                          flags=re.MULTILINE))


def job_block(proc: subprocess.CompletedProcess, rule: str) -> str:
    text = proc.stdout + proc.stderr
    m = re.search(rf"^(?:local)?rule {rule}:\n((?:    .*\n)+)", text, flags=re.MULTILINE)
    assert m, text[-3000:]
    return m.group(1)


def test_model_file_and_threads(tmp_path, workflow_copy, smollm2_file):
    wd = workflow_copy(tmp_path, documents=2, folder="docs")
    model = wd / "model.gguf"
    shutil.copy(smollm2_file.path, model)
    cfg = {
        "cache_dir": str(wd / "cache"),
        "msr": {"n": 4, "num_words": 120},
        "sources": {"docs": {"kind": "local", "path": "docs"}},
        "datasets": {"docs": ["docs"]},
        "models": {"smol": {
            "backend": "llamacpp", "model_file": {"path": str(model)}, "cutoff": "2024-06-30",
            "n_ctx": 1024, "n_threads": 3, "decoding": {"max_tokens": 4}}},
    }
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))

    # n_threads 3 on 2 cores: Snakemake grants 2, and the engine runs with the 2 granted
    first = snakemake(wd, "--cores", "2", TARGET)
    assert "threads: 2" in job_block(first, "generate")
    log = (wd / "logs/generate/smol/main/docs/00000-of-00001.log").read_text()
    assert "n_threads 2, n_threads_batch 2" in log
    # one progress summary line per job, no line per request
    assert sum("copyprobe.progress" in line for line in log.splitlines()) == 1
    # with cores to spare the job reserves the model's n_threads, or the default when unset
    plan = snakemake(wd, "--cores", "8", "--dry-run", "--forcerun", "generate", TARGET)
    assert "threads: 3" in job_block(plan, "generate")
    unset = wd / "config" / "unset.yaml"
    unset.write_text(yaml.safe_dump({"models": {"smol": {**cfg["models"]["smol"],
                                                         "n_threads": None}}}))
    plan = snakemake(wd, TARGET, "--cores", "8", "--dry-run", "--configfile", str(unset))
    assert f"threads: {DEFAULT_LOCAL_THREADS}" in job_block(plan, "generate")

    manifest = wd / "results/models/smol.json"
    old = json.loads(manifest.read_text())["sha256"]
    assert old == smollm2_file.sha256
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(
        snakemake(wd, "--cores", "2", "--dry-run", TARGET))

    # other weights at the same path: prepare_model and the generation run again
    model.write_bytes(smollm2_file.path.read_bytes() + b"other weights")
    plan = snakemake(wd, "--cores", "2", "--dry-run", TARGET)
    assert {"prepare_model", "generate", "merge_generations"} <= planned_rules(plan)
    snakemake(wd, "--cores", "2", str(manifest.relative_to(wd)))
    new = json.loads(manifest.read_text())["sha256"]
    assert new != old and new == sha256_file(model)
