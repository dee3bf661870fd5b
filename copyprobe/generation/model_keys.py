"""Per-backend model keys: a key that the model's backend does not read is an error.

Reference: docs/backends.md.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

import yaml

from copyprobe.generation.base import BACKENDS, backend_model_keys

__all__ = ["ModelKeyError", "check_model_keys", "readers"]


class ModelKeyError(ValueError):
    """A model entry sets a key its backend does not read (the message names both)."""


@functools.cache
def _schema_defaults() -> dict[str, Any]:
    text = (files("copyprobe") / "data" / "config_schema.yaml").read_text(encoding="utf-8")
    props = yaml.safe_load(text)["properties"]["models"]["additionalProperties"]["properties"]
    return {k: v["default"] for k, v in props.items() if "default" in v}


def readers(model_key: str) -> list[str]:
    """The backends that declare they read ``model_key`` (sorted)."""
    return [b for b in BACKENDS.names() if model_key in (backend_model_keys(b) or ())]


def check_model_keys(name: str, spec: Mapping[str, Any], key: str | None = None, *,
                     defaults_filled: bool = True) -> None:
    """Raise :class:`ModelKeyError` when model ``name``'s entry ``spec`` sets a key that its
    backend does not read and another backend does. ``key``: the entry's config path (default
    ``models.<name>``), used in the message. ``defaults_filled``: ``spec`` went through schema
    validation, so keys at their schema default pass (see the module text)."""
    key = key or f"models.{name}"
    backend = spec.get("backend")
    if backend not in BACKENDS:
        return  # an unknown backend is reported by the caller, naming the known ones
    own = backend_model_keys(backend)
    if own is None:
        return  # declared without its keys: nothing to check against
    defaults = _schema_defaults() if defaults_filled else {}
    for k in spec:
        if k in own:
            continue
        others = readers(k)
        if not others or (k in defaults and spec[k] == defaults[k]):
            continue
        raise ModelKeyError(
            f"config key '{key}.{k}': backend {backend!r} does not read {k!r} (read by "
            f"{', '.join(others)}); remove it, or use one of those backends")
    inner = spec.get("text_backend")
    if "text_backend" in own and isinstance(inner, Mapping):
        check_model_keys(name, inner, f"{key}.text_backend", defaults_filled=False)
