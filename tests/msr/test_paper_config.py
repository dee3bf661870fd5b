"""config/paper/msr.yaml: the MSR paper's setups validate, and a dry run (no API key, no GPU)
plans the main runs, the three ablations, their figures and tables."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.msr import experiments as cpx
from copyprobe.config import load_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "config" / "paper" / "msr.yaml"
OPENSTAX_FILES = ["bio_2e_os_book.csv", "econ_2e_os_book.csv", "concepts_bio.csv",
                  "nursing_os_book.csv"]


def test_the_paper_config_validates_with_the_papers_settings():
    cfg = load_config(PAPER)
    assert set(cfg["models"]) == {"gpt-3.5-turbo-1106", "gpt-4-turbo-2024-04-09", "llama-3-70b"}
    for name in ("gpt-3.5-turbo-1106", "gpt-4-turbo-2024-04-09"):
        spec = cpx.run_slice(cfg, name, "main")
        assert spec["backend"] == "openai" and spec["decoding"]["temperature"] == 0.1
    assert cpx.run_slice(cfg, "llama-3-70b", "main")["decoding"]["temperature"] == 0.0
    assert (cfg["msr"]["n"], cfg["msr"]["num_words"]) == (6, 1000)
    assert (cfg["matching"]["k_min"], cfg["matching"]["k_max"]) == (5, 12)
    gpt35 = "gpt-3.5-turbo-1106"
    # shots 2, 4, 6, 8
    shots = cfg["experiments"]["shots"]
    assert [cpx.run_slice(cfg, gpt35, v)["msr"]["n"]
            for v in cpx.experiment_variants(shots)] == [2, 4, 6, 8]
    assert cpx.experiment_models(cfg, "shots") == [gpt35, "llama-3-70b"]
    # temperature 0.1 vs 0.7 at k = 4..15
    temp = cfg["experiments"]["temperature"]
    a, b = cpx.experiment_variants(temp)
    assert [cpx.run_slice(cfg, gpt35, v)["decoding"]["temperature"] for v in (a, b)] == [0.1, 0.7]
    assert cpx.run_matching(cfg, gpt35, a) == cpx.run_matching(cfg, gpt35, b) == {
        "k_min": 4, "k_max": 15}
    # input length 75 .. 1000 words, thresholds ending at L / n (at most 12)
    length = cfg["experiments"]["input_length"]
    assert [cpx.run_slice(cfg, gpt35, v)["msr"]["num_words"]
            for v in cpx.experiment_variants(length)] == [75, 125, 250, 500, 1000]
    assert {cpx.run_matching(cfg, gpt35, v)["k_max"]
            for v in cpx.experiment_variants(length)} == {12}


def test_the_commented_endpoint_alternative_for_llama_validates():
    """The llama-3-70b entry's comment says which lines to swap for an OpenAI-compatible
    endpoint: doing exactly that gives a valid config."""
    text = PAPER.read_text()
    block = re.search(r"tensor_parallel_size / dtype with:\n((?:\s+#.*\n)+?)\s+backend: vllm",
                      text)
    assert block, "the llama-3-70b entry no longer carries the endpoint alternative"
    lines = [ln.strip().lstrip("#").strip() for ln in block.group(1).splitlines()]
    swap = yaml.safe_load("\n".join(ln.split("#")[0] for ln in lines if ":" in ln))
    raw = yaml.safe_load(text)
    llama = raw["models"]["llama-3-70b"]
    for key in ("backend", "tensor_parallel_size", "dtype"):
        del llama[key]
    llama.update(swap)
    cfg = validate_config(raw)
    spec = cfg["models"]["llama-3-70b"]
    assert spec["backend"] == "openai" and spec["api_key_optional"] is True
    assert spec["base_url"].startswith("http://127.0.0.1:")


@pytest.fixture(scope="module")
def paper_workdir(tmp_path_factory, workflow_copy):
    wd = tmp_path_factory.mktemp("paper")
    (wd / "data").mkdir()
    workflow_copy(wd, documents=3, folder="data/wikipedia_post")
    (wd / "config" / "paper").mkdir()
    shutil.copy(PAPER, wd / "config" / "paper" / "msr.yaml")
    shutil.copy(ROOT / "config" / "config.yaml", wd / "config" / "config.yaml")
    (wd / "data" / "openstax").mkdir()
    row = {"section_id": "1.1", "section_name": "A section", "section_url": "1-1-a-section",
           "contents": "Words of a section. " * 300}
    for name in OPENSTAX_FILES:
        pd.DataFrame([row]).to_csv(wd / "data" / "openstax" / name, index=False)
    return wd


def test_a_dry_run_of_the_paper_needs_no_key(paper_workdir):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--dry-run", "--cores", "2", "--configfile",
         "config/paper/msr.yaml", "--replace-workflow-config"],
        cwd=paper_workdir, capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:")[1], re.M))
    # 3 models x 2 datasets (main) + shots 3 x 2 models + temperature 2 + input length 4
    assert counts["compute_stats"] == "18"
    assert counts["collect_corpus"] == "3"
    # shots: two models; input length and temperature: gpt-3.5
    assert counts["plot_experiment"] == "4" and counts["make_sweep_table"] == "2"
    assert counts["compare_settings"] == "1" and counts["plot_models"] == "2"
    assert "results/figures/wikipedia_fk_models.png" in out
    assert "results/tables/sweep_input_length.csv" in out
    assert "results/comparisons/temperature/gpt-3.5-turbo-1106.json" in out


def test_the_oer_source_reads_the_authors_files(shared_fixtures, tmp_path):
    from copyprobe.sources import build_source

    cfg = load_config(PAPER)
    spec = {**cfg["sources"]["oer"], "path": str(shared_fixtures / "openstax")}
    spec.pop("cut_at", None)
    corpus = build_source("oer", spec).load("oer").corpus
    # the three D_pre books before every model's cutoff, Nutrition for Nurses after
    cutoffs = [pd.Timestamp(m["cutoff"]).date() for m in cfg["models"].values()]
    pre = corpus[corpus["published"] < min(cutoffs)]
    post = corpus[corpus["published"] > max(cutoffs)]
    assert len(pre) + len(post) == len(corpus) and len(post) > 0
    assert set(post["url"].str.extract(r"books/([^/]+)/")[0]) == {"nutrition"}
    assert {"biology-2e", "principles-economics-2e", "concepts-biology"} == set(
        pre["url"].str.extract(r"books/([^/]+)/")[0])
