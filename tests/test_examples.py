"""The example configs under config/examples are valid and plan the study they describe
(they need internet to run, so only their plan is checked here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from copyprobe.config import load_config, source_cutoffs, source_spec

ROOT = Path(__file__).resolve().parents[1]
LIVE = ROOT / "config" / "examples" / "wikipedia_live.yaml"


def test_live_example_is_valid_and_needs_a_user_agent_only_from_outside():
    cfg = load_config(LIVE)
    kinds = {name: s["kind"] for name, s in cfg["sources"].items()}
    assert kinds == {"wiki_pre": "wikipedia", "wiki_post": "wikipedia",
                     "oer_pre": "openstax", "oer_post": "openstax"}
    # no contact address is invented in a tracked file: it comes from COPYPROBE_USER_AGENT
    assert all("user_agent" not in s for s in cfg["sources"].values())
    assert source_cutoffs(cfg, "wiki_pre") == ["2024-06-30"]
    assert source_cutoffs(cfg, "oer_pre") == []  # a book does not depend on the cutoff
    # D_post windows start after every model's cutoff plus the margin
    margin = cfg["curation"]["margin_days"]
    import datetime as dt

    latest = max(dt.date.fromisoformat(str(m["cutoff"])) for m in cfg["models"].values())
    assert dt.date.fromisoformat(source_spec(cfg, "wiki_post")["created_after"]) > (
        latest + dt.timedelta(days=margin))
    assert dt.date.fromisoformat(source_spec(cfg, "wiki_pre")["created_before"]) < (
        latest - dt.timedelta(days=margin))


def test_live_example_refuses_to_crawl_without_a_user_agent(monkeypatch):
    from copyprobe.sources import SourceError, build_source

    cfg = load_config(LIVE)
    with pytest.raises(SourceError, match="user_agent' is required .*COPYPROBE_USER_AGENT"):
        build_source("wiki_pre", source_spec(cfg, "wiki_pre"), ["2024-06-30"])
    monkeypatch.setenv("COPYPROBE_USER_AGENT", "copyprobe-tests/0 (tests@example.org)")
    for name in cfg["sources"]:  # builds without any request
        build_source(name, source_spec(cfg, name), source_cutoffs(cfg, name))


@pytest.mark.slow
def test_live_example_plans_every_source_and_the_reports(tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    shutil.copy(LIVE, wd / "config" / "live.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
         "config/live.yaml", "--replace-workflow-config"],
        cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    planned = re.findall(r"^(?:local)?rule (\w+):\n(?:.*\n)*?\s+wildcards: (.*)$", out,
                         flags=re.MULTILINE)
    collected = {w for rule, w in planned if rule == "collect_corpus"}
    assert collected == {f"source={s}" for s in ("wiki_pre", "wiki_post", "oer_pre", "oer_post")}
    assert "rule msr_curation_report:" in out or "localrule msr_curation_report:" in out


PAPER = ROOT / "config" / "paper" / "copyright.yaml"
SHARED = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES") or ROOT.parent / "shared" / "fixtures")


def test_copyright_paper_example_names_the_papers_models_and_keys_only_by_variable():
    from copyprobe.generation.base import backend_facts

    cfg = load_config(PAPER)
    models = cfg["models"]
    assert all(m["studies"] == ["copyright"] for m in models.values())
    # the twelve models of the paper's Table 1, with the authors' decoding
    assert len(models) == 12
    ids = {m.get("model_id") for m in models.values()}
    for wanted in ("gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "anthropic/claude-3.7-sonnet",
                   "google/gemini-2.0-flash-001", "llava-hf/llava-1.5-7b-hf",
                   "llava-hf/llava-1.5-13b-hf", "llava-hf/llava-v1.6-vicuna-13b-hf",
                   "Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct",
                   "deepseek-community/deepseek-vl-7b-chat", "THUDM/glm-4v-9b",
                   "deepseek-community/Janus-Pro-7B"):
        assert wanted in ids
    assert {(m["decoding"]["temperature"], m["decoding"]["max_tokens"])
            for m in models.values()} == {(0.2, 512)}
    # local open models run on a GPU and see the images; API models name their key variable
    for name, m in models.items():
        if m["backend"] == "hf":
            assert m["vision"] is True, name
        if backend_facts(m["backend"])["remote"]:
            assert m["api_key_env"] in ("OPENAI_API_KEY", "OPENROUTER_API_KEY"), name
            assert "price" in load_config_slice(cfg, name), name
    assert cfg["copyright"]["judge"]["api_key_env"] == "OPENAI_API_KEY"
    text = PAPER.read_text()
    assert "sk-" not in text  # no key in a tracked file


def load_config_slice(cfg, name):
    from copyprobe.config import model_slice

    return model_slice(cfg, name)


def test_copyright_paper_cost_counts_the_benchmark_rows_and_the_judge(capsys):
    """`copyprobe cost` with the released folder's 250 materials: 100 rows per material with
    copyprobe's own seeds, every API model and the judge priced."""
    from copyprobe.cli import main

    assert main(["cost", str(PAPER)]) == 0  # the folder's size is not in the config
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["total"]["calls"] == 0 and len(out["total"]["unknown"]) == 13
    assert main(["cost", str(PAPER), "--documents", "copyguard=250"]) == 0
    out = json.loads(capsys.readouterr().out)
    by = {m["model"]: m for m in out["models"]}
    assert by["gpt-4o"]["calls"] == 25_000 and by["copyright.judge"]["calls"] == 12 * 25_000
    assert by["gpt-4o"]["usd"] > 0 and by["copyright.judge"]["usd"] > 0
    assert by["qwen2.5-vl-7b"]["usd"] is None
    mini = by["gpt-4o-mini"]  # on openai_batch: half the list price (0.15 / 0.6 per million)
    assert mini["usd"] == pytest.approx(0.5 * (mini["prompt_tokens"] * 0.15
                                               + mini["completion_tokens"] * 0.6) / 1e6)
    assert out["total"]["unpriced"] == [] and out["total"]["unknown"] == []


