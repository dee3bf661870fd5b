"""OCR: the engines, the reading order of their boxes, and the caches of what they read.

Reference: docs/backends.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from copyprobe.registry import Registry
from copyprobe.store import KeyedStore

__all__ = ["OCR_CACHE_SIZE", "OCR_ENGINES", "OCRCache", "OCREngine", "OCRError",
           "OCRUnavailable", "PaddleOCREngine", "RapidOCREngine", "cached_read", "ocr_engine",
           "ocr_image", "ocr_settings", "read_image", "reading_order"]

UPSCALE = 2
USE_CLS = False
RESAMPLE = "lanczos"

#: Images whose OCR text :func:`ocr_image` keeps in memory (least recently used dropped first).
OCR_CACHE_SIZE = 1024


class OCRError(RuntimeError):
    """An OCR engine cannot be built or cannot read an image."""


class OCRUnavailable(OCRError):
    """The engine's package is not installed."""


# ---------------------------------------------------------------------------------------------
# RapidOCR, read as the ocr_cascade backend and the guard's default engine read it

_engine: Any = None
_lock = threading.Lock()
# keyed by sha256, not by the bytes (functools.lru_cache would keep every image as its key)
_cache: OrderedDict[str, str] = OrderedDict()


def ocr_settings() -> dict[str, Any]:
    """RapidOCR's engine and settings, as recorded in identities and cache entries."""
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return ""

    return {"engine": "rapidocr-onnxruntime", "version": version("rapidocr-onnxruntime"),
            "onnxruntime": version("onnxruntime"), "upscale": UPSCALE, "resample": RESAMPLE,
            "use_cls": USE_CLS}


def _rapidocr() -> Any:
    global _engine
    if _engine is None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise OCRUnavailable("rapidocr-onnxruntime is not installed; pip install "
                                 "copyprobe[ocr]") from exc
        _engine = RapidOCR()
    return _engine


def reading_order(boxes: Sequence[tuple[Sequence[Sequence[float]], str]]) -> list[str]:
    """Group detected boxes (corner points, text) into lines (vertical centres within half a
    box height) from top to bottom, each line's boxes left to right; return the lines."""
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


def _rgb(data: bytes) -> Any:
    from PIL import Image

    try:
        return Image.open(io.BytesIO(data)).convert("RGB")
    except OSError as exc:
        raise OCRError(f"cannot read image: {exc}") from exc


def read_image(data: bytes) -> str:
    """The text in an image as RapidOCR reads it now (no cache): lines in reading order joined
    by newlines; empty when no text is found. Callers serialise calls (the engine is shared)."""
    import numpy as np
    from PIL import Image

    img = _rgb(data)
    img = img.resize((img.width * UPSCALE, img.height * UPSCALE), Image.Resampling.LANCZOS)
    result, _elapsed = _rapidocr()(np.asarray(img), use_cls=USE_CLS)
    return "\n".join(reading_order([(r[0], r[1]) for r in result or []]))


def ocr_image(data: bytes) -> str:
    """The text in an image (PNG, JPEG, ... bytes) as :func:`read_image` reads it; the last
    :data:`OCR_CACHE_SIZE` images' texts are kept in memory."""
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


# ---------------------------------------------------------------------------------------------
# Engines by name


class OCREngine(Protocol):
    name: str

    def settings(self) -> dict[str, Any]: ...

    def read(self, data: bytes) -> str: ...


OCR_ENGINES: Registry[type] = Registry("OCR engine")
OCR_ENGINES.declare("rapidocr", "copyprobe.ocr:RapidOCREngine")
OCR_ENGINES.declare("paddleocr", "copyprobe.ocr:PaddleOCREngine")


class RapidOCREngine:
    """RapidOCR as :func:`read_image` runs it (see the module text). Tested."""

    name = "rapidocr"

    def __init__(self, **options: Any) -> None:
        if options:
            raise OCRError(f"OCR engine 'rapidocr' takes no options, got {sorted(options)}")
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError as exc:
            raise OCRUnavailable("OCR engine 'rapidocr' needs rapidocr-onnxruntime: pip "
                                 "install copyprobe[ocr]") from exc

    def settings(self) -> dict[str, Any]:
        return ocr_settings()

    def read(self, data: bytes) -> str:
        with _lock:  # one shared engine: one image at a time
            return read_image(data)


