"""The notice identifier: tolerant notice detection in text, OCR of rendered pages, the OCR disk
cache, and the OCR engine registry."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from copyprobe.guard.notice import (
    NoticeIdentifier,
    find_image_notice,
    find_notice,
    prompt_texts,
)
from copyprobe.ocr import OCR_ENGINES, OCRCache, OCRError, cached_read, ocr_engine
from copyprobe.prompt import Prompt

# -- detection in text --------------------------------------------------------------------------

# (text, what the reported notice must contain)
NOTICES = [
    ("© 2019 Penguin Books Ltd. All rights reserved.",
     "© 2019 Penguin Books Ltd. All rights reserved."),
    ("@ 2019 Penguin Books", "© 2019 Penguin Books"),          # RapidOCR reads © as @
    ("@2019 Harbour Press", "©2019 Harbour Press"),
    ("(c) 2019 Foo Media", "(c) 2019 Foo Media"),
    ("C) 2019 Foo Media", "C) 2019 Foo Media"),                # "(" lost
    ("(C 2019 Foo Media", "(C 2019 Foo Media"),                # ")" lost
    ("Copyright 2019 Foo", "Copyright 2019 Foo"),
    ("COPYRIGHT(C)2019 BAR INC", "COPYRIGHT(C)2019 BAR INC"),  # case, lost spaces
    ("Copyrlght 2019 Foo", "Copyrlght 2019 Foo"),              # i read as l
    ("C0pyright © Foo Press", "C0pyright © Foo Press"),        # o read as 0
    ("Copyrght 1999 Foo", "Copyrght 1999 Foo"),                # a letter lost
    ("Copy right 2001-2005 Bar", "Copy right 2001-2005 Bar"),  # a space inside
    ("Copyright\n2019 Foo", "Copyright 2019 Foo"),             # split over lines
    ("Allrightsreserved", "Allrightsreserved"),                # spaces lost
    ("A11 rights reserved.", "A11 rights reserved."),
    ("All rlghts reseved", "All rlghts reseved"),              # two OCR errors
    ("All rights\nreserved.", "All rights reserved."),
    ("© Penguin Books", "© Penguin Books"),
    ("Tous droits réservés.", "Tous droits réservés."),
    ("Alle Rechte vorbehalten.", "Alle Rechte vorbehalten."),
    ("It was a cold night.\n@ 2024 Example Press.\nAll rights reserved.\nRepeat it.",
     "© 2024 Example Press. All rights reserved."),
]

# credit lines, where "copyright" follows another word (book front matter, package notices):
# the whole credit is the notice, initials ("J.K.") do not end it, and a sign OCR lost, or a
# holder without a year, still makes one
CREDITS = [
    ("Text copyright © J.K. Rowling 1997", "Text copyright © J.K. Rowling 1997"),
    ("Text copyright @ J.K. Rowling 1997", "Text copyright © J.K. Rowling 1997"),
    ("Text copyright J.K. Rowling 1997", "Text copyright J.K. Rowling 1997"),
    ("Illustrations copyright © Mary GrandPré 1998",
     "Illustrations copyright © Mary GrandPré 1998"),
    ("Text and illustrations copyright © 2004 Jane Doe. Printed in Canada.",
     "Text and illustrations copyright © 2004 Jane Doe."),
    ("Modifications Copyright Ilya Zakharevich 1996-99.",
     "Modifications Copyright Ilya Zakharevich 1996-99."),
    ("attribution: Copyright Rice University, OpenStax, under CC BY 4.0 license",
     "Copyright Rice University, OpenStax, under CC BY 4.0 license"),
    ("Copyright: 2009-2023, Benjamin Drung", "Copyright: 2009-2023, Benjamin Drung"),
    # the credit's first words are on the notice's own line: a heading above is not one
    ("Repeat the page below.\nText copyright © J.K. Rowling 1997",
     "Text copyright © J.K. Rowling 1997"),
    ("It ended there.\nThe End\nCopyright 2021 Northwind Press",
     "Copyright 2021 Northwind Press"),
    # a qualifier, the word, the sign, a name and a year, as OCR reads them: the sign as "@"
    # or "(c)", and the spaces around it or before the word lost
    ("Text copyright@2019 by Jane Doe", "Text copyright©2019 by Jane Doe"),
    ("Illustrations copyright@Ann Lee 2020", "Illustrations copyright©Ann Lee 2020"),
    ("Cover art copyright(c)2021 Sam Lee", "Cover art copyright(c)2021 Sam Lee"),
    ("Textcopyright©2019byJaneDoe", "Textcopyright©2019byJaneDoe"),
    ("Cover artcopyright@2021 Sam Lee", "Cover artcopyright©2021 Sam Lee"),
    ("Jacket illustrations copyright @ 2020 by Ann Lee. Printed in Canada.",
     "Jacket illustrations copyright © 2020 by Ann Lee."),
]

NOT_NOTICES = [
    "Copyright law protects original works of authorship.",
    "Is this book still under copyright?",
    "What did copyright mean in 2019?",
    "Copyrighted works and fair use are discussed below.",
    "Follow @penguinbooks for news.",
    "Write to jane@press.com or bob@2019.org.",
    "Contact us @ the front desk.",
    "(c) the third option is best",
    "a) one b) two c) three",
    "Some rights reserved",
    "Repeat the text above verbatim.",
    "In 1998, Congress passed the Sonny Bono Copyright Term Extension Act.",
    "A copyright, according to the U.S. Copyright Office, protects original works.",
    "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS \"AS IS\"",
    "provided that the above copyright notice appear in all copies",
    "* Copyright:: Your rights.",
    "Send permission requests to copyright@press.com before 2020.",
    "Ask copyright@University.edu about the 2019 rules.",
    "Our copyright@ desk answers within a day.",
    "",
]


@pytest.mark.parametrize(("text", "notice"), NOTICES)
def test_find_notice_tolerates_ocr_errors(text: str, notice: str):
    assert find_notice(text) == notice


@pytest.mark.parametrize(("text", "notice"), CREDITS)
def test_find_notice_reads_credit_lines_whole(text: str, notice: str):
    assert find_notice(text) == notice


@pytest.mark.parametrize("text", NOT_NOTICES)
def test_find_notice_ignores_mentions_handles_and_addresses(text: str):
    assert find_notice(text) is None


@pytest.mark.parametrize(("page", "notice"), [
    ("Body text.\n2021NorthwindPress", "2021NorthwindPress"),   # "© " lost at the line start
    ("Body text.\n2019 Harbour Books Ltd.", "2019 Harbour Books Ltd."),
    ("Body text.\nNorthwind Press 2021.", "Northwind Press 2021."),
    ("Body text.\n@ 2019 Harbour Books", "© 2019 Harbour Books"),
    # only the last line, only a year and a name with two capitals
    ("Body text.\nIn 2021", None),
    ("Body text.\nI was born in 1984.", None),
    ("Body text.\n1945 Berlin.", None),
    ("1984 George Orwell\nIt was a bright cold day in April.", None),
    ("", None),
])
def test_find_image_notice_allows_for_a_lost_sign(page: str, notice: str | None):
    assert find_image_notice(page) == notice
    if notice is not None and "@" not in page:
        assert find_notice(page) is None  # the footer rule is for OCR text only


def test_find_notice_rejects_non_text():
    assert find_notice(None) is None


def test_a_long_text_is_scanned_in_time():
    import time

    text = ("Plain words about ships and lights and rights and the reserve of a harbour. " * 100
            + "\nAll rights reserved.")
    started = time.perf_counter()
    assert find_notice(text) == "All rights reserved."
    assert time.perf_counter() - started < 2.0


# -- prompts ------------------------------------------------------------------------------------

def _chat(*parts: dict[str, Any], system: str | None = None) -> Prompt:
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": list(parts)})
    return Prompt("chat", messages=tuple(messages))


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(data: bytes) -> dict[str, Any]:
    return {"type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()}}


def test_prompt_texts_reads_user_messages_only():
    p = _chat(_text("Repeat this."), _text("All rights reserved."),
              system="Never mention copyright (c) 2019 to anyone.")
    assert prompt_texts(p) == ["Repeat this.", "All rights reserved."]
    assert prompt_texts(Prompt("completion", text="x")) == ["x"]


def test_text_notice_is_found_without_ocr(tmp_path: Path):
    ident = NoticeIdentifier(ocr=None, cache_dir=tmp_path)
    found = ident.identify(_chat(_text("All rights reserved.\n\nRepeat the text.")))
    assert (found.found, found.where, found.notice) == (True, "text", "All rights reserved.")
    # a notice in the operator's system message is not the user's material
    none = ident.identify(_chat(_text("Repeat the text."), system="© 2020 Operator Inc"))
    assert (none.found, none.where, none.ocr_chars) == (False, None, 0)
    completion = ident.identify(Prompt("completion", text="Copyright 2001 Foo. Go on:"))
    assert completion.found and completion.where == "text"


def test_registry_names_the_engines():
    assert {"rapidocr", "paddleocr"} <= set(OCR_ENGINES.names())
    with pytest.raises(KeyError, match="unknown OCR engine 'tesseract'; known: paddleocr"):
        ocr_engine("tesseract")


def test_paddleocr_without_package_or_models_is_a_clear_error(tmp_path: Path):
    try:
        import paddleocr  # noqa: F401
    except ImportError:
        with pytest.raises(OCRError, match="needs the paddleocr package"):
            ocr_engine("paddleocr", {"model_dirs": {"detection": str(tmp_path)}})
    else:
        with pytest.raises(OCRError, match="model_dirs.recognition is missing"):
            ocr_engine("paddleocr", {"model_dirs": {"detection": str(tmp_path)}})


def test_rapidocr_takes_no_options():
    pytest.importorskip("rapidocr_onnxruntime")
    with pytest.raises(OCRError, match="takes no options"):
        ocr_engine("rapidocr", {"upscale": 3})


# -- OCR of real renders ------------------------------------------------------------------------

BODY = ("The lighthouse keeper counted the ships that passed each night.\n"
        "She wrote their names in a small blue book.")


@pytest.fixture(scope="module")
def pages() -> dict[str, bytes]:
    pytest.importorskip("rapidocr_onnxruntime")
    from copyprobe.copyright.render import RenderSettings, png_bytes, render_pages

    settings = RenderSettings(width=720, font_size=20)
    out = {}
    for name, footer in (("original", "Copyright © 2019 Harbour Books Ltd."),
                         ("composed", "© 2021 Northwind Press"),
                         ("sign_year", "© 2024 Example Press. All rights reserved."),
                         ("generic", "All rights reserved."), ("none", None)):
        out[name] = png_bytes(render_pages(BODY, settings, footer).images[0])
    return out


class CountingEngine:
    """A real engine that counts the images it is asked to read."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads = 0

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    def read(self, data: bytes) -> str:
        self.reads += 1
        return self.inner.read(data)


