"""Rendering materials to PNG pages: determinism, the font record, wrapping, truncation and
pagination, the footer notice, content-addressed files, and an OCR round trip."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from copyprobe.copyright.ocr_check import character_error_rate, normalise_whitespace, round_trip
from copyprobe.copyright.render import (
    RenderError,
    RenderSettings,
    _load_font,
    available_fonts,
    font_info,
    png_bytes,
    render_key,
    render_pages,
    render_to_files,
    wrap,
)

ROOT = Path(__file__).resolve().parents[2]
FOOTER = "Copyright © 2021 Example Press. All rights reserved."
PROSE = ("The lighthouse keeper climbed the spiral stairs every evening at dusk, carrying a tin "
         "of oil and a cloth for the lens. For thirty years he had watched the ships pass the "
         "reef, and in all that time only one had run aground, on a night of fog so thick that "
         "the beam seemed to stop a few yards from the glass.")
CODE = ("read_csv(path, sep=',', header=0)\n"
        "Read a comma-separated values file into a DataFrame.\n"
        "Parameters: path (str): the file to read; sep (str): the delimiter to use.\n"
        "Returns: DataFrame. Raises ValueError when a row has too many fields.")


def numbered_lines(n: int) -> str:
    return "\n".join(f"line {i}" for i in range(n))


def ink_rows(image) -> np.ndarray:
    """Indices of the pixel rows that hold any non-white pixel."""
    return np.flatnonzero((np.asarray(image) < 255).any(axis=1))


# --- determinism and the font --------------------------------------------------------------


def test_same_input_gives_byte_identical_png_twice_and_in_another_process() -> None:
    settings = RenderSettings(width=640)
    first = png_bytes(render_pages(PROSE, settings, FOOTER).images[0])
    second = png_bytes(render_pages(PROSE, settings, FOOTER).images[0])
    assert first == second
    code = ("import hashlib, sys\n"
            "from copyprobe.copyright.render import RenderSettings, png_bytes, render_pages\n"
            f"img = render_pages({PROSE!r}, RenderSettings(width=640), {FOOTER!r}).images[0]\n"
            "sys.stdout.write(hashlib.sha256(png_bytes(img)).hexdigest())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout == hashlib.sha256(first).hexdigest()
    # no metadata chunk that could carry a time or a software name
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    for chunk in (b"tIME", b"tEXt", b"iTXt", b"zTXt", b"pHYs"):
        assert chunk not in first


def test_a_different_text_or_footer_gives_different_pixels() -> None:
    settings = RenderSettings(width=640)
    base = png_bytes(render_pages(PROSE, settings).images[0])
    assert png_bytes(render_pages(PROSE + " More.", settings).images[0]) != base
    assert png_bytes(render_pages(PROSE, settings, FOOTER).images[0]) != base


def test_font_info_records_the_packaged_file_and_its_hash() -> None:
    import matplotlib

    info = font_info(RenderSettings())
    assert info["font"] == "DejaVuSans"
    assert Path(info["path"]).name == "DejaVuSans.ttf"
    assert Path(info["path"]).is_relative_to(Path(matplotlib.__file__).parent)
    assert info["sha256"] == hashlib.sha256(Path(info["path"]).read_bytes()).hexdigest()
    assert info["package"] == "matplotlib"
    assert info["package_version"] == matplotlib.__version__
    assert "DejaVuSansMono" in available_fonts()
    mono = font_info(RenderSettings(font="DejaVuSansMono"))
    assert mono["sha256"] != info["sha256"]


@pytest.mark.parametrize("name", ["NoSuchFont", "../ttf/DejaVuSans"])
def test_a_font_that_is_not_found_is_a_clear_error(name: str) -> None:
    with pytest.raises(RenderError, match=rf"font '{__import__('re').escape(name)}' not found "
                                          r"in matplotlib.*available: .*DejaVuSans"):
        render_pages("text", RenderSettings(font=name))


@pytest.mark.parametrize(("key", "value", "message"), [
    ("overflow", "scroll", "'overflow' must be one of"),
    ("width", 0, "'width' must be a positive integer"),
    ("font_size", 12.5, "'font_size' must be a positive integer"),
    ("margin", -1, "'margin' must be an integer >= 0"),
    ("line_spacing", 0.5, "'line_spacing' must be a number >= 1.0"),
    ("max_pages", True, "'max_pages' must be a positive integer"),
    ("width", 100, "too little room for text"),
])
def test_bad_settings_are_rejected_naming_the_key(key: str, value, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        RenderSettings(**{key: value})


def test_settings_round_trip_through_a_dict_and_reject_unknown_keys() -> None:
    settings = RenderSettings(width=800, overflow="paginate", line_spacing=1.5)
    assert RenderSettings.from_dict(settings.as_dict()) == settings
    assert RenderSettings().as_dict() == {
        "width": 1024, "font_size": 20, "margin": 32, "line_spacing": 1.3,
        "font": "DejaVuSans", "max_lines_per_page": 60, "overflow": "truncate", "max_pages": 4,
        "footer_font_size": 18}
    with pytest.raises(RenderError, match=r"unknown render setting\(s\) \['fontsize'\]"):
        RenderSettings.from_dict({"fontsize": 12})


# --- wrapping ------------------------------------------------------------------------------


def test_wrapping_fits_the_width_and_keeps_every_word_in_order() -> None:
    settings = RenderSettings(width=400, margin=20)
    font = _load_font(font_info(settings)["path"], settings.font_size)
    usable = settings.width - 2 * settings.margin
    lines = wrap(PROSE, font, usable)
    assert len(lines) > 3
    assert all(font.getlength(line) <= usable for line in lines)
    assert " ".join(lines).split() == PROSE.split()
    # greedy: the next line's first word would not have fitted on the line before
    for line, nxt in zip(lines, lines[1:]):
        assert font.getlength(f"{line} {nxt.split()[0]}") > usable


def test_wrapping_keeps_paragraphs_blank_lines_and_indentation() -> None:
    font = _load_font(font_info(RenderSettings())["path"], 20)
    text = "First paragraph.\n\nSecond one.\r\n\tindented()\n    four spaces\fpage\u2028end"
    assert wrap(text, font, 900) == ["First paragraph.", "", "Second one.", "    indented()",
                                     "    four spaces", "page", "end"]


@pytest.mark.parametrize("width", [120, 300, 960])
def test_fast_wrapping_gives_the_lines_of_measuring_every_candidate(width: int) -> None:
    from copyprobe.copyright.render import _SPACES, _wrap_exact

    font = _load_font(font_info(RenderSettings())["path"], 20)
    text = "\n".join([PROSE, CODE, (ROOT / "README.md").read_text(encoding="utf-8")])
    expected = []
    for paragraph in text.replace("\t", "    ").rstrip().split("\n"):
        expected += _wrap_exact(_SPACES.split(paragraph.rstrip(" ")), font, width)
    assert len(expected) > 200
    assert wrap(text, font, width) == expected


def test_a_word_wider_than_the_line_is_broken_between_characters() -> None:
    font = _load_font(font_info(RenderSettings())["path"], 20)
    word = "x" * 200
    lines = wrap(f"a {word} b", font, 300)
    assert lines[0] == "a"
    assert "".join(lines[1:]).replace(" ", "") == word + "b"
    assert all(set(line) == {"x"} for line in lines[1:-2])
    assert all(font.getlength(line) <= 300 for line in lines)
    assert len(lines) >= 5


def test_no_ink_falls_in_the_margins() -> None:
    settings = RenderSettings(width=500, margin=40)
    image = render_pages(PROSE + "\n" + "y" * 300, settings, FOOTER).images[0]
    pixels = np.asarray(image)
    ink = pixels < 255
    assert ink[:, 40:460].any()
    # a glyph's anti-aliased edge may reach a pixel past its advance width, no further
    assert not ink[:, :38].any() and not ink[:, 462:].any()
    assert not ink[:38].any() and not ink[-38:].any()


# --- long materials ------------------------------------------------------------------------


def test_truncate_draws_one_page_and_records_the_cut() -> None:
    settings = RenderSettings(max_lines_per_page=10, overflow="truncate")
    result = render_pages(numbered_lines(25), settings)
    assert (len(result.images), result.truncated, result.lines_total, result.lines_drawn) == (
        1, True, 25, 10)
    short = render_pages(numbered_lines(10), settings)
    assert (len(short.images), short.truncated, short.lines_drawn) == (1, False, 10)
    # the page is as tall as its ten lines: margins plus ten line steps
    assert result.images[0].height == 2 * 32 + 10 * round(20 * 1.3)


def test_paginate_draws_up_to_max_pages_then_truncates() -> None:
    settings = RenderSettings(max_lines_per_page=10, overflow="paginate", max_pages=4)
    result = render_pages(numbered_lines(35), settings)
    assert (len(result.images), result.truncated, result.lines_total, result.lines_drawn) == (
        4, False, 35, 35)
    assert [img.height for img in result.images] == [2 * 32 + n * 26 for n in (10, 10, 10, 5)]
    over = render_pages(numbered_lines(50), settings)
    assert (len(over.images), over.truncated, over.lines_total, over.lines_drawn) == (
        4, True, 50, 40)


@pytest.mark.parametrize("text", ["", " \n\t\n"])
def test_empty_text_gives_one_page_without_text(text: str) -> None:
    result = render_pages(text, RenderSettings())
    assert (len(result.images), result.lines_total, result.truncated) == (1, 0, False)
    assert ink_rows(result.images[0]).size == 0


def test_blank_lines_around_the_text_are_dropped() -> None:
    font = _load_font(font_info(RenderSettings())["path"], 20)
    assert wrap("\n  \n  indented\nlast\n\n  \n", font, 900) == ["  indented", "last"]


# --- the footer ----------------------------------------------------------------------------


def test_the_footer_sits_below_the_text_on_every_page_without_overlap() -> None:
    settings = RenderSettings(max_lines_per_page=10, overflow="paginate", footer_font_size=14)
    text = numbered_lines(25)
    plain = render_pages(text, settings).images
    noticed = render_pages(text, settings, FOOTER).images
    assert len(plain) == len(noticed) == 3
    for without, with_ in zip(plain, noticed):
        text_band = without.height - 32  # everything above the bottom margin
        # the text band is drawn exactly as without a footer: the footer took no room from it
        assert np.array_equal(np.asarray(with_)[:text_band], np.asarray(without)[:text_band])
        rows = ink_rows(with_)
        below = rows[rows >= text_band]
        # the rule (2 full-width rows of ink) and then the footer's own line
        assert below.size > 0
        rule = below[:2]
        assert (np.asarray(with_)[rule, 32:-32] == 0).all()
        assert below[2:].size > 0 and below[2] > rule[-1] + 1


def test_a_long_footer_is_wrapped_in_its_own_font_size() -> None:
    settings = RenderSettings(width=400, margin=20, footer_font_size=12)
    long_footer = " ".join([FOOTER] * 4)
    one = render_pages("text", settings, FOOTER).images[0]
    four = render_pages("text", settings, long_footer).images[0]
    step = round(12 * 1.3)
    assert four.height - one.height >= 3 * step
    assert not (np.asarray(four)[:, 380:] < 255).any()  # wrapped, not cut at the margin
    bigger = render_pages("text", RenderSettings(width=400, margin=20, footer_font_size=24),
                          FOOTER).images[0]
    assert bigger.height > one.height


# --- content-addressed files ---------------------------------------------------------------


def test_render_to_files_is_content_addressed_and_not_redrawn(tmp_path: Path) -> None:
    settings = RenderSettings(max_lines_per_page=10, overflow="paginate")
    text = numbered_lines(15)
    pages = render_to_files(text, settings, FOOTER, tmp_path)
    key = render_key(text, settings, FOOTER)
    assert [(Path(p.path).name, p.page, p.pages, p.truncated) for p in pages] == [
        (f"{key}-p1.png", 1, 2, False), (f"{key}-p2.png", 2, 2, False)]
    for p in pages:
        assert p.sha256 == hashlib.sha256(Path(p.path).read_bytes()).hexdigest()
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"{key}-p1.png", f"{key}-p2.png"]
    # a second call keeps the files as they are (an old mtime survives)
    for p in pages:
        os.utime(p.path, ns=(1_000_000_000, 1_000_000_000))
    again = render_to_files(text, settings, FOOTER, tmp_path)
    assert again == pages
    assert [os.stat(p.path).st_mtime_ns for p in again] == [1_000_000_000] * 2
    # a removed page alone is drawn again, to the same bytes
    Path(pages[1].path).unlink()
    redrawn = render_to_files(text, settings, FOOTER, tmp_path)
    assert redrawn == pages
    assert os.stat(pages[0].path).st_mtime_ns == 1_000_000_000
    assert os.stat(pages[1].path).st_mtime_ns != 1_000_000_000
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_key_changes_with_every_input_that_changes_the_pixels() -> None:
    s = RenderSettings()
    keys = {render_key("a", s, None), render_key("b", s, None), render_key("a", s, FOOTER),
            render_key("a", RenderSettings(font_size=21), None),
            render_key("a", RenderSettings(font="DejaVuSerif"), None),
            render_key("a", RenderSettings(overflow="paginate"), None)}
    assert len(keys) == 6
    assert render_key("a", s, None) == render_key("a", RenderSettings(), None)


def test_truncation_is_recorded_in_the_written_pages(tmp_path: Path) -> None:
    pages = render_to_files(numbered_lines(12), RenderSettings(max_lines_per_page=5), None,
                            tmp_path)
    assert [(p.page, p.pages, p.truncated) for p in pages] == [(1, 1, True)]


# --- OCR round trip ------------------------------------------------------------------------


def test_character_error_rate() -> None:
    assert character_error_rate("abcd", "abed") == 0.25
    assert character_error_rate("ab cd", "ab\ncd  ") == 0.0
    assert character_error_rate("ab cd", "ab\ncd", normalise=False) == 0.2
    assert character_error_rate("abc", "") == 1.0
    assert character_error_rate("", "") == 0.0
    assert character_error_rate("", "x") == 1.0
    assert normalise_whitespace(" a\n\n b\t c ") == "a b c"


#: Measured 2026-11-30 (rapidocr-onnxruntime 1.4.4, default settings): prose 0.0065, code
#: documentation 0.0, footer 0.0156 as read ("©" read as "@"), 0.0 counting "@" as "©".
MAX_CER = 0.03


@pytest.mark.slow
@pytest.mark.parametrize(("text", "footer"), [(PROSE, None), (CODE, None),
                                              ("Chapter One", FOOTER)],
                         ids=["prose", "code-docs", "footer"])
def test_ocr_reads_the_rendered_text_back(text: str, footer: str | None) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    result = round_trip(text, RenderSettings(), footer)
    assert result.cer < MAX_CER, result.ocr_text
    if footer is not None:
        assert "Example Press" in result.ocr_text
        assert result.cer_copyright_sign < MAX_CER
