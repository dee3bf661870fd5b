"""API keys are checked before any job: the model and the variable are named, never a value."""

from __future__ import annotations

import pytest

from copyprobe.generation.keys import MissingAPIKey, check_api_keys, missing_api_keys

MODELS = {
    "local": {"backend": "llamacpp"},
    "gpt": {"backend": "openai", "api_key_env": "MY_GPT_KEY"},
    "default-var": {"backend": "openai"},
    "server": {"backend": "openai", "api_key_env": "NOT_SET_KEY", "api_key_optional": True},
    "batch": {"backend": "openai_batch", "api_key_env": "BATCH_KEY",
              "api_key_optional": True},  # the Batch API always needs a key
}


def test_missing_keys_name_model_and_variable():
    problems = missing_api_keys(MODELS, environ={"MY_GPT_KEY": "sk-secret-value-1234567"})
    assert problems == [
        "model 'default-var' (backend openai): environment variable OPENAI_API_KEY is not set; "
        "it must hold the API key; for a server that needs no key set "
        "models.default-var.api_key_optional: true",
        "model 'batch' (backend openai_batch): environment variable BATCH_KEY is not set; it "
        "must hold the API key",
    ]
    env = {"MY_GPT_KEY": "x", "OPENAI_API_KEY": "y", "BATCH_KEY": "z"}
    assert missing_api_keys(MODELS, environ=env) == []
    # an empty variable is as good as none
    assert len(missing_api_keys({"gpt": MODELS["gpt"]}, environ={"MY_GPT_KEY": ""})) == 1


def test_check_raises_naming_every_model():
    env = {"MY_GPT_KEY": "sk-secret-value-1234567"}
    with pytest.raises(MissingAPIKey) as ei:
        check_api_keys(MODELS, environ=env)
    text = str(ei.value)
    assert text.startswith("API keys missing (no job was started):\n  model 'default-var'")
    assert "model 'batch'" in text and "sk-secret" not in text
    check_api_keys({"local": MODELS["local"], "gpt": MODELS["gpt"]}, environ=env)  # no error
