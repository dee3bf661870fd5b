"""Input checks shared by the metrics: pairs of strings, a clear error naming the bad row."""

from __future__ import annotations

from collections.abc import Sequence


def check_pairs(what: str, a: Sequence[object], b: Sequence[object],
                names: tuple[str, str] = ("prediction", "reference"),
                ) -> tuple[list[str], list[str]]:
    """``a`` and ``b`` as lists of strings of equal length, or a ValueError/TypeError that names
    the metric (``what``), the row and the side."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"{what}: {len(a)} {names[0]}s but {len(b)} {names[1]}s")
    for i, pair in enumerate(zip(a, b, strict=True)):
        for name, text in zip(names, pair, strict=True):
            if not isinstance(text, str):
                raise TypeError(f"{what}: row {i}: the {name} is {type(text).__name__} "
                                f"{text!r}, not a string")
    return a, b  # type: ignore[return-value]
