"""The guard study's config: a guarded model names its base (``base: <model>``), validated,
and its ablation variants carry the same base; the guard declares its backend wrapper."""

from __future__ import annotations

import copy

import pytest

from copyprobe.config import ConfigError, validate_config
from copyprobe.guard.study import guard_pairs

BASE = {"backend": "openai", "studies": ["copyright"], "model_id": "m", "api_key_env": "K"}


def _config(**models) -> dict:
    return {"sources": {"docs": {"kind": "local", "path": "docs"}},
            "copyright": {"benchmarks": {"b": {"materials": ["docs"]}}},
            "models": {"m": copy.deepcopy(BASE), **models}}


def test_a_guarded_model_is_paired_with_the_base_it_names():
    cfg = validate_config(_config(g={**BASE, "base": "m", "guard": {"policy": "block"}}))
    assert guard_pairs(cfg) == {"g": "m"}


def test_a_guarded_copyright_model_without_a_base_is_an_error_naming_both():
    with pytest.raises(ConfigError, match=r"'models.g.base': required: guarded model 'g' names "
                                          r"its base.*\(the same entry without a guard: 'm'\)"):
        validate_config(_config(g={**BASE, "guard": {}}))


@pytest.mark.parametrize(("entry", "message"), [
    ({**BASE, "base": "nope", "guard": {}},
     r"guarded model 'g' names base 'nope', which is not a model"),
    ({**BASE, "base": "h", "guard": {}},
     r"base 'h' of guarded model 'g' has a guard block itself"),
    ({**BASE, "model_id": "other", "base": "m", "guard": {}},
     r"guarded model 'g' and its base 'm' must differ only by the guard; they have a "
     r"different backend or model: model_id"),
    ({**BASE, "decoding": {"temperature": 0.7}, "base": "m", "guard": {}},
     r"must differ only by the guard; they have other settings: decoding"),
    ({**BASE, "base": "m"}, r"'models.g.base': only a guarded model"),
])
def test_a_base_that_cannot_be_the_guarded_models_is_an_error(entry, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_config(g=entry, h={**BASE, "base": "m", "guard": {}}))


def test_the_ablation_variants_get_the_same_base():
    cfg = validate_config(_config(g={**BASE, "base": "m",
                                     "guard": {"risk": False, "ablation": True}}))
    assert guard_pairs(cfg) == {"g": "m", "g-no-notice": "m", "g-no-status": "m"}


def test_an_ablation_of_a_guard_without_input_checks_is_an_error():
    with pytest.raises(ConfigError, match=r"'models.g.guard.ablation': the ablation switches "
                                          r"the input checks .* 'input: false'"):
        validate_config(_config(g={**BASE, "base": "m", "guard": {
            "input": False, "output": {"index": "ix"}, "ablation": True}}))


def test_the_base_key_stays_out_of_the_models_slice():
    from copyprobe.config import model_slice

    cfg = validate_config(_config(g={**BASE, "base": "m", "guard": {}}))
    spec = model_slice(cfg, "g")
    assert "base" not in spec and spec["guard"]["policy"] == "remind"


def test_the_guard_study_declares_its_backend_wrapper():
    from copyprobe.generation.base import BACKEND_WRAPPERS, backend_wrappers

    assert backend_wrappers({"backend": "openai", "guard": {}}) == ["guard"]
    assert BACKEND_WRAPPERS.get("guard").__module__ == "copyprobe.guard.backend"
