"""llama.cpp's OpenAI-compatible server (a real process on 127.0.0.1) with SmolLM2, driven
through the ``openai`` backend: its greedy outputs equal the in-process llama.cpp backend's
once the server's sampling defaults (repeat_penalty 1.1, top_k 40, min_p 0.05) are pinned."""

from __future__ import annotations

import pytest

from copyprobe.generation.base import Decoding
from copyprobe.generation.openai_api import OpenAIBackend
from copyprobe.prompt import Prompt

pytestmark = pytest.mark.slow

PROMPTS = [
    Prompt("chat", messages=(
        {"role": "system", "content": "Continue the text."},
        {"role": "user", "content": "The lighthouse stands on a granite headland at the"},
        {"role": "assistant", "content": "mouth of the bay, where the tidal currents are"},
        {"role": "user", "content": "strongest in spring, and its lamp was first lit in"},
    )),
    Prompt("completion", text="Redistribution and use in source and binary forms, with or"),
]


@pytest.fixture(scope="module")
def server(smollm2_file, tmp_path_factory, start_llama_server):
    with start_llama_server(smollm2_file.path, tmp_path_factory.mktemp("llama-server")) as url:
        yield url


def test_server_greedy_equals_in_process(server, smollm2_backend):
    backend = OpenAIBackend.from_config(
        {"model_id": "smollm2", "base_url": server, "api_key_optional": True,
         "api_key_env": "COPYPROBE_UNSET_KEY_FOR_LOCAL_SERVER", "server_sampling_params": True,
         "request_timeout": 30},
        None)
    d = Decoding(max_tokens=40)
    try:
        for prompt in PROMPTS:
            remote = backend.generate(prompt, d)
            local = smollm2_backend.generate(prompt, d)
            assert remote.text == local.text, (prompt.format, remote.text, local.text)
            assert remote.completion_tokens == local.completion_tokens
    finally:
        backend.close()


def test_server_defaults_differ_without_pinning(server, smollm2_backend):
    """Documents why server_sampling_params exists: the server's repeat_penalty of 1.1
    changes greedy output on repetitive text."""
    backend = OpenAIBackend.from_config(
        {"model_id": "smollm2", "base_url": server, "api_key_optional": True,
         "api_key_env": "COPYPROBE_UNSET_KEY_FOR_LOCAL_SERVER"}, None)
    prompt = Prompt("completion", text="one two one two one two one two one two one two")
    d = Decoding(max_tokens=40)
    try:
        assert backend.generate(prompt, d).text != smollm2_backend.generate(prompt, d).text
    finally:
        backend.close()


def test_a_one_slot_server_at_default_settings_gets_no_retry_and_no_timeout(
        server, tmp_path, caplog):
    """The config sets neither max_concurrency nor request_timeout: requests go one at a time
    (the server reports no slot count) and none waits out a timeout in its queue."""
    import logging

    import pandas as pd

    from copyprobe.generation import (
        GenerationCache,
        RunSettings,
        backend_identity,
        build_backend,
        run_generation,
    )

    spec = {"name": "local", "backend": "openai", "model_id": "smollm2", "base_url": server,
            "api_key_optional": True, "api_key_env": "COPYPROBE_UNSET_KEY_FOR_LOCAL_SERVER",
            "decoding": {"max_tokens": 8}}
    prompts = pd.DataFrame([{
        "request_id": f"r{i}", "model": "local", "source": "s", "doc_id": f"d{i}",
        "split": "pre", "status": "ready", "reason": "", "prompt_format": "completion",
        "prompt": Prompt("completion", text=f"Item {i}: the lighthouse keeper").to_json(),
        "reference": "x", "document": "x", "n": 1, "num_words": 10} for i in range(3)])
    with caplog.at_level(logging.INFO, logger="copyprobe.generation.limits"):
        df, summary = run_generation(
            prompts, model="local", backend_name="openai",
            identity=backend_identity(spec, None),
            backend_factory=lambda: build_backend(spec, None), decoding=Decoding(max_tokens=8),
            cache=GenerationCache(tmp_path / "cache"), settings=RunSettings.from_config(spec))
    assert (summary.failed, summary.retries, summary.model_calls) == (0, 0, 3), summary.describe()
    assert "1 request(s) at a time" in caplog.text
    assert build_backend(spec, None).request_timeout == 120.0
