"""copyprobe.ocr: the reading order of boxes, the disk cache's layout (kept from the guard's
cache), and one engine behind the ocr_cascade backend and the guard alike."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from copyprobe.ocr import (
    OCR_ENGINES,
    OCRCache,
    OCRError,
    RapidOCREngine,
    cached_read,
    ocr_settings,
    reading_order,
)


def _box(x: float, y: float, w: float = 40, h: float = 10) -> list[list[float]]:
    return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]


def test_boxes_are_read_as_lines_top_to_bottom_left_to_right() -> None:
    boxes = [(_box(100, 52), "world"), (_box(0, 0), "Title"), (_box(0, 50), "hello"),
             (_box(60, 48), "big"), (_box(0, 100, h=12), "last")]
    assert reading_order(boxes) == ["Title", "hello big world", "last"]
    assert reading_order([]) == []


def test_an_entry_written_by_the_guards_old_cache_is_still_hit(tmp_path: Path) -> None:
    settings = {"engine": "x", "version": "1"}
    data = b"image bytes"
    digest = hashlib.sha256(data).hexdigest()
    # the layout the guard's OCR cache wrote (copyprobe/guard/ocr.py, before copyprobe/ocr.py):
    # <dir>/<settings key>/<sha[:2]>/<sha>.json
    skey = hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()[:16]
    old = tmp_path / skey / digest[:2] / f"{digest}.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"text": "stored text", "sha256": digest, "settings": settings}))

    class Never:
        name = "never"

        def settings(self) -> dict:
            return settings

        def read(self, data: bytes) -> str:
            raise AssertionError("a cached image must not be read again")

    assert cached_read(Never(), OCRCache(tmp_path), data) == ("stored text", True)
    new = OCRCache(tmp_path)
    new.put({"engine": "y"}, digest, "other")
    assert new.get({"engine": "y"}, digest) == "other"
    assert new.get(settings, digest) == "stored text"
    assert OCRCache(None).get(settings, digest) is None


def test_the_cascade_and_the_guard_use_one_engine() -> None:
    from copyprobe.generation import ocr_cascade

    assert ocr_cascade.ocr_settings is ocr_settings
    assert OCR_ENGINES.get("rapidocr") is RapidOCREngine
    assert "untested" in (OCR_ENGINES.get("paddleocr").__doc__ or "").lower()


def test_a_malformed_image_is_an_ocr_error_and_a_bad_request_for_the_cascade() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    import base64

    from copyprobe.generation.base import BackendError
    from copyprobe.generation.ocr_cascade import to_text_prompt
    from copyprobe.prompt import Prompt

    with pytest.raises(OCRError, match="cannot read image"):
        RapidOCREngine().read(b"not an image")
    url = "data:image/png;base64," + base64.b64encode(b"not an image").decode()
    prompt = Prompt("chat", messages=({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]},))
    with pytest.raises(BackendError, match="cannot read image") as info:
        to_text_prompt(prompt)
    assert info.value.permanent and info.value.error_class == "BadRequestError"
