"""llama.cpp's OpenAI-compatible server (a real process on 127.0.0.1) with SmolLM2, driven
through the ``openai`` backend: its greedy outputs equal the in-process llama.cpp backend's
once the server's sampling defaults (repeat_penalty 1.1, top_k 40, min_p 0.05) are pinned."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(smollm2_file, tmp_path_factory):
    pytest.importorskip("llama_cpp.server")
    port = _free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_file.path),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(log.read()[-3000:])
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1).read()
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        raise RuntimeError("llama.cpp server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


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