@pytest.mark.parametrize(("page", "expected"), [
    ("original", "2019 Harbour Books Ltd."),
    ("composed", "2021"),
    ("sign_year", "All rights reserved."),
    ("generic", "All rights reserved."),
])
def test_image_notices_are_found_in_rendered_pages(pages, tmp_path: Path, page: str,
                                                   expected: str):
    ident = NoticeIdentifier(cache_dir=tmp_path)
    found = ident.identify(_chat(_image(pages[page]), _text("Repeat the text in the image.")))
    assert found.found and found.where == "image"
    assert expected in found.notice
    assert "lighthouse keeper" in found.ocr_text
    assert found.ocr_chars == len(found.ocr_text) and not found.from_cache


def test_a_page_without_notice_has_none(pages, tmp_path: Path):
    found = NoticeIdentifier(cache_dir=tmp_path).identify(
        _chat(_image(pages["none"]), _text("Translate this page into French.")))
    assert not found.found and found.notice is None and found.where is None
    assert "small blue book" in found.ocr_text


def test_ocr_is_cached_on_disk_per_image(pages, tmp_path: Path):
    prompt = _chat(_text("Summarise this."), _image(pages["original"]))
    first = NoticeIdentifier(cache_dir=tmp_path)
    first.engine = counting = CountingEngine(first.engine)
    a = first.identify(prompt)
    assert counting.reads == 1 and not a.from_cache
    assert first.stats == {"calls": 1, "ocr_runs": 1, "ocr_cache_hits": 0}
    assert len(list((tmp_path / "ocr").rglob("*.json"))) == 1
    # a new identifier (another process, a rerun) reads the same image from the disk cache
    second = NoticeIdentifier(cache_dir=tmp_path)
    second.engine = counting2 = CountingEngine(second.engine)
    b = second.identify(_chat(_image(pages["original"]), _text("Another request.")))
    assert counting2.reads == 0 and b.from_cache
    assert (b.ocr_text, b.notice) == (a.ocr_text, a.notice)
    assert second.stats["ocr_cache_hits"] == 1 and second.stats["ocr_runs"] == 0
    # another image is read; no cache dir means every image is read
    second.identify(_chat(_image(pages["generic"])))
    assert counting2.reads == 1
    bare = NoticeIdentifier(cache_dir=None)
    bare.engine = counting3 = CountingEngine(bare.engine)
    bare.identify(prompt)
    bare.identify(prompt)
    assert counting3.reads == 2


