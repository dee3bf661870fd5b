"""The embedded CPU backend: llama.cpp through llama-cpp-python, on a local GGUF file.

Deterministic by construction: the model's state is reset before every request (llama.cpp's
prompt cache otherwise changes greedy output when the same request repeats on one instance),
sampling parameters are passed explicitly (``min_p`` is pinned to 0, where the library default
is 0.05), and the seed is set per request from the decoding seed and the sample index.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.generation.base import BACKENDS, Backend, BackendError, Completion, Decoding
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

log = logging.getLogger(__name__)


@BACKENDS.register("llamacpp")
class LlamaCppBackend(Backend):
    name = "llamacpp"

    def __init__(self, model_path: str | Path, *, weights_sha256: str, model_id: str,
                 n_ctx: int = 4096, n_threads: int | None = None) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError("llama-cpp-python is not installed", permanent=True) from exc
        self.model_id = model_id
        self.weights_sha256 = weights_sha256
        self.n_ctx = n_ctx
        # n_threads_batch (prompt processing) follows n_threads: left unset, llama-cpp-python
        # takes every core of the machine for it, whatever the job reserved
        self.llm = Llama(model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads,
                         n_threads_batch=n_threads, seed=0, verbose=False)
        log.info("llama.cpp: %s, n_ctx %d, n_threads %d, n_threads_batch %d",
                 Path(model_path).name, n_ctx, self.llm.n_threads, self.llm.n_threads_batch)

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> LlamaCppBackend:
        if model_file is None:
            raise BackendError("llamacpp needs a model_file", permanent=True)
        return cls(model_file.path, weights_sha256=model_file.sha256,
                   model_id=spec.get("model_id", model_file.path.name),
                   n_ctx=spec.get("n_ctx", 4096), n_threads=spec.get("n_threads"))

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        # The chat template is inside the GGUF file, so the weights hash covers it.
        if model_file is None:
            raise BackendError("llamacpp needs a model_file", permanent=True)
        return {
            "model_id": spec.get("model_id", model_file.path.name),
            "weights_sha256": model_file.sha256,
            "n_ctx": spec.get("n_ctx", 4096),
            "min_p": 0.0,
            "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        }

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        self.llm.reset()
        seed = decoding.seed + sample_index
        self.llm.set_seed(seed)
        kwargs: dict[str, Any] = {
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "top_k": decoding.top_k,
            "min_p": 0.0,
            "repeat_penalty": decoding.repeat_penalty,
            "max_tokens": decoding.max_tokens,
            "seed": seed,
        }
        try:
            if prompt.format == "chat":
                out = self.llm.create_chat_completion(messages=[dict(m) for m in prompt.messages],
                                                      **kwargs)
                choice = out["choices"][0]
                text = choice["message"]["content"] or ""
            else:
                out = self.llm.create_completion(prompt=prompt.text, **kwargs)
                choice = out["choices"][0]
                text = choice["text"]
        except ValueError as exc:  # e.g. "Requested tokens exceed context window"
            raise BackendError(str(exc), permanent=True, error_class="ContextLengthError") from exc
        usage = out.get("usage") or {}
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"),
                          finish_reason=choice.get("finish_reason"))

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
            self.llm = None
