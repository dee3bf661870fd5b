"""Does a rendered page read back as its text? Character error rate of an OCR round trip.

The OCR is the one the offline ``ocr_cascade`` backend uses (RapidOCR, images upscaled 2x,
``use_cls=False``), so the check measures what that cascade will see. RapidOCR reads the
copyright sign as ``"@"``; :func:`round_trip` reports the rate both as read and with ``"@"``
counted as ``"©"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from copyprobe.copyright.render import RenderSettings, png_bytes, render_pages

_WHITESPACE = re.compile(r"\s+")


def normalise_whitespace(text: str) -> str:
    """Runs of whitespace (line breaks included) as one space, ends stripped: OCR returns the
    drawn lines, whose breaks need not be where the source text has them."""
    return _WHITESPACE.sub(" ", text).strip()


def character_error_rate(reference: str, hypothesis: str, *, normalise: bool = True) -> float:
    """Levenshtein distance (insertions, deletions, substitutions of characters) from
    ``reference`` to ``hypothesis`` divided by the reference's length, after
    :func:`normalise_whitespace` of both unless ``normalise`` is false. An empty reference
    gives 0.0 when the hypothesis is empty too, else 1.0."""
    if normalise:
        reference, hypothesis = normalise_whitespace(reference), normalise_whitespace(hypothesis)
    if not reference:
        return 0.0 if not hypothesis else 1.0
    return Levenshtein.distance(reference, hypothesis) / len(reference)


@dataclass(frozen=True)
class RoundTrip:
    """The text read back from the rendered pages and its character error rates."""

    ocr_text: str
    cer: float
    cer_copyright_sign: float  # with every "@" read counted as "©"


def round_trip(text: str, settings: RenderSettings | None = None,
               footer: str | None = None) -> RoundTrip:
    """Render ``text`` (and ``footer``), OCR every page, and compare with the text followed by
    the footer (a truncated render's missing text counts as deleted characters)."""
    from copyprobe.ocr import ocr_image

    result = render_pages(text, settings, footer)
    read = "\n".join(ocr_image(png_bytes(image)) for image in result.images)
    expected = text if footer is None else f"{text}\n{footer}"
    cer = character_error_rate(expected, read)
    fixed = character_error_rate(expected, read.replace("@", "©")) if "©" in expected else cer
    return RoundTrip(ocr_text=read, cer=cer, cer_copyright_sign=fixed)
