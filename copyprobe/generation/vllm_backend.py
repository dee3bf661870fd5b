"""The vLLM offline engine, for CUDA nodes (``pip install copyprobe[vllm]``).

Reference: docs/backends.md.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from typing import Any

from copyprobe.generation.base import BackendError, BatchedBackend, Completion, Decoding
from copyprobe.generation.openai_protocol import prepare_messages, scores_from_prompt_logprobs
from copyprobe.generation.logprob_scoring import ScoreRequest, ScoringBackend, TokenScores, score_sequence
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

NOT_INSTALLED = "vllm is not installed; pip install copyprobe[vllm] on a CUDA node"


def vllm_version() -> str:
    """vLLM's installed version, read without importing vLLM."""
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        raise BackendError(NOT_INSTALLED, permanent=True, error_class="BackendNotInstalled") \
            from None


def _import_vllm() -> Any:
    vllm_version()
    try:
        import vllm
    except ImportError as exc:
        raise BackendError(f"{NOT_INSTALLED} ({exc})", permanent=True,
                           error_class="BackendNotInstalled") from exc
    return vllm


def engine_kwargs(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``vllm.LLM`` gets from a model entry (besides model and tokenizer)."""
    kwargs: dict[str, Any] = {
        "dtype": spec.get("dtype", "auto"),
        "tensor_parallel_size": int(spec.get("tensor_parallel_size", 1)),
        "seed": int(spec.get("seed", 0)),
        "gpu_memory_utilization": float(spec.get("gpu_memory_utilization", 0.9)),
        "enforce_eager": bool(spec.get("enforce_eager", False)),
        "trust_remote_code": bool(spec.get("trust_remote_code", False)),
    }
    if spec.get("max_model_len") is not None:
        kwargs["max_model_len"] = int(spec["max_model_len"])
    if spec.get("max_images_per_prompt") is not None:
        kwargs["limit_mm_per_prompt"] = {"image": int(spec["max_images_per_prompt"])}
    if spec.get("hf_overrides"):
        kwargs["hf_overrides"] = dict(spec["hf_overrides"])
    return kwargs


def _model(spec: Mapping[str, Any], model_file: ModelFile | None) -> tuple[str, str, str]:
    """(model_id, revision, weights_sha256)."""
    if model_file is not None:
        return str(spec.get("model_id", model_file.path.name)), "", model_file.sha256
    if "model_id" not in spec:
        raise BackendError("vllm needs 'model_id' or 'model_file'", permanent=True,
                           error_class="ConfigError")
    return str(spec["model_id"]), str(spec.get("revision", "main")), ""


def to_vllm_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """Chat messages for ``LLM.chat``: OpenAI-style, image parts as ``data:`` URLs (vLLM gets
    no local-path access); the same conversion as the openai backend's."""
    return prepare_messages(prompt)


def _context_error(exc: Exception) -> BackendError:
    msg = str(exc)
    low = msg.lower()
    if "maximum model length" in low or "max_model_len" in low or "context" in low:
        return BackendError(msg, permanent=True, error_class="ContextLengthError")
    return BackendError(msg, permanent=True, error_class="BadRequestError")


class HFTokenizer:
    """A transformers tokenizer as the scoring tokenizer (:class:`~copyprobe.generation.
    scoring.TemplateTokenizer`): vLLM's own (``LLM.get_tokenizer()``) or one loaded with
    ``AutoTokenizer``. ``bos_ids``: the tokens ``add_special_tokens`` puts before a text."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        probe = "Hello"
        plain = tokenizer.encode(probe, add_special_tokens=False)
        full = tokenizer.encode(probe, add_special_tokens=True)
        cut = len(full) - len(plain)
        self.bos_ids: list[int] = full[:cut] if cut > 0 and full[cut:] == plain else []

    @property
    def add_bos(self) -> bool:
        return bool(self.bos_ids)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=special))

    def tokenize_chat(self, messages: list[dict[str, Any]], *,
                      add_generation_prompt: bool = False,
                      continue_final_message: bool = False) -> list[int]:
        out = self.tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message)
        if isinstance(out, Mapping):  # a BatchEncoding (newer transformers)
            out = out["input_ids"]
        return [int(t) for t in out]

    def detokenize(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids)))


def scores_from_request_output(out: Any, ids: list[int], start: int) -> TokenScores:
    """The scores of ``ids[start:]`` from a vLLM ``RequestOutput`` of ``ids`` scored with
    ``prompt_logprobs`` (``out.prompt_logprobs``: None first, then per position ``{token id:
    Logprob}``). An output whose prompt is not ``ids`` is a permanent error."""
    where = "vllm"
    got = list(getattr(out, "prompt_token_ids", None) or [])
    if got and got != ids:
        raise BackendError(f"{where}: the engine scored {len(got)} prompt tokens that differ "
                           f"from the {len(ids)} sent", permanent=True,
                           error_class="MalformedResponse")
    entries = getattr(out, "prompt_logprobs", None)
    if entries is None or len(entries) < len(ids):
        raise BackendError(f"{where}: no prompt log-probs in the engine's output (was "
                           "prompt_logprobs set?)", permanent=True,
                           error_class="MalformedResponse")
    return scores_from_prompt_logprobs(entries, ids, start, path="prompt_logprobs",
                                       where=where)


class VLLMBackend(BatchedBackend, ScoringBackend):
    name = "vllm"
    default_score_path = "prompt_logprobs"
    score_paths = ("prompt_logprobs",)
    max_score_batch = 256

    def __init__(self, llm: Any, sampling_params_cls: Any, *, batch_size: int = 256) -> None:
        self.llm = llm
        self.SamplingParams = sampling_params_cls
        self.max_batch_size = batch_size

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        model_id, revision, weights = _model(spec, model_file)
        identity = {
            "model_id": model_id,
            "revision": revision,
            "weights_sha256": weights,
            "dtype": spec.get("dtype", "auto"),
            "tensor_parallel_size": int(spec.get("tensor_parallel_size", 1)),
            "max_model_len": spec.get("max_model_len"),
            "enforce_eager": bool(spec.get("enforce_eager", False)),
            "trust_remote_code": bool(spec.get("trust_remote_code", False)),
            "vllm": vllm_version(),
            "torch": _dist_version("torch"),
            "backend_device": "cuda",
        }
        if model_file is not None:
            identity["tokenizer"] = spec.get("tokenizer", "")
        if spec.get("hf_overrides"):  # only when set: the identities of other models stay
            identity["hf_overrides"] = dict(spec["hf_overrides"])
        return identity

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> VLLMBackend:
        model_id, revision, _weights = _model(spec, model_file)
        vllm = _import_vllm()
        kwargs = engine_kwargs(spec)
        if model_file is not None:
            if not spec.get("tokenizer"):
                raise BackendError("vllm with a GGUF model_file needs 'tokenizer' (the original "
                                   "model's Hub id or directory)", permanent=True,
                                   error_class="ConfigError")
            llm = vllm.LLM(model=str(model_file.path), tokenizer=spec["tokenizer"], **kwargs)
        else:
            llm = vllm.LLM(model=model_id, revision=revision or None, **kwargs)
        return cls(llm, vllm.SamplingParams, batch_size=int(spec.get("batch_size", 256)))

    def _sampling(self, decoding: Decoding, sample_index: int) -> Any:
        return self.SamplingParams(
            temperature=decoding.temperature, top_p=decoding.top_p,
            top_k=decoding.top_k if decoding.top_k > 0 else -1, min_p=0.0,
            repetition_penalty=decoding.repeat_penalty, max_tokens=decoding.max_tokens,
            seed=decoding.seed + sample_index)

    def _call(self, prompts: Sequence[Prompt], params: Sequence[Any]) -> list[Any]:
        """One engine call for prompts of one format."""
        if prompts[0].format == "chat":
            return self.llm.chat([to_vllm_messages(p) for p in prompts],
                                 sampling_params=list(params), use_tqdm=False)
        return self.llm.generate([p.text for p in prompts], sampling_params=list(params),
                                 use_tqdm=False)

    @staticmethod
    def _completion(out: Any) -> Completion:
        gen = out.outputs[0]
        return Completion(text=gen.text, prompt_tokens=len(out.prompt_token_ids or []),
                          completion_tokens=len(gen.token_ids),
                          finish_reason=gen.finish_reason)

    def generate_batch(self, prompts: Sequence[Prompt], decoding: Decoding,
                       sample_indices: Sequence[int]) -> list[Completion | BackendError]:
        results: list[Completion | BackendError | None] = [None] * len(prompts)
        for fmt in ("chat", "completion"):
            idx = [i for i, p in enumerate(prompts) if p.format == fmt]
            if not idx:
                continue
            group = [prompts[i] for i in idx]
            params = [self._sampling(decoding, sample_indices[i]) for i in idx]
            try:
                outs = self._call(group, params)
                for i, out in zip(idx, outs, strict=True):
                    results[i] = self._completion(out)
            except (ValueError, TypeError, OSError):
                # vLLM rejects the whole call when one prompt is bad (too long, unreadable
                # image): retry one by one so the others succeed.
                for i, prompt, param in zip(idx, group, params, strict=True):
                    try:
                        results[i] = self._completion(self._call([prompt], [param])[0])
                    except (ValueError, TypeError, OSError) as exc:
                        results[i] = _context_error(exc)
        return [r if r is not None else BackendError("no result", permanent=True)
                for r in results]

    # -- scoring ---------------------------------------------------------------------------------
    @classmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> HFTokenizer:
        """The tokenizer vLLM would use, loaded with transformers (no vLLM, no weights): the
        ``tokenizer`` key (needed with a GGUF ``model_file``, as for the engine), else
        ``model_id`` at ``revision``."""
        name = spec.get("tokenizer")
        if not name and model_file is not None:
            raise BackendError("vllm with a GGUF model_file needs 'tokenizer' (the original "
                               "model's Hub id or directory)", permanent=True,
                               error_class="ConfigError")
        model_id, revision, _ = _model(spec, model_file)
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise BackendError(f"transformers is needed for the vllm tokenizer ({exc})",
                               permanent=True, error_class="BackendNotInstalled") from exc
        kwargs: dict[str, Any] = {"trust_remote_code": bool(spec.get("trust_remote_code"))}
        if not name and revision:
            kwargs["revision"] = revision
        try:
            tok = AutoTokenizer.from_pretrained(name or model_id, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError(f"the tokenizer of {name or model_id!r} could not be loaded: "
                               f"{exc}", permanent=True, error_class="ConfigError") from exc
        return HFTokenizer(tok)

    def _engine_tokenizer(self) -> HFTokenizer:
        tok = getattr(self, "_hf_tokenizer", None)
        if tok is None:
            tok = self._hf_tokenizer = HFTokenizer(self.llm.get_tokenizer())
        return tok

    def tokenize(self, text: str) -> list[int]:
        return self._engine_tokenizer().tokenize(text)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._engine_tokenizer().detokenize(ids)

    def _score_call(self, seqs: list[list[int]]) -> list[Any]:
        params = self.SamplingParams(prompt_logprobs=1, max_tokens=1, temperature=0.0)
        return self.llm.generate([{"prompt_token_ids": ids} for ids in seqs],
                                 sampling_params=params, use_tqdm=False)

    def score_batch(self, requests: Sequence[ScoreRequest], *,
                    path: str | None = None) -> list[TokenScores | BackendError]:
        path = path or self.default_score_path
        if path not in self.score_paths:
            raise BackendError(f"the vllm backend scores by path prompt_logprobs, not {path!r}",
                               permanent=True, error_class="ConfigError")
        results: list[TokenScores | BackendError | None] = [None] * len(requests)
        todo: list[tuple[int, list[int], int]] = []
        for i, request in enumerate(requests):
            try:
                ids, start = score_sequence(request, self._engine_tokenizer())
                todo.append((i, ids, start))
            except BackendError as exc:
                results[i] = exc
        if todo:
            try:
                outs = self._score_call([ids for _, ids, _ in todo])
            except (ValueError, TypeError, OSError):
                # one over-long prompt rejects the whole call: score one by one
                outs = []
                for _, ids, _ in todo:
                    try:
                        outs.append(self._score_call([ids])[0])
                    except (ValueError, TypeError, OSError) as exc:
                        outs.append(_context_error(exc))
            for (i, ids, start), out in zip(todo, outs, strict=True):
                if isinstance(out, BackendError):
                    results[i] = out
                    continue
                try:
                    results[i] = scores_from_request_output(out, ids, start)
                except BackendError as exc:
                    results[i] = exc
        return [r if r is not None else BackendError("no result", permanent=True)
                for r in results]

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        self.llm = None
        if llm is not None:
            del llm
            try:
                import gc

                import torch

                gc.collect()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except ImportError:  # pragma: no cover
                pass


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""