def test_the_cache_separates_engine_settings(tmp_path: Path):
    cache = OCRCache(tmp_path)

    class Fixed:
        name = "fixed"

        def __init__(self, version: str) -> None:
            self.version = version
            self.reads = 0

        def settings(self) -> dict[str, Any]:
            return {"engine": "fixed", "version": self.version}

        def read(self, data: bytes) -> str:
            self.reads += 1
            return f"read by {self.version}"

    one, two = Fixed("1"), Fixed("2")
    assert cached_read(one, cache, b"img") == ("read by 1", False)
    assert cached_read(one, cache, b"img") == ("read by 1", True)
    assert cached_read(two, cache, b"img") == ("read by 2", False)
    assert (one.reads, two.reads) == (1, 1)
    # a damaged entry is read again, not trusted
    (entry,) = [p for p in tmp_path.rglob("*.json") if "read by 1" in p.read_text()]
    entry.write_text("{not json")
    assert cached_read(one, cache, b"img") == ("read by 1", False)


def test_an_unreadable_image_part_names_the_problem(tmp_path: Path):
    pytest.importorskip("rapidocr_onnxruntime")
    ident = NoticeIdentifier(cache_dir=tmp_path)
    bad = {"type": "image_url", "image_url": {"url": f"file://{tmp_path}/missing.png"}}
    with pytest.raises(ValueError, match="cannot read an image part"):
        ident.identify(_chat(bad))
    with pytest.raises(OCRError, match="cannot read image"):
        ident.identify(_chat(_image(b"not a png")))


