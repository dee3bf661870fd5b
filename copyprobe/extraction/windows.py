"""Sliding windows over a document in the model's own tokens.

Reference: docs/extraction.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Window", "WindowSpec", "cut_windows", "skip_reason"]


@dataclass(frozen=True)
class WindowSpec:
    """Window geometry: prefix and suffix lengths and the stride between window starts, in
    tokens (positive integers; ``ValueError`` naming the field otherwise)."""

    prefix_tokens: int = 50
    suffix_tokens: int = 50
    stride: int = 50

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{f.name} must be a positive integer, got {value!r}")

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None) -> WindowSpec:
        """Build from a config mapping with any of the field names (missing ones take the
        defaults; other keys are ignored: the config schema checks them)."""
        mapping = mapping or {}
        return cls(**{f.name: mapping[f.name] for f in fields(cls) if f.name in mapping})

    @property
    def length(self) -> int:
        """Tokens in one window (prefix plus suffix)."""
        return self.prefix_tokens + self.suffix_tokens

    def count(self, n_tokens: int) -> int:
        """How many whole windows a text of ``n_tokens`` tokens has."""
        if n_tokens < self.length:
            return 0
        return (n_tokens - self.length) // self.stride + 1


@dataclass(frozen=True)
class Window:
    """One window: its 0-based ``index`` in the document, the token offset ``start`` of its
    prefix's first token, and the prefix and suffix token ids."""

    index: int
    start: int
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]

    @property
    def suffix_start(self) -> int:
        """Token offset of the suffix's first token in the document."""
        return self.start + len(self.prefix_ids)


def cut_windows(token_ids: Sequence[int], spec: WindowSpec) -> list[Window]:
    """The whole windows of ``token_ids`` under ``spec``, in document order (empty when the
    text is shorter than one window)."""
    ids = tuple(int(t) for t in token_ids)
    out = []
    for index in range(spec.count(len(ids))):
        start = index * spec.stride
        middle = start + spec.prefix_tokens
        out.append(Window(index=index, start=start, prefix_ids=ids[start:middle],
                          suffix_ids=ids[middle:middle + spec.suffix_tokens]))
    return out


def skip_reason(n_tokens: int, spec: WindowSpec) -> str | None:
    """Why a text of ``n_tokens`` tokens gives no window (``None`` when it gives one)."""
    if n_tokens >= spec.length:
        return None
    return (f"{n_tokens} tokens, fewer than one window of "
            f"{spec.prefix_tokens}+{spec.suffix_tokens}")
