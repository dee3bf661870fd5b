"""config/paper/hubble.yaml: Hubble's released models (perturbed and standard twins, 1B and
8B, 100B and 500B tokens) validate as GPU hf entries, each with a run scored against the
Wikipedia passages' truth, and the workflow plans them (dry run, nothing fetched) with the
fetched data stood in by a two-passage folder and its truth."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pandas as pd

from copyprobe.config import load_config

from ..conftest import ROOT

PAPER = ROOT / "config" / "paper" / "hubble.yaml"


def test_the_models_are_hubbles_released_twins_on_gpus():
    cfg = load_config(PAPER)
    ids = {m["model_id"] for m in cfg["models"].values()}
    assert ids == {f"allegrolab/hubble-{s}-{t}_toks-{k}-hf" for s in ("1b", "8b")
                   for t in ("100b", "500b") for k in ("perturbed", "standard")}
    for name, spec in cfg["models"].items():
        assert (spec["backend"], spec["device_map"], spec["dtype"]) == ("hf", "cuda", "bfloat16")
        assert spec.get("revision") == ("step238500" if "500b" in name else None)
    runs = cfg["membership"]["runs"]
    assert {r["model"] for r in runs.values()} == set(cfg["models"])
    assert {r["truth"] for r in runs.values()} == {"data/hubble/passages_wikipedia.truth.parquet"}
    assert all(r["words"] is None for r in runs.values())  # the passages whole, as inserted
    text = PAPER.read_text()
    assert "allegrolab/passages_wikipedia" in text and "docs/membership.md" in text


def test_the_workflow_plans_every_run_on_a_gpu(tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    folder = wd / "data" / "hubble" / "passages_wikipedia"
    folder.mkdir(parents=True)
    for stem in ("p1", "p2"):
        (folder / f"{stem}.txt").write_text(f"A passage {stem}.\n")
    (folder / "metadata.csv").write_text("file,title,published\np1.txt,p1,2020-01-01\n"
                                         "p2.txt,p2,2020-01-01\n")
    pd.DataFrame({"doc_id": ["local:p1", "local:p2"], "member": [True, False],
                  "repeats": [4, 0]}).to_parquet(folder.parent / "passages_wikipedia.truth.parquet")
    shutil.copy(PAPER, wd / "config" / "hubble.yaml")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                           "--configfile", "config/hubble.yaml", "--replace-workflow-config"],
                          cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    runs = set(load_config(PAPER)["membership"]["runs"])
    assert set(re.findall(r"results/membership/([\w.-]+)/result\.md", out)) == runs
    counts = dict(re.findall(r"^(\w[\w.-]*)\s+(\d+)$", out, flags=re.MULTILINE))
    assert counts["membership_given"] == counts["membership_score"] == str(len(runs))
    assert "membership_train" not in counts  # trained elsewhere: nothing is trained
    scoring = out.split("rule membership_score:")[1:]
    assert scoring and all("gpu=1" in block.split("\n\n")[0] for block in scoring)