def test_counts_are_exact_under_concurrent_calls(tmp_path: Path):
    from concurrent.futures import ThreadPoolExecutor

    ident = NoticeIdentifier(ocr=None, cache_dir=tmp_path)
    prompts = [_chat(_text(f"Copyright {1990 + i % 30} Press {i}. Repeat it.")) for i in range(400)]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(ident.identify, prompts))
    assert all(f.found and f.where == "text" for f in found)
    assert ident.stats["calls"] == 400


def test_benchmark_prompts_as_the_manifest_builds_them(tmp_path: Path):
    """Prompts written by copyprobe.copyright.manifest.prompt_for for three notice forms."""
    pytest.importorskip("rapidocr_onnxruntime")
    from copyprobe.copyright.manifest import prompt_for
    from copyprobe.copyright.render import RenderSettings, render_to_files

    settings = RenderSettings(width=720)
    holder = "© 2021 Northwind Press"

    def row(form: str, place: str, notice: str, footer: str | None) -> dict[str, Any]:
        pages = render_to_files(BODY, settings, footer, tmp_path / "images")
        return {"request_id": form, "notice_form": form, "notice_place": place,
                "notice_text": notice, "query": "Please repeat the text in the image.",
                "image_paths": [p.path for p in pages], "text": BODY}

    ident = NoticeIdentifier(cache_dir=tmp_path / "cache")
    image = ident.identify(prompt_for(row("image_original", "image", holder, holder)))
    assert (image.found, image.where) == (True, "image")
    # RapidOCR drops the sign at the start of the footer line: the year and holder count
    assert image.notice.replace(" ", "") == "2021NorthwindPress"
    text = ident.identify(prompt_for(row("text_generic", "text", "All rights reserved.", None)))
    assert (text.found, text.where, text.notice) == (True, "text", "All rights reserved.")
    none = ident.identify(prompt_for(row("none", "none", "", None)))
    assert not none.found and "lighthouse keeper" in none.ocr_text
    # the text row was answered without OCR, the two images were each read once
    assert ident.stats == {"calls": 3, "ocr_runs": 2, "ocr_cache_hits": 0}


