"""Deterministic rendering of a material's text (and an image notice) to PNG pages with Pillow.

Reference: docs/copyright-rendering.md.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import io
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont, features

from copyprobe.store import KeyedStore, content_key

#: Bumped whenever a change to this module changes the pixels or bytes of a rendered page, so
#: content-addressed files drawn by an older renderer are not reused.
RENDERER_VERSION = "1"

#: The Python package whose data folder holds the fonts, and that folder inside it.
FONT_PACKAGE = "matplotlib"
FONT_DIR = ("mpl-data", "fonts", "ttf")

#: Fixed PNG encoder options (no ``optimize``: its search is deterministic, but slower).
PNG_OPTIONS = {"format": "PNG", "compress_level": 6, "optimize": False}

OVERFLOW = ("truncate", "paginate")
TAB = "    "
BACKGROUND = 255  # white, 8-bit greyscale
INK = 0  # black
RULE_WIDTH = 2  # pixels, the line between the text and the footer


class RenderError(ValueError):
    """Bad render settings or a font that cannot be found."""


@dataclass(frozen=True)
class RenderSettings:
    """How a material is drawn. Every field is part of the rendered files' content address."""

    width: int = 1024
    font_size: int = 20
    margin: int = 32
    line_spacing: float = 1.3
    font: str = "DejaVuSans"
    max_lines_per_page: int = 60
    overflow: str = "truncate"
    max_pages: int = 4
    footer_font_size: int = 18

    def __post_init__(self) -> None:
        for key in ("width", "font_size", "max_lines_per_page", "max_pages", "footer_font_size"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RenderError(f"render setting {key!r} must be a positive integer, "
                                  f"got {value!r}")
        if isinstance(self.margin, bool) or not isinstance(self.margin, int) or self.margin < 0:
            raise RenderError(f"render setting 'margin' must be an integer >= 0, "
                              f"got {self.margin!r}")
        if (isinstance(self.line_spacing, bool)
                or not isinstance(self.line_spacing, (int, float))
                or not math.isfinite(self.line_spacing) or self.line_spacing < 1.0):
            raise RenderError(f"render setting 'line_spacing' must be a number >= 1.0, "
                              f"got {self.line_spacing!r}")
        if self.overflow not in OVERFLOW:
            raise RenderError(f"render setting 'overflow' must be one of {OVERFLOW}, "
                              f"got {self.overflow!r}")
        if self.width - 2 * self.margin < 4 * max(self.font_size, self.footer_font_size):
            raise RenderError(f"render settings leave too little room for text: width "
                              f"{self.width} minus twice the margin {self.margin} is under four "
                              f"times the font size")
        if not isinstance(self.font, str) or not self.font:
            raise RenderError(f"render setting 'font' must be a font name, got {self.font!r}")

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (JSON-serialisable; the keys are the field names)."""
        out = dataclasses.asdict(self)
        out["line_spacing"] = float(out["line_spacing"])
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> RenderSettings:
        """Settings from a mapping such as a config slice; unknown keys are an error naming
        them, missing keys take the defaults."""
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise RenderError(f"unknown render setting(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class RenderResult:
    """The drawn pages and what was left out."""

    images: list[Image.Image]
    truncated: bool
    lines_total: int
    lines_drawn: int


@dataclass(frozen=True)
class RenderedPage:
    """One PNG written by :func:`render_to_files`; ``sha256`` is that of the file's bytes."""

    path: str
    sha256: str
    page: int
    pages: int
    truncated: bool


# ---------------------------------------------------------------------------------------------
# The font


def _font_dir() -> Path:
    spec = importlib.util.find_spec(FONT_PACKAGE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise RenderError(f"the font package {FONT_PACKAGE!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*FONT_DIR)


def available_fonts() -> list[str]:
    """The font names :class:`RenderSettings` accepts (the TTF files' stems)."""
    folder = _font_dir()
    return sorted(p.stem for p in folder.glob("*.ttf")) if folder.is_dir() else []


@functools.lru_cache(maxsize=None)
def _font_record(name: str) -> dict[str, str]:
    path = _font_dir() / f"{name}.ttf"
    if "/" in name or "\\" in name or not path.is_file():
        raise RenderError(f"font {name!r} not found in {FONT_PACKAGE}'s "
                          f"{'/'.join(FONT_DIR)}; available: {', '.join(available_fonts())}")
    return {"font": name, "path": str(path),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "package": FONT_PACKAGE,
            "package_version": importlib.metadata.version(FONT_PACKAGE)}


def font_info(settings: RenderSettings) -> dict[str, str]:
    """The font file drawn with: name, path, sha256, and the package (and version) shipping it."""
    return dict(_font_record(settings.font))


@functools.lru_cache(maxsize=64)
def _load_font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)


def engine_versions() -> dict[str, str]:
    """The versions of the libraries that draw and encode the pages."""
    return {"renderer": RENDERER_VERSION, "pillow": importlib.metadata.version("pillow"),
            "freetype2": str(features.version("freetype2")),
            "zlib": str(features.version("zlib"))}


# ---------------------------------------------------------------------------------------------
# Layout

_SPACES = re.compile(r"( +)")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ ]*\n)+")