class PaddleOCREngine:
    """PaddleOCR 3.x with local model folders. **Untested**: no test runs it on real models
    (PaddleOCR downloads them at first use; none are available offline), so it is not a
    supported engine; see the module text.

    ``model_dirs``: ``{"detection": <folder>, "recognition": <folder>}``, the folders of a text
    detection and a text recognition model as PaddleOCR saves them."""

    name = "paddleocr"
    _lock = threading.Lock()

    def __init__(self, model_dirs: Mapping[str, str] | None = None) -> None:
        try:
            import paddleocr
        except ImportError as exc:
            raise OCRUnavailable(
                "OCR engine 'paddleocr' needs the paddleocr package (and paddlepaddle); it is "
                "not installed. Use ocr: rapidocr, or pip install paddleocr and give its model "
                "folders in ocr_options.model_dirs") from exc
        dirs = dict(model_dirs or {})
        missing = [k for k in ("detection", "recognition")
                   if not dirs.get(k) or not Path(dirs[k]).is_dir()]
        if missing:
            raise OCRError(
                "OCR engine 'paddleocr' needs its models on disk (it would download them at "
                "first use, which fails offline): ocr_options.model_dirs."
                + " and model_dirs.".join(missing)
                + f" {'is' if len(missing) == 1 else 'are'} missing or not a folder "
                f"(given: {dirs or 'nothing'})")
        self.model_dirs = {k: str(Path(dirs[k]).resolve()) for k in ("detection", "recognition")}
        self.version = getattr(paddleocr, "__version__", "")
        self._ocr = paddleocr.PaddleOCR(
            text_detection_model_dir=self.model_dirs["detection"],
            text_recognition_model_dir=self.model_dirs["recognition"],
            use_doc_orientation_classify=False, use_doc_unwarping=False,
            use_textline_orientation=False)

    def settings(self) -> dict[str, Any]:
        return {"engine": "paddleocr", "version": self.version, "model_dirs": self.model_dirs}

    def read(self, data: bytes) -> str:
        import numpy as np

        img = np.asarray(_rgb(data))
        with self._lock:
            results = self._ocr.predict(img)
        boxes = []
        for res in results or []:
            for poly, text in zip(res["rec_polys"], res["rec_texts"], strict=True):
                boxes.append(([[float(x), float(y)] for x, y in poly], text))
        return "\n".join(reading_order(boxes))


def ocr_engine(name: str = "rapidocr", options: Mapping[str, Any] | None = None) -> OCREngine:
    """The engine registered as ``name``, built with ``options``."""
    return OCR_ENGINES.get(name)(**dict(options or {}))


# ---------------------------------------------------------------------------------------------
# What an engine read, on disk


def _settings_key(settings: Mapping[str, Any]) -> str:
    # ASCII JSON, as the guard's cache has named its folders from the start
    blob = json.dumps(dict(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class OCRCache:
    """What an engine read from each image, on disk under ``directory``:
    ``<directory>/<settings key>/<sha[:2]>/<sha>.json`` = ``{"text", "sha256", "settings"}``.
    The settings key is a hash of the engine's settings, so another engine, version or setting
    never reuses an entry. ``directory`` None keeps nothing (every image is read)."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.dir = Path(directory) if directory is not None else None
        self._stores: dict[str, KeyedStore] = {}

    def _store(self, settings: Mapping[str, Any]) -> KeyedStore:
        assert self.dir is not None
        key = _settings_key(settings)
        if key not in self._stores:
            self._stores[key] = KeyedStore(self.dir / key, suffix=".json", shard=2)
        return self._stores[key]

    def get(self, settings: Mapping[str, Any], digest: str) -> str | None:
        if self.dir is None:
            return None
        entry = self._store(settings).get_json(digest)
        text = entry.get("text") if isinstance(entry, dict) else None
        return text if isinstance(text, str) else None

    def put(self, settings: Mapping[str, Any], digest: str, text: str) -> None:
        if self.dir is None:
            return
        self._store(settings).put_json(
            digest, {"text": text, "sha256": digest, "settings": dict(settings)})


def cached_read(engine: OCREngine, cache: OCRCache, data: bytes,
                settings: Mapping[str, Any] | None = None) -> tuple[str, bool]:
    """(the text of the image, whether it came from the cache); reads and stores on a miss."""
    settings = engine.settings() if settings is None else settings
    digest = hashlib.sha256(data).hexdigest()
    hit = cache.get(settings, digest)
    if hit is not None:
        return hit, True
    text = engine.read(data)
    cache.put(settings, digest, text)
    return text, False
