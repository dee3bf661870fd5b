"""Helpers the materials kinds share: param checks, seeded samples, reading a text file."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from copyprobe.sources.base import SourceError

T = TypeVar("T")


class ItemProblem(Exception):
    """A problem with one item (a file, a URL, a distribution): raised or skipped per
    ``on_error``."""


def int_param(kind: str, params: Mapping[str, Any], key: str, default: int | None,
              minimum: int, allow_none: bool = False) -> int | None:
    """An integer param ``>= minimum`` (or None where allowed); errors name the kind and key."""
    value = params.get(key, default)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        null = " or null" if allow_none else ""
        raise SourceError(f"source {kind}: param {key!r} = {value!r} must be an integer "
                          f">= {minimum}{null}")
    return value


def str_param(kind: str, params: Mapping[str, Any], key: str, default: str | None = None,
              choices: Sequence[str] | None = None) -> str | None:
    """A string param (stripped), optionally one of ``choices``."""
    value = params.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SourceError(f"source {kind}: param {key!r} = {value!r} must be a non-empty string")
    value = value.strip()
    if choices is not None and value not in choices:
        raise SourceError(f"source {kind}: param {key!r} = {value!r} must be one of "
                          f"{', '.join(repr(c) for c in choices)}")
    return value


def str_list_param(kind: str, params: Mapping[str, Any], key: str) -> list[str] | None:
    """A list of non-empty strings (duplicates dropped, order kept), or None when absent."""
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, str) and v.strip() for v in value):
        raise SourceError(f"source {kind}: param {key!r} = {value!r} must be a non-empty list "
                          "of strings")
    return list(dict.fromkeys(v.strip() for v in value))


def resolve_path(kind: str, value: Any, key: str) -> Path:
    """A path param; relative paths resolve against the current directory."""
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise SourceError(f"source {kind}: param {key!r} = {value!r} must be a non-empty path")
    p = Path(value.strip()).expanduser()
    return p if p.is_absolute() else Path.cwd() / p


def seeded_sample(items: Sequence[T], limit: int | None, seed: int | None) -> list[T]:
    """At most ``limit`` of ``items`` (kept in their given order): all when ``limit`` is None
    or not smaller; else ``random.Random(seed).sample`` of the positions, or the first
    ``limit`` when ``seed`` is None."""
    if limit is None or limit >= len(items):
        return list(items)
    if seed is None:
        return list(items[:limit])
    chosen = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in chosen]


def read_text_file(path: Path) -> tuple[bytes, str]:
    """The bytes and the text of a UTF-8 file (newlines unified, stripped).

    Raises :class:`ItemProblem` for a file that is not UTF-8 or holds only whitespace.
    """
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ItemProblem(f"not UTF-8 text (byte {exc.start}: "
                          f"{data[exc.start:exc.start + 1]!r})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise ItemProblem("empty or whitespace-only file")
    return data, text


def readable_title(stem: str) -> str:
    """A title from a file name without extension: underscores become spaces, runs of
    whitespace one space."""
    return re.sub(r"\s+", " ", stem.replace("_", " ")).strip()


def word_count(text: str) -> int:
    return len(text.split())
