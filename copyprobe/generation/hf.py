"""The transformers backend: a Hub model, a local model directory or a GGUF file, batched.

Reference: docs/backends.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import io
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from copyprobe.generation.base import BackendError, BatchedBackend, Completion, Decoding
from copyprobe.generation.logprob_scoring import (
    ScoreRequest,
    ScoringBackend,
    TokenScores,
    first_target_token,
    logit_scores,
    logit_scores_and_moments,
)
from copyprobe.models import ModelFile, sha256_file
from copyprobe.prompt import Prompt, image_bytes

log = logging.getLogger(__name__)

DTYPES = ("float32", "bfloat16", "float16", "auto")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _device_class(device_map: Any) -> str:
    """``"cpu"`` or ``"cuda"`` for a ``device_map`` setting, decided without loading the model.
    ``"auto"`` means CUDA when this process sees a GPU (so compute identities on the node that
    generates)."""
    if device_map is None:
        return "cpu"
    if isinstance(device_map, Mapping):
        values = {str(v) for v in device_map.values()}
        return "cuda" if any(v not in ("cpu", "disk") for v in values) else "cpu"
    dm = str(device_map)
    if dm == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if dm == "cpu":
        return "cpu"
    if dm.startswith("cuda") or dm.isdigit():
        return "cuda"
    return dm.split(":")[0]  # "mps", "xpu", ...


@lru_cache(maxsize=16)
def _dir_digest_cached(root: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for rel, size, _mtime in stamp:
        h.update(f"{rel}\0{size}\0{sha256_file(Path(root) / rel)}\n".encode())
    return h.hexdigest()


def directory_digest(path: Path) -> str:
    """sha256 over the (relative path, size, sha256) of every file of a local model directory
    (hidden entries skipped); memoised per process on the files' sizes and mtimes."""
    files = sorted(p for p in path.rglob("*")
                   if p.is_file() and not any(part.startswith(".")
                                              for part in p.relative_to(path).parts))
    stamp = tuple((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in files)
    return _dir_digest_cached(str(path.resolve()), stamp)


def _spec_model(spec: Mapping[str, Any], model_file: ModelFile | None) -> tuple[str, str, str]:
    """(model_id, revision, weights_sha256) for a config slice."""
    if model_file is not None:
        return (str(spec.get("model_id", model_file.path.name)), "", model_file.sha256)
    if "model_id" not in spec:
        raise BackendError("hf needs 'model_id' (Hub id or local directory) or 'model_file' "
                           "(a GGUF file)", permanent=True, error_class="ConfigError")
    model_id = str(spec["model_id"])
    local = Path(model_id).expanduser()
    if local.is_dir():
        return (model_id, "", directory_digest(local))
    return (model_id, str(spec.get("revision", "main")), "")


def _check_spec(spec: Mapping[str, Any], model_file: ModelFile | None) -> None:
    dtype = spec.get("dtype", "float32")
    if dtype not in DTYPES:
        raise BackendError(f"hf: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}",
                           permanent=True, error_class="ConfigError")
    if model_file is not None and spec.get("vision"):
        raise BackendError("hf: vision models cannot be loaded from a GGUF model_file",
                           permanent=True, error_class="ConfigError")
    if int(spec.get("batch_size", 8)) < 1:
        raise BackendError("hf: batch_size must be at least 1", permanent=True,
                           error_class="ConfigError")


@dataclass
class _Item:
    """One prompt of a batch, encoded."""

    index: int
    sample_index: int
    n_prompt: int
    input_ids: list[int] = field(default_factory=list)  # text path
    text: str = ""  # vision path: the templated prompt
    images: list[Any] = field(default_factory=list)  # vision path: PIL images
    add_special_tokens: bool = True


def _text_content(content: Any, *, allow_images: bool) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            parts.append(part["text"])
        elif kind == "image_url" and not allow_images:
            raise BackendError("this hf model is text-only: the prompt has an image (set "
                               "'vision: true' for a vision-language model, or use the "
                               "ocr_cascade backend)", permanent=True,
                               error_class="UnsupportedInputError")
        else:
            raise BackendError(f"unsupported content part type {kind!r}", permanent=True,
                               error_class="UnsupportedInputError")
    return "\n".join(parts)


def _load_dir(model_file: ModelFile | None,
              model_id: str) -> tuple[str, str | None]:
    """(the directory or Hub id to load from, the GGUF file name or None)."""
    if model_file is not None:
        return str(model_file.path.parent), model_file.path.name
    local = Path(model_id).expanduser()
    return (str(local) if local.is_dir() else model_id), None


class HFTokenizer:
    """The :class:`~copyprobe.generation.logprob_scoring.Tokenizer` of a transformers tokenizer:
    plain text, no special tokens added."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        plain = tok("a", add_special_tokens=False)["input_ids"]
        full = tok("a")["input_ids"]
        self.add_bos = (tok.bos_token_id is not None and len(full) > len(plain)
                        and full[0] == tok.bos_token_id)

    def tokenize(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def detokenize(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False,
                                   clean_up_tokenization_spaces=False))


class HFBackend(BatchedBackend, ScoringBackend):
    name = "hf"
    score_paths = ("one_pass", "stepwise")

    def __init__(self, *, model_id: str, revision: str, weights_sha256: str,
                 load_dir: str, gguf_file: str | None, dtype: str = "float32",
                 device_map: Any = None, batch_size: int = 8, trust_remote_code: bool = False,
                 vision: bool = False) -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError("transformers/torch are not installed; pip install "
                               "copyprobe[hf]", permanent=True) from exc
        self.torch = torch
        self.model_id = model_id
        self.revision = revision
        self.weights_sha256 = weights_sha256
        self.dtype = dtype
        self.vision = vision
        self.max_batch_size = int(batch_size)
        self.device_class = _device_class(device_map)
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        load_kw: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if gguf_file:
            load_kw["gguf_file"] = gguf_file
        elif revision:
            load_kw["revision"] = revision
        model_kw: dict[str, Any] = {**load_kw, "dtype": torch_dtype}
        if device_map is not None:
            model_kw["device_map"] = device_map
        self.processor = None
        if vision:
            auto_model = getattr(transformers, "AutoModelForImageTextToText", None) or getattr(
                transformers, "AutoModelForVision2Seq", None)
            if auto_model is None:  # pragma: no cover - very old transformers
                raise BackendError("this transformers has no AutoModelForImageTextToText",
                                   permanent=True)
            self.processor = transformers.AutoProcessor.from_pretrained(load_dir, **load_kw)
            self.tokenizer = getattr(self.processor, "tokenizer", None)
            if self.tokenizer is None:
                raise BackendError(f"{model_id}: the processor has no tokenizer", permanent=True)
            self.model = auto_model.from_pretrained(load_dir, **model_kw)
        else:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(load_dir, **load_kw)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(load_dir, **model_kw)
        self.model.eval()
        if device_map is None:
            self.model.to("cpu")
        tok = self.tokenizer
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        # padded positions are masked out, so any id serves when there is neither pad nor eos
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tok.eos_token_id is not None:
            eos_ids.add(tok.eos_token_id)
        self.eos_ids = sorted(eos_ids)
        self.max_context = self._max_context()
        self.max_score_batch = self.max_batch_size
        self._scoring_tokenizer: HFTokenizer | None = None

    # -- config --------------------------------------------------------------------------------
    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        _check_spec(spec, model_file)
        model_id, revision, weights = _spec_model(spec, model_file)
        if revision and not _COMMIT_RE.match(revision):
            log.warning("hf model %s: revision %r is not a commit hash; the weights it names "
                        "can change under the same cache key", model_id, revision)
        return {
            "model_id": model_id,
            "revision": revision,
            "weights_sha256": weights,
            "dtype": spec.get("dtype", "float32"),
            "vision": bool(spec.get("vision", False)),
            "trust_remote_code": bool(spec.get("trust_remote_code", False)),
            "transformers": _version("transformers"),
            "torch": _version("torch"),
            "backend_device": _device_class(spec.get("device_map")),
        }

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> HFBackend:
        _check_spec(spec, model_file)
        model_id, revision, weights = _spec_model(spec, model_file)
        if spec.get("n_threads"):
            import torch

            # CPU threads of this process's torch kernels: the cores the job reserved
            torch.set_num_threads(int(spec["n_threads"]))
        load_dir, gguf_file = _load_dir(model_file, model_id)
        return cls(model_id=model_id, revision=revision, weights_sha256=weights,
                   load_dir=load_dir, gguf_file=gguf_file,
                   dtype=spec.get("dtype", "float32"), device_map=spec.get("device_map"),
                   batch_size=int(spec.get("batch_size", 8)),
                   trust_remote_code=bool(spec.get("trust_remote_code", False)),
                   vision=bool(spec.get("vision", False)))

    @classmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> HFTokenizer:
        _check_spec(spec, model_file)
        model_id, revision, _weights = _spec_model(spec, model_file)
        load_dir, gguf_file = _load_dir(model_file, model_id)
        import transformers

        kw: dict[str, Any] = {"trust_remote_code": bool(spec.get("trust_remote_code", False))}
        if gguf_file:
            kw["gguf_file"] = gguf_file
        elif revision:
            kw["revision"] = revision
        return HFTokenizer(transformers.AutoTokenizer.from_pretrained(load_dir, **kw))

    def _max_context(self) -> int | None:
        cfg = self.model.config
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        for c in (text_cfg, cfg):
            for key in ("max_position_embeddings", "n_positions", "max_sequence_length",
                        "seq_length"):
                value = getattr(c, key, None)
                if isinstance(value, int) and value > 0:
                    return value
        value = getattr(self.tokenizer, "model_max_length", None)
        return value if isinstance(value, int) and 0 < value < 10**7 else None

    # -- encoding ------------------------------------------------------------------------------
    def _encode(self, prompt: Prompt, index: int, sample_index: int) -> _Item:
        tok = self.tokenizer
        if prompt.format == "completion" and self.vision:
            item = _Item(index, sample_index, 0, text=prompt.text, add_special_tokens=True)
            item.n_prompt = int(self._vision_inputs([item])["input_ids"].shape[1])
            if item.n_prompt == 0:
                raise BackendError("empty prompt", permanent=True, error_class="BadRequestError")
            return item
        if prompt.format == "completion":
            ids = tok(prompt.text)["input_ids"]
            if not ids:
                if tok.bos_token_id is None:
                    raise BackendError("empty prompt and the tokenizer has no BOS token",
                                       permanent=True, error_class="BadRequestError")
                ids = [tok.bos_token_id]
            return _Item(index, sample_index, len(ids), input_ids=list(ids))
        if self.vision:
            return self._encode_vision_chat(prompt, index, sample_index)
        if not getattr(tok, "chat_template", None):
            raise BackendError(f"{self.model_id} has no chat template: use completion prompts",
                               permanent=True, error_class="BadRequestError")
        messages = [{"role": m["role"], "content": _text_content(m.get("content"),
                                                                   allow_images=False)}
                    for m in prompt.messages]
        text = self._apply_template(tok, messages)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        return _Item(index, sample_index, len(ids), input_ids=list(ids))

    @staticmethod
    def _apply_template(templater: Any, messages: list[dict[str, Any]]) -> str:
        try:
            return templater.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=True)
        except Exception as exc:  # jinja2 TemplateError ("System role not supported", ...)
            raise BackendError(f"chat template failed: {exc}", permanent=True,
                               error_class="TemplateError") from exc

    def _encode_vision_chat(self, prompt: Prompt, index: int, sample_index: int) -> _Item:
        from PIL import Image

        messages: list[dict[str, Any]] = []
        images: list[Any] = []
        for m in prompt.messages:
            content = m.get("content")
            parts: list[dict[str, Any]] = []
            for part in ([{"type": "text", "text": content}] if isinstance(content, str)
                         else content or []):
                if part.get("type") == "text":
                    parts.append({"type": "text", "text": part["text"]})
                elif part.get("type") == "image_url":
                    try:
                        img = Image.open(io.BytesIO(image_bytes(part))).convert("RGB")
                    except (OSError, ValueError) as exc:
                        raise BackendError(f"cannot read image: {exc}", permanent=True,
                                           error_class="BadRequestError") from exc
                    images.append(img)
                    parts.append({"type": "image"})
                else:
                    raise BackendError(f"unsupported content part type {part.get('type')!r}",
                                       permanent=True, error_class="UnsupportedInputError")
            messages.append({"role": m["role"], "content": parts})
        text = self._apply_template(self.processor, messages)
        bos = self.tokenizer.bos_token
        add_special = not (bos is not None and text.startswith(bos))
        item = _Item(index, sample_index, 0, text=text, images=images,
                     add_special_tokens=add_special)
        item.n_prompt = int(self._vision_inputs([item])["input_ids"].shape[1])
        return item

    def _vision_inputs(self, items: Sequence[_Item]) -> Any:
        kwargs: dict[str, Any] = {"text": [it.text for it in items], "padding": True,
                                  "padding_side": "left", "return_tensors": "pt",
                                  "add_special_tokens": items[0].add_special_tokens}
        if any(it.images for it in items):
            kwargs["images"] = [it.images for it in items]
        return self.processor(**kwargs)

    def _text_inputs(self, items: Sequence[_Item]) -> dict[str, Any]:
        torch = self.torch
        width = max(it.n_prompt for it in items)
        ids = [[self.pad_id] * (width - it.n_prompt) + it.input_ids for it in items]
        mask = [[0] * (width - it.n_prompt) + [1] * it.n_prompt for it in items]
        return {"input_ids": torch.tensor(ids, dtype=torch.long),
                "attention_mask": torch.tensor(mask, dtype=torch.long)}

    # -- generation ----------------------------------------------------------------------------
    def generate_batch(self, prompts: Sequence[Prompt], decoding: Decoding,
                       sample_indices: Sequence[int]) -> list[Completion | BackendError]:
        if len(prompts) != len(sample_indices):
            raise ValueError("prompts and sample_indices differ in length")
        results: list[Completion | BackendError | None] = [None] * len(prompts)
        full: list[_Item] = []  # prompt + max_tokens fit: batched
        clipped: list[tuple[_Item, int]] = []  # near the context limit: alone, fewer tokens
        for i, (prompt, sidx) in enumerate(zip(prompts, sample_indices, strict=True)):
            try:
                item = self._encode(prompt, i, sidx)
            except BackendError as exc:
                results[i] = exc
                continue
            limit = self.max_context
            if limit is not None and item.n_prompt >= limit:
                results[i] = BackendError(
                    f"prompt of {item.n_prompt} tokens does not fit the model's context of "
                    f"{limit} tokens", permanent=True, error_class="ContextLengthError")
            elif limit is not None and item.n_prompt + decoding.max_tokens > limit:
                clipped.append((item, limit - item.n_prompt))  # as llama.cpp: fewer tokens
            else:
                full.append(item)
        groups: list[tuple[list[_Item], int]] = []
        if decoding.greedy:
            groups += [(full[i:i + self.max_batch_size], decoding.max_tokens)
                       for i in range(0, len(full), self.max_batch_size)]
        else:
            by_sample: dict[int, list[_Item]] = {}
            for it in full:
                by_sample.setdefault(it.sample_index, []).append(it)
            for _sidx, members in sorted(by_sample.items()):
                groups += [(members[i:i + self.max_batch_size], decoding.max_tokens)
                           for i in range(0, len(members), self.max_batch_size)]
        groups += [([it], budget) for it, budget in clipped]
        for members, budget in groups:
            if self.vision:  # the processor takes items with and without images (and chat
                # and completion prompts, which differ in special tokens) in separate calls
                by_kind: dict[tuple[bool, bool], list[_Item]] = {}
                for it in members:
                    by_kind.setdefault((bool(it.images), it.add_special_tokens), []).append(it)
                parts = list(by_kind.values())
            else:
                parts = [members]
            for part in parts:
                for item, res in zip(part, self._run(part, decoding, budget), strict=True):
                    results[item.index] = res
        return [r if r is not None else BackendError("no result", permanent=True)
                for r in results]

    def _run(self, items: list[_Item], decoding: Decoding,
             max_new: int) -> list[Completion | BackendError]:
        """Generate for one batch; on CUDA out-of-memory, split it in halves."""
        torch = self.torch
        try:
            return self._generate(items, decoding, max_new)
        except torch.cuda.OutOfMemoryError as exc:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if len(items) == 1:
                return [BackendError(f"out of GPU memory: {exc}", permanent=True,
                                     error_class="OutOfMemoryError")]
            half = len(items) // 2
            log.warning("hf: out of memory on a batch of %d; splitting", len(items))
            return (self._run(items[:half], decoding, max_new)
                    + self._run(items[half:], decoding, max_new))

    def _generate(self, items: list[_Item], decoding: Decoding,
                  max_new: int) -> list[Completion | BackendError]:
        torch = self.torch
        inputs = dict(self._vision_inputs(items) if self.vision else self._text_inputs(items))
        device = self.model.device
        for key, value in inputs.items():
            if isinstance(value, torch.Tensor):
                value = value.to(device)
                if value.is_floating_point():
                    value = value.to(self.model.dtype)
                inputs[key] = value
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "repetition_penalty": decoding.repeat_penalty,
            "pad_token_id": self.pad_id,
            "eos_token_id": self.eos_ids or None,
        }
        if decoding.greedy:
            kwargs["do_sample"] = False
        else:
            kwargs.update(do_sample=True, temperature=decoding.temperature,
                          top_p=decoding.top_p, top_k=decoding.top_k, min_p=0.0, typical_p=1.0)
            torch.manual_seed(decoding.seed + items[0].sample_index)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **kwargs)
        width = inputs["input_ids"].shape[1]
        new = out[:, width:].tolist()
        eos = set(self.eos_ids)
        results: list[Completion | BackendError] = []
        for item, row in zip(items, new, strict=True):
            stop = next((k for k, t in enumerate(row) if t in eos), None)
            tokens = row if stop is None else row[:stop]
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            results.append(Completion(text=text, prompt_tokens=item.n_prompt,
                                      completion_tokens=len(tokens),
                                      finish_reason="length" if stop is None else "stop"))
        return results

    # -- scoring -------------------------------------------------------------------------------
    def _tokens(self) -> HFTokenizer:
        if self._scoring_tokenizer is None:
            self._scoring_tokenizer = HFTokenizer(self.tokenizer)
        return self._scoring_tokenizer

    def tokenize(self, text: str) -> list[int]:
        return self._tokens().tokenize(text)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._tokens().detokenize(ids)

    def _sequence(self, req: ScoreRequest) -> tuple[list[int], int]:
        """The scored sequence and how many of its tokens precede the target."""
        tok = self.tokenizer
        bos = [tok.bos_token_id] if self._tokens().add_bos else []
        if req.token_level:
            context = bos + list(req.context_ids or ())
            return context + list(req.target_ids or ()), len(context)
        assert req.prompt is not None and req.target is not None
        if self.vision:
            raise BackendError("hf: scoring a vision model is not supported", permanent=True,
                               error_class="UnsupportedInputError")
        if req.prompt.format == "chat":
            if not getattr(tok, "chat_template", None):
                raise BackendError(f"{self.model_id} has no chat template: use completion "
                                   "prompts", permanent=True, error_class="BadRequestError")
            messages = [{"role": m["role"], "content": _text_content(m.get("content"),
                                                                       allow_images=False)}
                        for m in req.prompt.messages]
            before, bos = self._apply_template(tok, messages), []  # the template has its BOS
        else:
            before = req.prompt.text
        enc = tok(before + req.target, add_special_tokens=False, return_offsets_mapping=True)
        ends = [int(end) for _start, end in enc["offset_mapping"]]
        return bos + list(enc["input_ids"]), len(bos) + first_target_token(ends, len(before))

    def score_batch(self, requests: Sequence[ScoreRequest], *,
                    path: str | None = None) -> list[TokenScores | BackendError]:
        path = self.check_score_path(path)
        results: list[TokenScores | BackendError | None] = [None] * len(requests)
        todo: list[tuple[int, list[int], int, bool]] = []
        for i, req in enumerate(requests):
            try:
                ids, n_context = self._sequence(req)
            except BackendError as exc:
                results[i] = exc
                continue
            if n_context == 0 or n_context == len(ids):
                results[i] = BackendError(
                    f"nothing to score: {n_context} tokens before the target and "
                    f"{len(ids) - n_context} in it", permanent=True, error_class="BadRequestError")
            elif self.max_context is not None and len(ids) > self.max_context:
                results[i] = BackendError(
                    f"a sequence of {len(ids)} tokens does not fit the model's context of "
                    f"{self.max_context} tokens", permanent=True, error_class="ContextLengthError")
            else:
                todo.append((i, ids, n_context, req.moments))
        if path == "one_pass":
            for start in range(0, len(todo), self.max_batch_size):
                chunk = todo[start:start + self.max_batch_size]
                for (i, *_), res in zip(chunk, self._one_pass(chunk), strict=True):
                    results[i] = res
        else:
            for i, ids, n_context, moments in todo:
                results[i] = self._stepwise(ids, n_context, moments)
        return [r if r is not None else BackendError("no result", permanent=True)
                for r in results]

    def _token_scores(self, rows: Any, target: list[int], path: str,
                      n_context: int, moments: bool) -> TokenScores:
        array = rows.float().cpu().numpy()
        if moments:
            logprobs, argmax, mean, std = logit_scores_and_moments(array, target)
        else:
            (logprobs, argmax), mean, std = logit_scores(array, target), [], []
        texts = tuple(self.tokenizer.decode([t], skip_special_tokens=False,
                                            clean_up_tokenization_spaces=False) for t in target)
        return TokenScores(token_ids=tuple(target), logprobs=tuple(logprobs),
                           argmax=tuple(argmax), path=path, n_context_tokens=n_context,
                           token_texts=texts, dist_mean=tuple(mean), dist_std=tuple(std))

    def _one_pass(self,
                  chunk: list[tuple[int, list[int], int, bool]]
                  ) -> list[TokenScores | BackendError]:
        """One forward pass over a right-padded batch; on CUDA out-of-memory, halves."""
        torch = self.torch
        width = max(len(ids) for _, ids, _, _ in chunk)
        # the logits of the positions that predict a target token: from the earliest
        # (n_context - 1) of the batch to the end
        keep = width - min(n_context - 1 for _, _, n_context, _ in chunk)
        ids = [seq + [self.pad_id] * (width - len(seq)) for _, seq, _, _ in chunk]
        mask = [[1] * len(seq) + [0] * (width - len(seq)) for _, seq, _, _ in chunk]
        device = self.model.device
        kwargs: dict[str, Any] = {
            "input_ids": torch.tensor(ids, dtype=torch.long, device=device),
            "attention_mask": torch.tensor(mask, dtype=torch.long, device=device)}
        if "logits_to_keep" in inspect.signature(self.model.forward).parameters:
            kwargs["logits_to_keep"] = keep
        else:
            keep = width
        try:
            with torch.inference_mode():
                logits = self.model(**kwargs, use_cache=False).logits
        except torch.cuda.OutOfMemoryError as exc:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if len(chunk) == 1:
                return [BackendError(f"out of GPU memory: {exc}", permanent=True,
                                     error_class="OutOfMemoryError")]
            half = len(chunk) // 2
            return self._one_pass(chunk[:half]) + self._one_pass(chunk[half:])
        out: list[TokenScores | BackendError] = []
        offset = width - keep  # logits[:, j] predicts the token at offset + j + 1
        for row, (_, seq, n_context, moments) in enumerate(chunk):
            rows = logits[row, n_context - 1 - offset:len(seq) - 1 - offset]
            out.append(self._token_scores(rows, seq[n_context:], "one_pass", n_context,
                                          moments))
        return out

    def _stepwise(self, ids: list[int], n_context: int, moments: bool = False) -> TokenScores:
        """The prefix once, then one target token per forward with ``past_key_values``."""
        torch = self.torch
        device = self.model.device
        # transformers 5 names the KV cache ``cache`` (``past_key_values`` before)
        name = ("cache" if "cache" in inspect.signature(self.model.forward).parameters
                else "past_key_values")
        rows = []
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([ids[:n_context]], device=device),
                             use_cache=True)
            rows.append(out.logits[0, -1])
            for tok in ids[n_context:-1]:
                out = self.model(input_ids=torch.tensor([[tok]], device=device),
                                 use_cache=True, **{name: out[name]})
                rows.append(out.logits[0, -1])
        return self._token_scores(torch.stack(rows), ids[n_context:], "stepwise", n_context,
                                  moments)

    def close(self) -> None:
        for attr in ("model", "tokenizer", "processor"):
            if hasattr(self, attr):
                setattr(self, attr, None)
        torch = getattr(self, "torch", None)
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
