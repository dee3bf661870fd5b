"""Variants and experiments (copyprobe.msr.experiments): overrides, thresholds, runs and the
checks that stop a bad config at start-up, naming the key."""

from __future__ import annotations

import copy

import pytest

from copyprobe.msr import experiments as cpx
from copyprobe.config import ConfigError, validate_config

BASE = {
    "msr": {"n": 6, "num_words": 1000},
    "sources": {"a": {"kind": "local", "path": "a"}, "b": {"kind": "local", "path": "b"},
                "c": {"kind": "local", "path": "c"}},
    "datasets": {"ab": ["a", "b"], "c": ["c"]},
    "models": {
        "api": {"backend": "openai", "model_id": "m", "cutoff": "2023-12-31",
                "decoding": {"temperature": 0.1}},
        "other": {"backend": "openai", "model_id": "o", "cutoff": "2023-12-31",
                  "sources": ["a", "b"]},
    },
    "variants": {
        "shots2": {"models": ["api"], "datasets": ["ab"], "msr": {"n": 2}},
        "warm": {"decoding": {"temperature": 0.7}, "matching": {"k_min": 4, "k_max": 15}},
        "cold": {"matching": {"k_min": 4, "k_max": 15}},
        "words75": {"msr": {"num_words": 75}, "matching": {"k_max": "auto"}},
        "words24": {"msr": {"num_words": 24, "n": 4}, "matching": {"k_max": "auto"}},
    },
    "experiments": {
        "shots": {"kind": "sweep", "dataset": "ab", "parameter": "shots",
                  "settings": [{"label": 2, "variant": "shots2"},
                               {"label": 6, "variant": "main"}]},
        "temperature": {"kind": "comparison", "dataset": "ab",
                        "a": {"label": "0.1", "variant": "cold"},
                        "b": {"label": "0.7", "variant": "warm"}},
    },
}


def cfg(**changes):
    c = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = c
        *parents, last = path.split("__")
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return validate_config(c)


def test_a_variant_overrides_decoding_and_msr_of_the_models_it_names():
    c = cfg()
    warm = cpx.run_slice(c, "api", "warm")
    assert warm["decoding"]["temperature"] == 0.7 and warm["decoding"]["max_tokens"] == 384
    assert warm["variant"] == "warm" and warm["msr"]["n"] == 6
    main = cpx.run_slice(c, "api", "main")
    assert main["decoding"]["temperature"] == 0.1 and main["variant"] == "main"
    assert cpx.run_slice(c, "api", "shots2")["msr"] == {**main["msr"], "n": 2}


def test_k_max_auto_is_the_words_per_segment_capped_at_k_max():
    c = cfg()
    # 75 // 6 = 12 = k_max; 24 // 4 = 6 < 12; 1000 // 6 = 166 is capped at 12
    assert cpx.run_matching(c, "api", "words75") == {"k_min": 5, "k_max": 12}
    assert cpx.run_matching(c, "api", "words24") == {"k_min": 5, "k_max": 6}
    assert cpx.run_matching(c, "api", "warm") == {"k_min": 4, "k_max": 15}
    assert cpx.run_matching(c, "api", "main") == {"k_min": 5, "k_max": 12}


def test_runs_follow_the_variants_models_and_datasets():
    c = cfg()
    runs = cpx.runs(c)
    assert ("api", "shots2", "ab") in runs
    assert ("api", "shots2", "c") not in runs  # shots2 is restricted to dataset ab
    assert not any(m == "other" and v == "shots2" for m, v, _ in runs)  # and to model api
    assert ("other", "warm", "ab") in runs and ("other", "warm", "c") not in runs
    assert cpx.run_sources(c, "api", "shots2") == ["a", "b"]
    assert cpx.variant_names(c)[0] == "main"


def test_experiment_models_default_to_those_running_every_variant():
    c = cfg()
    assert cpx.experiment_models(c, "shots") == ["api"]
    assert cpx.experiment_models(c, "temperature") == ["api", "other"]
    assert cpx.experiment_labels(c["experiments"]["shots"]) == ["2", "6"]
    assert cpx.experiment_variants(c["experiments"]["temperature"]) == ["cold", "warm"]


def test_settings_record_variant_decoding_msr_and_thresholds():
    s = cpx.run_settings(cfg(), "api", "words24")
    assert s["variant"] == "words24" and s["backend"] == "openai" and s["model_id"] == "m"
    assert s["msr"]["n"] == 4 and s["msr"]["num_words"] == 24
    assert s["matching"] == {"k_min": 5, "k_max": 6}
    assert s["decoding"]["temperature"] == 0.1


@pytest.mark.parametrize("changes, message", [
    ({"variants__main": {"msr": {"n": 4}}},
     "'variants.main': 'main' is the variant without overrides"),
    ({"variants__odd": {"msr": {"n": 3}}}, "'variants.odd.msr.n': must be even (got 3)"),
    ({"variants__x": {"models": ["nope"]}}, "'variants.x.models.0': unknown model 'nope'"),
    ({"variants__x": {"datasets": ["nope"]}}, "'variants.x.datasets.0': unknown dataset 'nope'"),
    ({"variants__short": {"msr": {"num_words": 20}, "matching": {"k_max": "auto"}}},
     "'variants.short.matching': k_min 5 exceeds k_max 3 for model 'api'"),
    ({"variants__x": {"matching": {"k_max": "automatic"}}}, "variants.x.matching.k_max"),
    ({"variants__x": {"decoding": {"temprature": 0.5}}},
     "unknown config key 'variants.x.decoding.temprature'"),
    ({"experiments__shots__settings": [{"label": 2, "variant": "shots3"},
                                       {"label": 6, "variant": "main"}]},
     "'experiments.shots': unknown variant 'shots3'"),
    ({"experiments__shots__settings": [{"label": 2, "variant": "shots2"},
                                       {"label": 2, "variant": "main"}]},
     "'experiments.shots': labels must differ"),
    ({"experiments__shots__models": ["other"]},
     "'experiments.shots.models.0': model 'other' does not run variant 'shots2'"),
    ({"experiments__shots__dataset": "zz"}, "'experiments.shots.dataset': unknown dataset 'zz'"),
    ({"experiments__temperature__a": {"label": "0.1", "variant": "main"}},
     "variants 'main' and 'warm' of model 'api' use different thresholds"),
    ({"experiments__temperature__split": "both"}, "experiments.temperature"),
    ({"experiments__shots__split": "pre"}, "experiments.shots"),
    ({"variants__a/b": {"msr": {"n": 4}}}, "'variants.a/b': names may use letters"),
    ({"experiments__x y": {"kind": "sweep", "dataset": "ab", "parameter": "shots",
                           "settings": [{"label": 2, "variant": "shots2"},
                                        {"label": 6, "variant": "main"}]}},
     "'experiments.x y': names may use letters"),
])
def test_a_bad_variant_or_experiment_names_the_key(changes, message):
    with pytest.raises(ConfigError) as err:
        cfg(**changes)
    assert message in str(err.value)


def test_a_config_without_variants_runs_main_only():
    c = cfg(variants=None, experiments=None)
    assert c["variants"] == {} and c["experiments"] == {}
    assert cpx.runs(c) == [("api", "main", "ab"), ("api", "main", "c"), ("other", "main", "ab")]
