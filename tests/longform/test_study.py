"""The study in a config: its block is validated, ``copyprobe cost`` prices every attempt and
every turn of every document, and the per-model table summarises nv-recall over documents."""

from __future__ import annotations

import math

import pytest

from copyprobe import cost
from copyprobe.config import ConfigError, validate_config
from copyprobe.generation.limits import MESSAGE_OVERHEAD_TOKENS
from copyprobe.longform.engine import INSTRUCTION
from copyprobe.longform.tables import per_model
from copyprobe.prompt import Prompt


def _cfg(**block):
    return validate_config({
        "cache_dir": ".cache", "sources": {"books": {"kind": "local", "path": "."}},
        "datasets": {"books": ["books"]},
        "models": {"api": {"backend": "openai", "model_id": "m", "cutoff": "2024-01-01",
                           "studies": ["longform"], "decoding": {"max_tokens": 100},
                           "price": {"input_per_million": 1.0,
                                     "output_per_million": 4.0}}},
        "longform": {"opening_words": 10, "target_words": 10, "attempts": 2, "max_turns": 3,
                     **block}})


def test_cost_prices_every_attempt_and_every_turn():
    rows = {r["part"]: r for r in cost.estimate(_cfg(), {"books": 5})}
    first = cost.prompt_tokens(Prompt("chat", messages=(
        {"role": "user", "content": f"{INSTRUCTION}\n\n" + " ".join(["w"] * 10)},)))
    probe, turns = rows["books probe"], rows["books turns"]
    # each probe answer up to probe_max_tokens (the paper's 1000)
    assert (probe["calls"], probe["prompt_tokens"], probe["completion_tokens"]) == (
        10, 10 * first, 10 * 1000)
    # turn t resends the probe and its 1000-token answer, t - 1 earlier answers of 100
    # tokens and t "Continue" turns
    per_turn = 100 + math.ceil(4 / 3) + 2 * MESSAGE_OVERHEAD_TOKENS
    conversation = sum(first + 900 + t * per_turn for t in (1, 2, 3))
    assert (turns["calls"], turns["prompt_tokens"], turns["completion_tokens"]) == (
        15, 5 * conversation, 15 * 100)
    assert turns["usd"] == pytest.approx((5 * conversation + 4 * 1500) / 1e6)
    # a token budget bounds the turns: 250 tokens are a 100-token probe answer and two turns
    assert cost.estimate(_cfg(max_tokens=250, probe_max_tokens=100),
                         {"books": 1})[1]["calls"] == 2
    # no probe_max_tokens: the model's max_tokens
    plain = {r["part"]: r for r in cost.estimate(_cfg(probe_max_tokens=None), {"books": 1})}
    assert plain["books probe"]["completion_tokens"] == 2 * 100


def test_the_seed_pair_perturbation_names_and_patterns_are_checked():
    with pytest.raises(ConfigError, match="longform.opening_words"):
        _cfg(target_words=None)
    with pytest.raises(ConfigError, match="longform.perturbations.*'nope'"):
        _cfg(perturbations=["nope"])
    with pytest.raises(ConfigError, match="longform.refusal_patterns"):
        _cfg(refusal_patterns=["(unclosed"])
    assert _cfg(opening_words=None, target_words=None)["longform"]["seed_min_words"] == 20


def test_a_budget_of_zero_attempts_or_an_unknown_dataset_is_a_config_error():
    with pytest.raises(ConfigError, match="longform.attempts"):
        _cfg(attempts=0)
    with pytest.raises(ConfigError, match="longform.datasets"):
        _cfg(datasets=["nope"])


def test_per_model_reports_the_distribution_and_leaves_failures_out():
    rows = [{"model": "a", "nv_recall": v, "stopped": "refused"} for v in (0.1, 0.2, 0.3)]
    rows.append({"model": "a", "nv_recall": None, "stopped": "error"})
    t = per_model(rows, n_boot=500).set_index("model")
    assert (t.loc["a", "documents"], t.loc["a", "measured"]) == (4, 3)
    assert t.loc["a", "nv_recall_mean"] == pytest.approx(0.2)
    assert (0.1 <= t.loc["a", "nv_recall_mean_ci_low"] < 0.2
            < t.loc["a", "nv_recall_mean_ci_high"] <= 0.3)
    assert t.loc["a", "stopped"] == "refused 3, error 1"


def test_the_pz_comparison_covers_the_sources_the_extraction_study_scored_too():
    from copyprobe.longform.study import compared, runs

    cfg = validate_config({
        "cache_dir": ".cache",
        "sources": {"books": {"kind": "local", "path": "."},
                    "more": {"kind": "local", "path": "."}},
        "datasets": {"books": ["books"], "more": ["more"]},
        "models": {
            "open": {"backend": "hf", "model_id": "org/open", "cutoff": "2024-01-01",
                     "studies": ["longform", "extraction"]},
            "api": {"backend": "openai", "model_id": "m", "cutoff": "2024-01-01",
                    "studies": ["longform"]}},
        "extraction": {"datasets": ["books"]}})
    assert set(runs(cfg)) == {(m, s) for m in ("open", "api") for s in ("books", "more")}
    assert compared(cfg) == [("open", "books")]
