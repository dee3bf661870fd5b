"""The vLLM backend: registry and install errors here; real generation only on a CUDA node."""

from __future__ import annotations

import importlib.util
import os

import pytest

from copyprobe.generation.base import BACKENDS, BackendError, Completion, Decoding
from copyprobe.generation.vllm_backend import NOT_INSTALLED, VLLMBackend, to_vllm_messages
from copyprobe.prompt import Prompt

HAVE_VLLM = importlib.util.find_spec("vllm") is not None


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_registered():
    assert "vllm" in BACKENDS.names() and BACKENDS.get("vllm") is VLLMBackend


@pytest.mark.skipif(HAVE_VLLM, reason="vllm is installed here")
def test_without_vllm_the_error_says_how_to_install():
    spec = {"backend": "vllm", "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct"}
    for call in (VLLMBackend.from_config, VLLMBackend.identity_from_config):
        with pytest.raises(BackendError) as info:
            call(spec, None)
        assert info.value.permanent and str(info.value) == NOT_INSTALLED
        assert "pip install copyprobe[vllm]" in str(info.value)


def test_file_images_are_sent_as_data_urls(tmp_path):
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG fake")
    prompt = Prompt("chat", messages=({"role": "user", "content": [
        {"type": "text", "text": "read"},
        {"type": "image_url", "image_url": {"url": png.as_uri()}}]},
        {"role": "assistant", "content": "ok"}))
    msgs = to_vllm_messages(prompt)
    assert msgs[0]["content"][0] == {"type": "text", "text": "read"}
    assert msgs[0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert msgs[1] == {"role": "assistant", "content": "ok"}


def test_engine_arguments_come_from_the_entry_and_overrides_join_the_identity():
    from copyprobe.generation.vllm_backend import engine_kwargs

    spec = {"backend": "vllm", "model_id": "THUDM/glm-4v-9b", "max_images_per_prompt": 1,
            "hf_overrides": {"architectures": ["GLM4VForCausalLM"]}, "max_model_len": 8192}
    kwargs = engine_kwargs(spec)
    assert kwargs["hf_overrides"] == {"architectures": ["GLM4VForCausalLM"]}
    assert kwargs["limit_mm_per_prompt"] == {"image": 1} and kwargs["max_model_len"] == 8192
    assert "hf_overrides" not in engine_kwargs({"backend": "vllm", "model_id": "m"})
    if HAVE_VLLM:
        plain = {k: v for k, v in spec.items() if k != "hf_overrides"}
        assert VLLMBackend.identity_from_config(spec, None)["hf_overrides"] == \
            spec["hf_overrides"]
        assert "hf_overrides" not in VLLMBackend.identity_from_config(plain, None)


GPU_REASON = ("needs a CUDA GPU and vllm installed (pip install copyprobe[vllm]); "
              f"cuda={_cuda()}, vllm={HAVE_VLLM}")


@pytest.mark.slow
@pytest.mark.skipif(not (_cuda() and HAVE_VLLM), reason=GPU_REASON)
def test_generation_on_gpu():  # pragma: no cover - CUDA nodes only
    model = os.environ.get("COPYPROBE_VLLM_MODEL", "HuggingFaceTB/SmolLM2-135M-Instruct")
    spec = {"backend": "vllm", "model_id": model, "max_model_len": 2048,
            "gpu_memory_utilization": 0.3, "enforce_eager": True}
    ident = VLLMBackend.identity_from_config(spec, None)
    assert ident["backend_device"] == "cuda" and ident["vllm"]
    backend = VLLMBackend.from_config(spec, None)
    try:
        chat = Prompt("chat", messages=({"role": "user", "content": "What is the capital of "
                                                                    "France?"},))
        completion = Prompt("completion", text="Once upon a time,")
        too_long = Prompt("completion", text="word " * 5000)
        d = Decoding(max_tokens=16)
        out = backend.generate_batch([chat, completion, too_long], d, [0, 0, 0])
        assert isinstance(out[0], Completion) and out[0].text.strip()
        assert isinstance(out[1], Completion) and out[1].completion_tokens <= 16
        assert isinstance(out[2], BackendError) and out[2].error_class == "ContextLengthError"
        assert backend.generate(chat, d) == out[0]  # greedy, batch-independent
        s = Decoding(temperature=1.0, max_tokens=16, seed=3)
        a = backend.generate_batch([completion, completion], s, [0, 1])
        assert backend.generate(completion, s, 0) == a[0]  # per-request seeds
    finally:
        backend.close()