@pytest.mark.slow
def test_copyright_paper_example_plans_the_benchmark(tmp_path, workflow_copy):
    """With the released layout in place (the shared fixture's code and news parts), the
    example plans collection, the manifest and one prompts checkpoint per model."""
    fixture = SHARED / "copyguard"
    if not (fixture / "query" / "seeds.json").is_file():
        pytest.skip(f"shared fixture {fixture} absent (set COPYPROBE_SHARED_FIXTURES)")
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    (wd / "data" / "copyguard").mkdir(parents=True)
    (wd / "data" / "copyguard" / "dataset").symlink_to(fixture)
    shutil.copy(PAPER, wd / "config" / "paper.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
         "config/paper.yaml", "--replace-workflow-config"],
        cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    prompts = set(re.findall(r"results/copyright/paper/prompts/([\w.-]+)/main\.parquet", out))
    assert prompts == set(load_config(PAPER)["models"])
    assert "copyright_manifest" in out and "collect_corpus" in out


BOOKS = ROOT / "config" / "examples" / "extraction_books.yaml"


def test_extraction_example_plans_every_model_on_every_book_source(tmp_path, workflow_copy):
    """The books example validates (exact models on scoring backends, the API model on the
    Monte Carlo path) and plans one scoring job per model and source of its datasets."""
    cfg = load_config(BOOKS)
    methods = {m: s.get("method", "exact") for m, s in cfg["models"].items()}
    assert methods["gpt-4o-mini"] == "monte_carlo"
    assert {m for m, v in methods.items() if v == "exact"} == {
        "llama-3.1-8b", "llama-3.1-70b", "pythia-6.9b", "olmo-2-7b", "llama-3.1-8b-server"}
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    books = wd / "data" / "gutenberg"
    books.mkdir(parents=True)
    (books / "pg1342.txt").write_text("It is a truth universally acknowledged ...\n")
    (books / "metadata.csv").write_text("file,title,published\n"
                                        "pg1342.txt,Pride and Prejudice,1813-01-28\n")
    shutil.copy(BOOKS, wd / "config" / "books.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
         "config/books.yaml", "--replace-workflow-config"],
        cwd=wd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "COPYPROBE_USER_AGENT": "copyprobe-tests/1.0 (tests@example.org)"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    scored = set(re.findall(r"results/extraction/windows/([\w.-]+)/([\w.-]+)\.parquet", out))
    sources = {"gutenberg", "openstax_pre", "openstax_post"}
    assert scored == {(m, s) for m in cfg["models"] for s in sources}


ATTRIBUTION = ROOT / "config" / "examples" / "attribution.yaml"


def _plan_only(wd: Path, example: Path) -> str:
    """The dry run of ``example`` alone in the workflow copy ``wd`` (its output)."""
    shutil.copy(example, wd / "config" / example.name)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                           "--configfile", f"config/{example.name}",
                           "--replace-workflow-config"],
                          cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


