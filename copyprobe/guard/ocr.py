"""OCR engines for the guard's notice identifier, and a disk cache of what they read.

:data:`OCR_ENGINES` is a registry of engines; each has a ``name``, ``settings()`` (what decides
its output, recorded in every cache entry) and ``read(data: bytes) -> str`` (the image's text,
lines in reading order joined by newlines).

``rapidocr`` (the default)
    RapidOCR with PaddleOCR's PP-OCRv4 models as ONNX (``rapidocr-onnxruntime``, works offline),
    read exactly as the ``ocr_cascade`` backend reads images (the same function: upscaled 2x,
    no angle classifier, boxes grouped into lines). It reads the copyright sign as ``"@"`` or
    drops it; the notice detector allows for that.
``paddleocr``
    PaddleOCR 3.x itself. Its package downloads its models at first use, which fails offline,
    so this engine is only built when the package is installed and its two model folders
    (text detection, text recognition) are given in ``model_dirs`` and exist; otherwise it
    fails at construction with an error that says which of the two is missing.

:class:`OCRCache` keeps every text read on disk, one JSON file per (engine settings, image
sha256), written atomically, so an image is read once across processes and runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from copyprobe.registry import Registry


class OCRError(RuntimeError):
    """An OCR engine cannot be built or cannot read an image."""


class OCREngine(Protocol):
    name: str

    def settings(self) -> dict[str, Any]: ...

    def read(self, data: bytes) -> str: ...


OCR_ENGINES: Registry[type] = Registry("OCR engine")


@OCR_ENGINES.register("rapidocr")
class RapidOCREngine:
    """RapidOCR as the ``ocr_cascade`` backend runs it (see the module text)."""

    name = "rapidocr"
    _lock = threading.Lock()  # one shared engine: one image at a time

    def __init__(self, **options: Any) -> None:
        if options:
            raise OCRError(f"OCR engine 'rapidocr' takes no options, got {sorted(options)}")
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError as exc:
            raise OCRError("OCR engine 'rapidocr' needs rapidocr-onnxruntime: pip install "
                           "copyprobe[ocr]") from exc

    def settings(self) -> dict[str, Any]:
        from copyprobe.generation.ocr_cascade import ocr_settings

        return ocr_settings()

    def read(self, data: bytes) -> str:
        from copyprobe.generation.base import BackendError
        from copyprobe.generation.ocr_cascade import read_image

        with self._lock:
            try:
                return read_image(data)
            except BackendError as exc:
                raise OCRError(str(exc)) from exc


@OCR_ENGINES.register("paddleocr")
class PaddleOCREngine:
    """PaddleOCR 3.x with local model folders (see the module text).

    ``model_dirs``: ``{"detection": <folder>, "recognition": <folder>}``, the folders of a text
    detection and a text recognition model as PaddleOCR saves them."""

    name = "paddleocr"
    _lock = threading.Lock()

    def __init__(self, model_dirs: Mapping[str, str] | None = None) -> None:
        try:
            import paddleocr
        except ImportError as exc:
            raise OCRError("OCR engine 'paddleocr' needs the paddleocr package (and "
                           "paddlepaddle); it is not installed. Use ocr: rapidocr, or pip "
                           "install paddleocr and give its model folders in "
                           "ocr_options.model_dirs") from exc
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
        import io

        import numpy as np
        from PIL import Image

        from copyprobe.generation.ocr_cascade import _reading_order

        try:
            img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        except OSError as exc:
            raise OCRError(f"cannot read image: {exc}") from exc
        with self._lock:
            results = self._ocr.predict(img)
        boxes = []
        for res in results or []:
            for poly, text in zip(res["rec_polys"], res["rec_texts"], strict=True):
                boxes.append(([[float(x), float(y)] for x, y in poly], text))
        return "\n".join(_reading_order(boxes))


def ocr_engine(name: str = "rapidocr", options: Mapping[str, Any] | None = None) -> OCREngine:
    """The engine registered as ``name``, built with ``options``."""
    return OCR_ENGINES.get(name)(**dict(options or {}))


def _settings_key(settings: Mapping[str, Any]) -> str:
    blob = json.dumps(dict(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class OCRCache:
    """What an engine read from each image, on disk under ``directory``:
    ``<directory>/<settings key>/<sha[:2]>/<sha>.json`` = ``{"text", "sha256", "settings"}``.
    The settings key is a hash of the engine's settings, so another engine, version or setting
    never reuses an entry. ``directory`` None keeps nothing (every image is read)."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.dir = Path(directory) if directory is not None else None

    def _path(self, settings: Mapping[str, Any], digest: str) -> Path:
        assert self.dir is not None
        return self.dir / _settings_key(settings) / digest[:2] / f"{digest}.json"

    def get(self, settings: Mapping[str, Any], digest: str) -> str | None:
        if self.dir is None:
            return None
        try:
            entry = json.loads(self._path(settings, digest).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        text = entry.get("text") if isinstance(entry, dict) else None
        return text if isinstance(text, str) else None

    def put(self, settings: Mapping[str, Any], digest: str, text: str) -> None:
        if self.dir is None:
            return
        path = self._path(settings, digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = json.dumps({"text": text, "sha256": digest, "settings": dict(settings)},
                          ensure_ascii=False, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(blob)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


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