def _break_word(word: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """``word`` cut into pieces that each fit ``width`` (at least one character per piece)."""
    pieces = []
    while word:
        lo, hi = 1, len(word)  # the longest prefix that fits, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if font.getlength(word[:mid]) <= width:
                lo = mid
            else:
                hi = mid - 1
        pieces.append(word[:lo])
        word = word[lo:]
    return pieces


def _wrap_exact(parts: list[str], font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """Greedy wrapping of one paragraph's ``parts`` (word, spaces, word, ...), measuring every
    candidate line with ``getlength``."""
    lines: list[str] = []
    line = parts[0]
    if line and font.getlength(line) > width:
        *done, line = _break_word(line, font, width)
        lines.extend(done)
    for i in range(1, len(parts), 2):
        spaces, word = parts[i], parts[i + 1]
        candidate = line + spaces + word
        if font.getlength(candidate) <= width:
            line = candidate
            continue
        if line.strip():
            lines.append(line)
        line = word  # a line that held only indentation starts with the word instead
        if font.getlength(line) > width:
            *done, line = _break_word(line, font, width)
            lines.extend(done)
    lines.append(line)
    return lines


def _wrap_summed(parts: list[str], font: ImageFont.FreeTypeFont, width: float,
                 widths: dict[str, float]) -> list[str]:
    """:func:`_wrap_exact`, with a line's width taken as the sum of its words' and spaces'
    widths (each word measured once): many times faster on long texts."""
    def length(piece: str) -> float:
        if piece not in widths:
            widths[piece] = font.getlength(piece)
        return widths[piece]

    lines: list[str] = []
    line = [parts[0]]
    used = length(parts[0]) if parts[0] else 0.0
    if used > width:
        *done, last = _break_word(parts[0], font, width)
        lines.extend(done)
        line, used = [last], length(last)
    for i in range(1, len(parts), 2):
        spaces, word = parts[i], parts[i + 1]
        grown = used + len(spaces) * length(" ") + length(word)
        if grown <= width:
            line += [spaces, word]
            used = grown
            continue
        if "".join(line).strip():
            lines.append("".join(line))
        line, used = [word], length(word)
        if used > width:
            *done, last = _break_word(word, font, width)
            lines.extend(done)
            line, used = [last], length(last)
    lines.append("".join(line))
    return lines


def wrap(text: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """``text`` as lines no wider than ``width`` pixels in ``font``: every line end starts a line
    (blank lines kept), words are never split unless one alone is too wide, the spaces at a
    break are dropped, a paragraph's leading indentation is kept. Blank lines before the first
    and after the last line of text are dropped; a text of only whitespace has no lines.

    Lines are first laid out by summing word widths; a paragraph in which a finished line then
    measures wider than ``width`` (kerning across a space would do that) is laid out again
    measuring every candidate line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", TAB)
    text = _LEADING_BLANK_LINES.sub("", text.rstrip())
    lines: list[str] = []
    if not text:
        return lines
    widths: dict[str, float] = {}
    for paragraph in text.splitlines():  # also at \v, \f, U+2028 and the other line ends
        parts = _SPACES.split(paragraph.rstrip(" "))  # word, spaces, ... ('' first if indented)
        done = _wrap_summed(parts, font, width, widths)
        if any(font.getlength(line) > width for line in done):
            done = _wrap_exact(parts, font, width)
        lines.extend(done)
    return lines


@dataclass(frozen=True)
class _Layout:
    pages: list[list[str]]
    footer: list[str]
    truncated: bool
    lines_total: int
    lines_drawn: int


def _layout(text: str, settings: RenderSettings, footer: str | None) -> _Layout:
    path = _font_record(settings.font)["path"]
    usable = settings.width - 2 * settings.margin
    lines = wrap(text, _load_font(path, settings.font_size), usable)
    foot = (wrap(footer, _load_font(path, settings.footer_font_size), usable)
            if footer is not None and footer.strip() else [])
    per = settings.max_lines_per_page
    limit = per if settings.overflow == "truncate" else per * settings.max_pages
    kept = lines[:limit]
    pages = [kept[i:i + per] for i in range(0, len(kept), per)] or [[]]
    return _Layout(pages=pages, footer=foot, truncated=len(lines) > limit,
                   lines_total=len(lines), lines_drawn=len(kept))


def _line_height(size: int, spacing: float) -> int:
    return max(1, round(size * spacing))


def _draw_page(lines: list[str], footer: list[str], settings: RenderSettings) -> Image.Image:
    path = _font_record(settings.font)["path"]
    font = _load_font(path, settings.font_size)
    step = _line_height(settings.font_size, settings.line_spacing)
    text_height = len(lines) * step
    footer_height = 0
    if footer:
        foot_font = _load_font(path, settings.footer_font_size)
        foot_step = _line_height(settings.footer_font_size, settings.line_spacing)
        gap = settings.footer_font_size  # blank space above and below the rule
        footer_height = 2 * gap + RULE_WIDTH + len(footer) * foot_step
    height = 2 * settings.margin + text_height + footer_height
    image = Image.new("L", (settings.width, max(height, 1)), BACKGROUND)
    draw = ImageDraw.Draw(image)
    x = settings.margin
    y = settings.margin
    for line in lines:
        if line:
            draw.text((x, y), line, font=font, fill=INK)
        y += step
    if footer:
        y = settings.margin + text_height + gap
        draw.rectangle([x, y, settings.width - settings.margin - 1, y + RULE_WIDTH - 1],
                       fill=INK)
        y += RULE_WIDTH + gap
        for line in footer:
            if line:
                draw.text((x, y), line, font=foot_font, fill=INK)
            y += foot_step
    return image


def render_pages(text: str, settings: RenderSettings | None = None,
                 footer: str | None = None) -> RenderResult:
    """Draw ``text`` (with ``footer`` under a rule at the bottom of every page, when given)."""
    settings = settings or RenderSettings()
    layout = _layout(text, settings, footer)
    images = [_draw_page(page, layout.footer, settings) for page in layout.pages]
    return RenderResult(images=images, truncated=layout.truncated,
                        lines_total=layout.lines_total, lines_drawn=layout.lines_drawn)


def png_bytes(image: Image.Image) -> bytes:
    """``image`` as PNG bytes, with the fixed encoder options and no metadata."""
    buf = io.BytesIO()
    image.save(buf, **PNG_OPTIONS)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Content-addressed files


def render_key(text: str, settings: RenderSettings, footer: str | None) -> str:
    """sha256 over the text, footer, settings, font file, renderer version and the versions of
    Pillow, FreeType and zlib: equal keys mean byte-identical pages."""
    payload = {"text": text, "footer": footer, "settings": settings.as_dict(),
               "font_sha256": _font_record(settings.font)["sha256"],
               "engine": engine_versions()}
    return content_key(payload)


def render_to_files(text: str, settings: RenderSettings | None, footer: str | None,
                    out_dir: str | os.PathLike[str]) -> list[RenderedPage]:
    """Render into ``out_dir`` as ``<render_key>-p<page>.png`` (pages from 1); a page whose file
    already exists is not drawn again. Files are written to a temporary name and renamed."""
    settings = settings or RenderSettings()
    store = KeyedStore(out_dir, suffix=".png", shard=0)
    key = render_key(text, settings, footer)
    layout = _layout(text, settings, footer)
    n = len(layout.pages)
    pages = []
    for number, lines in enumerate(layout.pages, start=1):
        page_key = f"{key}-p{number}"
        data = store.get_bytes(page_key)
        if data is None:
            data = png_bytes(_draw_page(lines, layout.footer, settings))
            store.put_bytes(page_key, data)
        path = store.path(page_key)
        pages.append(RenderedPage(path=str(path), sha256=hashlib.sha256(data).hexdigest(),
                                  page=number, pages=n, truncated=layout.truncated))
    return pages
