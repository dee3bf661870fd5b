"""A text cut at its N-th word: the judge's view of a long reply and a benchmark's material
excerpt (``max_words``). Its own module, with no imports of copyprobe, so that the manifest
rule does not depend on the judge's module (and through it on the generation layer)."""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def cut_words(text: str, max_words: int) -> tuple[str, bool]:
    """``text`` up to the end of its ``max_words``-th whitespace-separated word (its own
    spacing and line breaks kept), and whether anything was cut."""
    if max_words < 1:
        raise ValueError(f"the word limit must be at least 1, not {max_words}")
    for i, m in enumerate(_WORD.finditer(text), start=1):
        if i == max_words:
            rest = text[m.end():]
            return text[:m.end()], bool(rest.strip())
    return text, False
