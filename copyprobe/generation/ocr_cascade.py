"""An OCR-then-text-model cascade for vision prompts, offline.

No PyPI package ships a small vision-language model (checked 2026-11), so offline a vision task runs as
this explicitly named cascade: every image part of a chat prompt is read with RapidOCR
(PaddleOCR's PP-OCRv4 models as ONNX, ``rapidocr-onnxruntime``) and replaced by
``"[Text read from the image by OCR]\\n<text>"`` (each message's parts then joined into one
string); the text-only prompt goes to an inner text backend. Its identity says
``"kind": "ocr_cascade"`` and names the OCR engine and the inner backend: results from it must
never be reported as those of a vision-language model.

Config keys: ``text_backend`` (a nested model config slice such as ``{backend: llamacpp,
model_file: {...}, n_ctx: 4096}``) and, for an inner backend that loads a model file, either
``text_model_file_resolved`` (a :class:`~copyprobe.models.ModelFile` or a mapping with its
``path``, ``sha256``, ``size``, ``origin``) or ``cache_dir`` (where
:func:`copyprobe.models.materialise` assembles ``text_backend.model_file``; default
``.cache/copyprobe``).

OCR settings, measured on rendered text: images are upscaled 2x (Lanczos) and read with
``use_cls=False`` (rendered text is upright). RapidOCR reads the copyright sign as ``"@"`` or drops it. The texts
of the last :data:`OCR_CACHE_SIZE` images are kept in memory by image sha256, so an image asked
for again (one notice image under many queries) is read once.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from copyprobe.generation.base import BACKENDS, Backend, BackendError, Completion, Decoding
from copyprobe.models import ModelFile, materialise
from copyprobe.prompt import Prompt, image_bytes, image_parts

OCR_HEADER = "[Text read from the image by OCR]"
UPSCALE = 2
USE_CLS = False
RESAMPLE = "lanczos"

#: Images whose OCR text is kept in memory (least recently used dropped first).
OCR_CACHE_SIZE = 1024

_engine: Any = None
_lock = threading.Lock()
# keyed by sha256, not by the bytes (functools.lru_cache would keep every image as its key)
_cache: OrderedDict[str, str] = OrderedDict()


def ocr_settings() -> dict[str, Any]:
    """The OCR engine and settings, as recorded in identities."""
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return ""

    return {"engine": "rapidocr-onnxruntime", "version": version("rapidocr-onnxruntime"),
            "onnxruntime": version("onnxruntime"), "upscale": UPSCALE, "resample": RESAMPLE,
            "use_cls": USE_CLS}


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise BackendError("rapidocr-onnxruntime is not installed; pip install "
                               "copyprobe[ocr]", permanent=True) from exc
        _engine = RapidOCR()
    return _engine


def _reading_order(boxes: Sequence[tuple[list[list[float]], str]]) -> list[str]:
    """Group detected boxes into lines (vertical centres within half a box height) from top
    to bottom, each line's boxes left to right; return the lines."""
    entries = []
    for box, text in boxes:
        ys = [p[1] for p in box]
        xs = [p[0] for p in box]
        top, bottom = min(ys), max(ys)
        entries.append(((top + bottom) / 2, max(bottom - top, 1.0), min(xs), text))
    entries.sort(key=lambda e: (e[0], e[2]))
    lines: list[list[tuple[float, float, float, str]]] = []
    for e in entries:
        if lines:
            ref = lines[-1]
            centre = sum(x[0] for x in ref) / len(ref)
            height = sum(x[1] for x in ref) / len(ref)
            if abs(e[0] - centre) <= height / 2:
                ref.append(e)
                continue
        lines.append([e])
    return [" ".join(x[3] for x in sorted(line, key=lambda x: x[2])) for line in lines]


def read_image(data: bytes) -> str:
    """The text in an image, read now (no cache): lines in reading order joined by newlines;
    empty when no text is found. Callers serialise calls (the engine is shared)."""
    import numpy as np
    from PIL import Image

    try:
        img = Image.open(io.BytesIO(data)).convert("RGB")
    except OSError as exc:
        raise BackendError(f"cannot read image: {exc}", permanent=True,
                           error_class="BadRequestError") from exc
    img = img.resize((img.width * UPSCALE, img.height * UPSCALE), Image.Resampling.LANCZOS)
    result, _elapsed = _get_engine()(np.asarray(img), use_cls=USE_CLS)
    return "\n".join(_reading_order([(r[0], r[1]) for r in result or []]))


def ocr_image(data: bytes) -> str:
    """The text in an image (PNG, JPEG, ... bytes): lines in reading order joined by newlines;
    empty when no text is found. The last :data:`OCR_CACHE_SIZE` images' texts are kept."""
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        if digest in _cache:
            _cache.move_to_end(digest)
            return _cache[digest]
        text = read_image(data)
        _cache[digest] = text
        while len(_cache) > OCR_CACHE_SIZE:
            _cache.popitem(last=False)
        return text


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
                parts.append(f"{OCR_HEADER}\n{ocr_image(data)}")
            elif isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(part["text"])
            else:
                raise BackendError(f"unsupported content part type {part.get('type')!r}",
                                   permanent=True, error_class="UnsupportedInputError")
        # one string: text backends (llama.cpp chat templates) expect string content
        messages.append({**m, "content": "\n\n".join(parts)})
    return Prompt("chat", messages=tuple(messages))


@BACKENDS.register("ocr_cascade")
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
