"""An OCR-then-text-model cascade for vision prompts, offline.

Reference: docs/backends.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from copyprobe.generation.base import BACKENDS, Backend, BackendError, Completion, Decoding
from copyprobe.models import ModelFile, materialise
from copyprobe.ocr import OCRError, OCRUnavailable, ocr_image, ocr_settings
from copyprobe.prompt import Prompt, image_bytes, image_parts

OCR_HEADER = "[Text read from the image by OCR]"


def _ocr_text(data: bytes) -> str:
    try:
        return ocr_image(data)
    except OCRUnavailable as exc:
        raise BackendError(str(exc), permanent=True) from exc
    except OCRError as exc:
        raise BackendError(str(exc), permanent=True, error_class="BadRequestError") from exc


def _resolved_model_file(spec: Mapping[str, Any]) -> ModelFile | None:
    inner = spec["text_backend"]
    given = spec.get("text_model_file_resolved")
    if isinstance(given, ModelFile):
        return given
    if isinstance(given, Mapping):
        return ModelFile(path=Path(given["path"]), sha256=given["sha256"],
                         size=int(given.get("size", 0)), origin=str(given.get("origin", "")))
    if "model_file" not in inner:
        return None
    return materialise(inner["model_file"], Path(spec.get("cache_dir", ".cache/copyprobe")),
                       key="text_backend.model_file")


def _inner(spec: Mapping[str, Any]) -> tuple[type[Backend], dict[str, Any], ModelFile | None]:
    inner = spec.get("text_backend")
    if not isinstance(inner, Mapping) or "backend" not in inner:
        raise BackendError("ocr_cascade needs 'text_backend': a model config slice with a "
                           "'backend'", permanent=True, error_class="ConfigError")
    if inner["backend"] == "ocr_cascade":
        raise BackendError("ocr_cascade cannot wrap itself", permanent=True,
                           error_class="ConfigError")
    cls = BACKENDS.get(inner["backend"])
    model_file = _resolved_model_file(spec)
    inner_spec = dict(inner)
    # the cores the job was granted (the workflow sets the cascade's n_threads) go to the
    # inner engine unless its own slice sets them
    if spec.get("n_threads") and "n_threads" not in inner_spec:
        inner_spec["n_threads"] = spec["n_threads"]
    if model_file is not None:
        inner_spec.setdefault("model_id", model_file.path.name)
    return cls, inner_spec, model_file


def to_text_prompt(prompt: Prompt) -> Prompt:
    """``prompt`` with every image part replaced by its OCR text (``OCR_HEADER`` then the text);
    the parts of each message are joined into one string (blank line between parts), since
    text backends' chat templates expect string content. Prompts without images pass as is."""
    if prompt.format != "chat" or not image_parts(prompt):
        return prompt
    messages = []
    for m in prompt.messages:
        content = m.get("content")
        if not isinstance(content, list):
            messages.append(dict(m))
            continue
        parts: list[str] = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "image_url":
                try:
                    data = image_bytes(part)
                except (OSError, ValueError) as exc:
                    raise BackendError(f"cannot read image: {exc}", permanent=True,
                                       error_class="BadRequestError") from exc
                parts.append(f"{OCR_HEADER}\n{_ocr_text(data)}")
            elif isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(part["text"])
            else:
                raise BackendError(f"unsupported content part type {part.get('type')!r}",
                                   permanent=True, error_class="UnsupportedInputError")
        # one string: text backends (llama.cpp chat templates) expect string content
        messages.append({**m, "content": "\n\n".join(parts)})
    return Prompt("chat", messages=tuple(messages))


class OCRCascadeBackend(Backend):
    """OCR for the images, then a text model: named as what it is, never a VLM."""

    name = "ocr_cascade"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.max_batch_size = int(getattr(inner, "max_batch_size", 1))

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        inner_cls, inner_spec, inner_file = _inner(spec)
        return {"kind": "ocr_cascade", "ocr": ocr_settings(),
                "text_backend": {"backend": inner_spec["backend"],
                                 **inner_cls.identity_from_config(inner_spec, inner_file)}}

    @classmethod
    def from_config(cls, spec: Mapping[str, Any],
                    model_file: ModelFile | None) -> OCRCascadeBackend:
        inner_cls, inner_spec, inner_file = _inner(spec)
        return cls(inner_cls.from_config(inner_spec, inner_file))

    def to_text_prompt(self, prompt: Prompt) -> Prompt:
        return to_text_prompt(prompt)

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        return self.inner.generate(to_text_prompt(prompt), decoding, sample_index)

    def generate_batch(self, prompts: Sequence[Prompt], decoding: Decoding,
                       sample_indices: Sequence[int]) -> list[Completion | BackendError]:
        out: list[Completion | BackendError | None] = [None] * len(prompts)
        texts: list[Prompt] = []
        where: list[int] = []
        for i, prompt in enumerate(prompts):
            try:
                texts.append(to_text_prompt(prompt))
                where.append(i)
            except BackendError as exc:
                out[i] = exc
        if texts:
            results = self.inner.generate_batch(texts, decoding,
                                                [sample_indices[i] for i in where])
            for i, res in zip(where, results, strict=True):
                out[i] = res
        return [r if r is not None else BackendError("no result", permanent=True) for r in out]

    def close(self) -> None:
        self.inner.close()
