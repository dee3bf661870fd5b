"""The extraction and MSR measures of a ground-truth run: p_z of a window at a document's
start read from the membership pass (equal to the window scored alone on SmolLM2), the
per-document p_z and match measures against values worked by hand, MSR's answers through
the generation cache, and the measures compared with the truth beside the scores."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
import pytest

from copyprobe.artifacts import GENERATIONS
from copyprobe.generation.logprob_scoring import ScoreRequest
from copyprobe.membership import truth_measures as tm
from copyprobe.membership.engine import Model, document_pass, run_pass

TEXTS = [
    "The lighthouse keeper of Varnholm counted the ships each morning and wrote their names "
    "in a ledger bound with green thread. In the winter of the great storm he counted none, "
    "and the ledger stayed open on the same page for eleven days while the sea rose against "
    "the rocks and the lamp burned through the nights without a single sail to guide home.",
    "Mirela Sand kept bees on the roof of the old tram depot, forty hives painted in the "
    "colours of the lines that once ran beneath them. Every August she sold the honey by "
    "route number, and regulars swore that the number nine tasted of linden and cold iron, "
    "while the number four carried something of the river and the bakeries along its banks.",
]


@pytest.fixture(scope="module")
def smollm2(smollm2_file, tmp_path_factory):
    spec = {"name": "smollm2", "backend": "llamacpp", "n_ctx": 2048, "n_threads": 2,
            "cache_dir": str(tmp_path_factory.mktemp("cache")),
            "model_id": smollm2_file.path.name,
            "decoding": {"temperature": 0.0, "max_tokens": 48, "seed": 0}}
    return Model("smollm2", spec, smollm2_file)


@pytest.fixture(scope="module")
def docs():
    return pd.DataFrame({"doc_id": ["a", "b"], "text": TEXTS})


# slow: SmolLM2 scores 2 documents with the moments' pass, then 4 windows (two model loads):
# 17 s measured on a 2-core machine at load 2
@pytest.mark.slow
def test_a_window_at_the_start_is_read_from_the_pass(smollm2, docs):
    passed = document_pass(docs, smollm2, max_tokens=512, moments=False)
    windows, from_pass = tm.extraction_windows(
        docs, smollm2, passed, {"prefix_tokens": 20, "suffix_tokens": 10, "stride": 20}, 2)
    assert from_pass == 2  # window 0 of each document; window 1 was scored alone
    assert (windows["status"] == "scored").sum() == 4
    tok = smollm2.tokenizer()
    ids = [tok.tokenize(text) for text in TEXTS]
    # each document's first window scored alone, and its second (scored alone already)
    alone = run_pass(smollm2, [ScoreRequest(context_ids=tuple(i[a:a + 20]),
                                            target_ids=tuple(i[a + 20:a + 30]))
                               for i in ids for a in (0, 20)])
    for k in range(len(TEXTS)):
        req, res = passed.requests[k], passed.results[k]
        c = len(req.context_ids)  # SmolLM2 adds no BOS: its first token is the context
        by_hand = math.fsum(res.scores.logprobs[20 - c:30 - c])
        rows = windows[windows["doc_id"] == docs["doc_id"][k]].set_index("window_index")
        assert rows.loc[0, "log_pz"] == pytest.approx(by_hand, abs=1e-9)
        # the same conditional probabilities; llama.cpp's batches are not bit-equal
        first, second = alone[2 * k], alone[2 * k + 1]
        assert rows.loc[0, "log_pz"] == pytest.approx(first.scores.log_pz, rel=2e-3, abs=2e-2)
        assert second.from_cache and rows.loc[1, "log_pz"] == pytest.approx(
            second.scores.log_pz)


def test_extraction_measures_by_hand():
    windows = pd.DataFrame({
        "doc_id": ["a", "a", "b", "b", "c"], "window_index": [0, 1, 0, 1, -1],
        "log_pz": [-10.0, -4.0, np.nan, -20.0, np.nan], "n_tokens": [10, 5, 10, 10, 0],
        "greedy_match": [False, False, None, False, None],
        "status": ["scored", "scored", "failed", "scored", "skipped"]})
    got = tm.extraction_measures(windows).set_index("doc_id")
    assert list(got.index) == ["a", "b"]  # c is shorter than a window: no value
    assert got.loc["a"].tolist() == pytest.approx([-4.0, (-1.0 - 0.8) / 2])
    assert got.loc["b"].tolist() == pytest.approx([-20.0, -2.0])  # the failed window left out


def _generations(prompts: pd.DataFrame, texts: dict[str, str | None]) -> pd.DataFrame:
    rows = []
    for r in prompts.itertuples():
        text = texts[r.doc_id]
        rows.append({"request_id": r.request_id, "sample_index": 0, "text": text,
                     "status": "ok" if text is not None else "failed"})
    return pd.DataFrame(rows).reindex(columns=GENERATIONS.columns)


def test_msr_match_measures_by_hand():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c"], "text": [
        "one two three four five six seven eight nine ten eleven twelve",
        "red green blue cyan magenta yellow black white grey pink brown beige",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"]})
    msr = {"n": 2, "num_words": 1000, "min_segment_words": 1, "system_message": "Go on.",
           "prompt_format": "chat"}
    prompts = tm.msr_prompts(docs, "m", msr)
    assert prompts["reference"].tolist() == ["seven eight nine ten eleven twelve",
                                             "black white grey pink brown beige",
                                             "eta theta iota kappa lambda mu"]
    gens = _generations(prompts, {"a": "Seven eight nine ten eleven and more",
                                  "b": "black white grey and so on", "c": None})
    got = tm.msr_match_measures(prompts, gens, k=5, k_min=5, k_max=6).set_index("doc_id")
    assert got.loc["a"].tolist() == [5.0, 1.0]  # "seven ... eleven": 5 words, case folded
    assert got.loc["b"].tolist() == [3.0, 0.0]
    assert got.loc["c"].isna().all()  # no answer: unknown, not 0


def test_msr_answers_come_through_the_generation_cache(smollm2, docs):
    msr = {"n": 4, "num_words": 1000, "min_segment_words": 1, "system_message": "Continue.",
           "prompt_format": "chat"}
    prompts = tm.msr_prompts(docs, smollm2.name, msr)
    first = tm.generate(prompts, smollm2)
    again = tm.generate(prompts, smollm2)
    assert (first["status"] == "ok").all() and again["from_cache"].all()
    got = tm.msr_match_measures(prompts, first, k=5, k_min=5, k_max=6)
    assert got["msr_longest"].between(0, 60).all()


def test_the_measures_are_compared_with_the_truth_beside_the_scores():
    from copyprobe.membership.cli import evaluate

    rng = np.random.default_rng(0)
    n = 24
    member = np.arange(n) < 12
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)],
                         "text": [f"text {w}" for w in rng.permutation(n)]})
    truth = docs[["doc_id"]].assign(member=member, repeats=np.where(member, [1, 4] * 12, 0))
    table = docs[["doc_id"]].assign(status="scored", loss=rng.normal(size=n))
    extra = docs[["doc_id"]].assign(msr_longest=np.where(member, 9.0, 2.0),
                                    max_log_pz=np.where(member, -5.0, -9.0) + rng.random(n))
    args = argparse.Namespace(n_boot=100, seed=0, fpr_halvings=5, di_aggregate="twice_median")
    result = evaluate(docs, table, truth, ["loss"], args,
                      extra=(extra, {"msr_longest": 1, "max_log_pz": 1}))
    assert set(result["measures"]) == {"loss", "msr_longest", "max_log_pz"}
    assert result["measures"]["msr_longest"]["auc"] == 1.0
    assert result["measures"]["max_log_pz"]["direction"] == "higher"
    assert set(result["by_repeats"]["4"]) == {"loss", "msr_longest", "max_log_pz"}
    from copyprobe.membership.runs import result_table

    rows = result_table("r", result)
    assert {"msr_longest", "max_log_pz"} <= set(rows["measure"])
    assert rows[rows["measure"] == "max_log_pz"]["repeats"].tolist() == ["all", "1", "4"]
