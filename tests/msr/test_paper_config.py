"""config/paper/msr.yaml: the MSR paper's setups validate, crawl their own documents (no user
folder), a dry run (no API key, no GPU, no request) plans the main runs, the three ablations,
their figures and tables, and `copyprobe cost` prices it from the config alone."""

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
    """The workflow and the paper config alone: no data folder of any kind."""
    wd = tmp_path_factory.mktemp("paper")
    workflow_copy(wd, documents=1, folder="unused")
    shutil.rmtree(wd / "unused")
    (wd / "config" / "paper").mkdir()
    shutil.copy(PAPER, wd / "config" / "paper" / "msr.yaml")
    return wd


def test_a_dry_run_of_the_paper_needs_no_key_no_file_and_sends_no_request(paper_workdir):
    # no key, no User-Agent, and any HTTP request would go to a closed port and fail the run
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "COPYPROBE_USER_AGENT")}
    env.update({"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"})
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--dry-run", "--cores", "2", "--configfile",
         "config/paper/msr.yaml", "--replace-workflow-config"],
        cwd=paper_workdir, capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:")[1], re.M))
    # 3 models x 2 datasets (main) + shots 3 x 2 models + temperature 2 + input length 4
    assert counts["msr_compute_stats"] == "18"
    assert counts["collect_corpus"] == "3"
    # shots: two models; input length and temperature: gpt-3.5
    assert counts["msr_plot_experiment"] == "4" and counts["msr_make_sweep_table"] == "2"
    assert counts["msr_compare_settings"] == "1" and counts["msr_plot_models"] == "2"
    assert "results/figures/wikipedia_fk_models.png" in out
    assert "results/tables/sweep_input_length.csv" in out
    assert "results/comparisons/temperature/gpt-3.5-turbo-1106.json" in out
    assert not (paper_workdir / ".cache").exists()  # nothing fetched, nothing cached


def test_the_sources_are_copyprobes_crawlers_on_the_papers_books_and_windows(monkeypatch):
    from copyprobe.config import source_cutoffs, source_spec
    from copyprobe.sources import build_source

    cfg = load_config(PAPER)
    kinds = {name: s["kind"] for name, s in cfg["sources"].items()}
    assert kinds == {"wikipedia_pre": "wikipedia", "wikipedia_post": "wikipedia",
                     "oer": "openstax"}
    assert not any(_inputs(cfg, name) for name in cfg["sources"])  # no user file
    cutoffs = [pd.Timestamp(m["cutoff"]).date() for m in cfg["models"].values()]
    pre, post = (source_spec(cfg, s) for s in ("wikipedia_pre", "wikipedia_post"))
    assert pd.Timestamp(post["created_after"]).date() > max(cutoffs)
    assert pd.Timestamp(pre["created_before"]).date().year <= min(cutoffs).year - 3
    assert pre.get("revision_before", "cutoff") == "cutoff" and pre["min_words"] == 1000
    oer = source_spec(cfg, "oer")
    assert oer["reader"] == "archive"
    assert [b["slug"] for b in oer["books"]] == [
        "biology-2e", "principles-economics-2e", "concepts-biology", "nutrition", "pharmacology"]
    assert not any("published" in b for b in oer["books"])  # dates from the catalogue
    monkeypatch.setenv("COPYPROBE_USER_AGENT", "copyprobe-tests/0 (tests@example.org)")
    for name in cfg["sources"]:  # each builds without a request
        build_source(name, source_spec(cfg, name), source_cutoffs(cfg, name))


def _inputs(cfg, name):
    from copyprobe.sources.base import SOURCES

    spec = {k: v for k, v in cfg["sources"][name].items() if k not in ("kind", "cut_at")}
    return SOURCES.get(cfg["sources"][name]["kind"]).input_files(spec)


def test_cost_plans_every_request_from_the_config_and_prices_it():
    from copyprobe import cost

    cfg = load_config(PAPER)
    rows = cost.estimate(cfg)
    runs = {(r["model"], r["run"], r["part"]): r for r in rows}
    main = runs[("gpt-3.5-turbo-1106", "main", "wikipedia_pre")]
    assert main["calls"] == 600 and runs[("gpt-4-turbo-2024-04-09", "main", "oer")]["calls"] == 500
    # 5 of 6 segments of 1,000 words (166 each) plus the system message, at 4/3 tokens a word
    words = 5 * 166 + len(cfg["msr"]["system_message"].split())
    assert main["prompt_tokens"] == 600 * (cost.word_tokens(words) + 4 * 6)
    assert main["completion_tokens"] == 600 * 340  # 2 tokens per held-out word (170)
    assert main["usd"] == pytest.approx((main["prompt_tokens"] * 1.0
                                         + main["completion_tokens"] * 2.0) / 1e6)
    # temperature 0.1 sends the main run's requests: answered from the cache, not counted
    assert ("gpt-3.5-turbo-1106", "temp0.1", "wikipedia_pre") not in runs
    assert ("gpt-3.5-turbo-1106", "temp0.7", "wikipedia_pre") in runs
    assert all(r["usd"] is None for r in rows if r["model"] == "llama-3-70b")  # local GPUs
    total = cost.summary(rows)
    assert total["unknown"] == [] and total["unpriced"] == []
    assert total["usd"] == pytest.approx(sum(r["usd"] or 0 for r in rows), abs=0.01)