@pytest.mark.slow
def test_attribution_example_plans_the_indexes_and_both_studies_attribution(tmp_path,
                                                                             workflow_copy):
    """The attribution example validates (the copyright benchmark brings copyright-docs) and
    plans one suffix-array job per shard of each index, one attribution per MSR run and per
    copyright model, and both tables."""
    cfg = load_config(ATTRIBUTION)
    assert set(cfg["spans"]["indexes"]) == {"msr-corpus", "copyright-docs"}
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    out = _plan_only(wd, ATTRIBUTION)
    counts = dict(re.findall(r"^(\w[\w.-]*)\s+(\d+)$", out, flags=re.MULTILINE))
    assert counts["span_index_shard"] == "3" and counts["span_index"] == "2"
    assert counts["msr_attribution"] == "2"  # one model x two datasets
    assert counts["copyright_attribution"] == "1" and counts["msr_attribution_table"] == "1"
    assert "results/copyright/docs/tables/attribution_smollm2-ocr-cascade.md" in out


COMPARED = ROOT / "config" / "examples" / "guards_compared.yaml"


def test_guards_compared_example_gives_every_base_its_five_rows():
    """A real VLM and an API model, each with none / reminder / input / output / both; the
    output rows read the base's generations, the both rows the input guard's."""
    from copyprobe.generation.base import backend_facts
    from copyprobe.guard.compare import KINDS, compared_rows, output_sources

    cfg = load_config(COMPARED)
    rows = compared_rows(cfg)
    assert set(rows) == {"qwen2.5-vl-7b", "gpt-4o"}
    for base, kinds in rows.items():
        assert [k for k, _ in kinds] == list(KINDS), base
        by_kind = dict(kinds)
        assert output_sources(cfg)[by_kind["output"]] == base
        assert output_sources(cfg)[by_kind["both"]] == by_kind["input"]
    assert backend_facts(cfg["models"]["gpt-4o"]["backend"])["remote"]
    assert cfg["models"]["qwen2.5-vl-7b"]["model_id"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    benign_forms = cfg["copyright"]["benchmarks"]["paper"]["benign_forms"]
    assert len(benign_forms) == 3  # 250 materials x 8 benign queries x 3 forms >= 1000
    assert cfg["copyright"]["benchmarks"]["open"]["rights"] == "open"
    assert "sk-" not in COMPARED.read_text()


OFFLINE_COMPARED = ROOT / "config" / "examples" / "guards_offline.yaml"


def test_guards_offline_example_has_1000_requests_in_each_over_refusal_set():
    """The offline comparison (packaged SmolLM2, installed materials, no judge: the rule
    detector's columns): five rows on the one base, and the manifests it builds from what
    make setup installs hold at least 1000 benign requests about the copyrighted READMEs and
    1000 requests about the open licences, as text prompts (no network, no OCR model)."""
    from copyprobe.copyright.benchmark import build_benchmark
    from copyprobe.guard.compare import KINDS, MIN_OVER_REFUSAL_N, compared_rows
    from copyprobe.sources.collect import collect

    cfg = load_config(OFFLINE_COMPARED)
    rows = compared_rows(cfg)
    assert list(rows) == ["smol"] and [k for k, _ in rows["smol"]] == list(KINDS)
    assert cfg["copyright"].get("judge") is None
    benches = cfg["copyright"]["benchmarks"]
    corpora = {name: collect(name, source_spec(cfg, name)).corpus
               for name in ("package_docs", "licences")}
    for name, spec in benches.items():
        assert spec["images"] is False
        manifest, _ = build_benchmark([corpora[m] for m in spec["materials"]], spec,
                                      images_dir=None, names=spec["materials"])
        if spec["rights"] == "open":
            assert (~manifest["benign"]).sum() >= MIN_OVER_REFUSAL_N, name
        else:
            assert manifest["benign"].sum() >= MIN_OVER_REFUSAL_N, name
            assert (~manifest["benign"]).sum() > 0, name


DEMO_FULL = ROOT / "config" / "examples" / "demo_full.yaml"
COPYRIGHT_DEMO_FULL = ROOT / "config" / "examples" / "copyright_demo_full.yaml"


def _merged(base: Path, overlay: Path) -> dict:
    """``overlay`` merged into ``base`` key by key, as Snakemake merges --configfile files."""
    import yaml
    from snakemake.utils import update_config

    cfg = yaml.safe_load(base.read_text())
    update_config(cfg, yaml.safe_load(overlay.read_text()))
    return cfg


def test_default_demo_shows_each_measure_once_and_demo_full_adds_the_rest():
    from copyprobe.config import validate_config

    demo = load_config(ROOT / "config" / "config.yaml")
    # one model, one dataset: MSR (D_pre licences vs D_post controls) and extraction; the
    # membership control's base model in that study only
    assert list(demo["models"]) == ["smollm2-135m-instruct", "gemma3-270m"]
    assert demo["models"]["gemma3-270m"]["studies"] == ["msr", "extraction"]
    assert demo["models"]["smollm2-135m-instruct"]["studies"] == ["membership"]
    assert demo["membership"]["runs"]["control"]["model"] == "smollm2-135m-instruct"
    # MSR's and extraction's D_post: a seeded 20 of the 40 controls; the membership run, all 40
    assert demo["datasets"] == {"licences": ["licences", "controls_sample"]}
    assert demo["sources"]["controls_sample"] == {**demo["sources"]["controls"], "limit": 20}
    assert demo["membership"]["runs"]["control"]["source"] == "controls"
    assert demo["extraction"]["datasets"] == ["licences"]
    assert demo["extraction"]["max_windows_per_document"] == 1
    full = validate_config(_merged(ROOT / "config" / "config.yaml", DEMO_FULL))
    assert sorted(full["models"]) == ["control-trained", "gemma3-270m",
                                      "smollm2-135m-instruct"]
    # the control's trained model runs MSR and extraction; the run adds MSR's match
    assert full["models"]["control-trained"]["model_id"] == "results/membership/control/model"
    assert full["models"]["control-trained"]["studies"] == ["msr", "extraction"]
    assert demo["membership"]["runs"]["control"]["measures"] == ["membership", "extraction"]
    assert full["membership"]["runs"]["control"]["measures"] == ["membership", "extraction",
                                                                "msr"]
    assert full["models"]["smollm2-135m-instruct"]["prompt_format"] == "chat"
    assert full["models"]["smollm2-135m-instruct"]["studies"] == ["msr", "membership"]
    assert full["datasets"] == {"licences": ["licences", "controls"],
                                "wikipedia": ["wikipedia", "controls"]}
    assert full["extraction"]["max_windows_per_document"] == 4
    # the settings the demo shares with demo-full are the same (its table row is the same)
    assert full["models"]["gemma3-270m"] == demo["models"]["gemma3-270m"]
    assert {k: full[k] for k in ("msr", "matching", "statistics", "curation")} == {
        k: demo[k] for k in ("msr", "matching", "statistics", "curation")}
    make = (ROOT / "Makefile").read_text()
    assert "--configfile config/examples/demo_full.yaml\n" in make


def test_copyright_demo_full_asks_twice_the_queries_of_the_demo():
    from copyprobe.config import validate_config

    demo = load_config(ROOT / "config" / "copyright_demo.yaml")
    full = validate_config(_merged(ROOT / "config" / "copyright_demo.yaml",
                                   COPYRIGHT_DEMO_FULL))
    docs, docs_full = (c["copyright"]["benchmarks"]["docs"] for c in (demo, full))
    assert (docs["per_task"], docs_full["per_task"]) == (1, 2)
    assert {k: v for k, v in docs_full.items() if k != "per_task"} == {
        k: v for k, v in docs.items() if k != "per_task"}
    assert full["models"] == demo["models"]
    make = (ROOT / "Makefile").read_text()
    assert ("--configfile config/copyright_demo.yaml \\\n"
            "\t  config/examples/copyright_demo_full.yaml --replace-workflow-config") in make


def test_longform_example_draws_the_figure_beside_the_p_z_map_and_make_runs_it_alone():
    """config/examples/longform.yaml puts its model in both studies, so one run makes the
    comparison with the p_z map and its figure; `make demo-longform` runs the example alone."""
    from copyprobe.longform import paths as P
    from copyprobe.longform.study import LongformStudy, compared

    cfg = load_config(ROOT / "config" / "examples" / "longform.yaml")
    assert cfg["models"]["gemma3-270m"]["studies"] == ["longform", "extraction"]
    assert compared(cfg) == [("gemma3-270m", "licences")]
    assert P.FIGURE_VS_PZ in LongformStudy().targets(cfg)
    make = (ROOT / "Makefile").read_text()
    assert ("demo-longform: $(STAMP)\n\t$(BIN)/snakemake --cores $(CORES) --configfile "
            "config/examples/longform.yaml \\\n\t  --replace-workflow-config\n") in make