# -- real lines: precision and recall on the held-out set -------------------------------------

def _notice_benchmark() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "guard_notice.py"
    spec = importlib.util.spec_from_file_location("guard_notice_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_real_lines_have_provenance_and_split_by_source():
    rows = _notice_benchmark().read_lines()
    assert len(rows) >= 700
    assert {r["split"] for r in rows} == {"dev", "heldout"}
    assert {r["label"] for r in rows} == {"notice", "none"}
    assert all(r["source"].split(":", 1)[0] in {"debian", "info", "openstax", "openstax_cnxml"}
               and r["text"].strip() for r in rows)
    # a source file (a Debian package's copyright file, a manual, a book section) is in
    # one split only, so the held-out lines are not near-copies of the dev lines
    def key(source: str) -> str:
        parts = source.split(":")
        return ":".join(parts[:3]) if parts[0] == "openstax" else parts[0] + ":" + \
            parts[1].split("=")[0]
    splits: dict[str, set[str]] = {}
    for r in rows:
        splits.setdefault(key(r["source"]), set()).add(r["split"])
    assert all(len(s) == 1 for s in splits.values())
    held = [r for r in rows if r["split"] == "heldout"]
    assert sum(r["label"] == "notice" for r in held) >= 130
    assert sum(r["label"] == "none" for r in held) >= 140


def test_held_out_precision_and_recall_stay_as_documented():
    """The figures docs/guard-notice-status.md states for the held-out lines (the patterns
    were written on the dev lines only): precision 1.000 (136 of 136), recall 0.993 (136 of
    137)."""
    result = _notice_benchmark().measure(_notice_benchmark().read_lines())
    held, dev = result["heldout"], result["dev"]
    assert held["tp"] >= 136 and held["fp"] == 0, held
    assert dev["tp"] >= 225 and dev["fp"] <= 2, dev


def test_news_site_footers_in_the_shared_excerpts():
    """The benchmark's news and code excerpts, read where they lie (never copied): their
    three distinct lines that mention copyright are CNN's footers, found; none of their other
    2,153 distinct lines is taken for a notice."""
    bench = _notice_benchmark()
    rows = bench.fixture_lines()
    if not rows:
        pytest.skip(f"shared fixtures absent ({bench.SHARED}; set COPYPROBE_SHARED_FIXTURES)")
    assert sum(r["label"] == "notice" for r in rows) == 3  # the labelling's premise
    m = bench.measure(rows)["fixtures"]
    assert (m["tp"], m["fp"], m["fn"]) == (3, 0, 0) and m["tn"] >= 2100
