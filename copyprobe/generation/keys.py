"""API keys checked before any job starts: a model whose backend needs a key names the
environment variable holding it (``api_key_env``); an unset variable stops the workflow at
start-up, naming the model and the variable (never a value), instead of failing inside each of
its generation jobs. ``api_key_optional: true`` (the ``openai`` backend against a local server
that needs no key) skips the check for that model.

Nothing here imports a backend or a network library: the registry's declarations say which
backends take keys (:func:`~copyprobe.generation.base.backend_facts`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from copyprobe.generation.base import backend_facts

__all__ = ["MissingAPIKey", "check_api_keys", "missing_api_keys"]


class MissingAPIKey(RuntimeError):
    """Models that will run lack their API key; the message names each model and variable."""


def missing_api_keys(models: Mapping[str, Mapping[str, Any]],
                     environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per model whose key variable is unset or empty (in ``environ``, default
    ``os.environ``)."""
    env = os.environ if environ is None else environ
    problems = []
    for name, spec in models.items():
        facts = backend_facts(spec["backend"])
        if facts["api_key_env"] is None:
            continue
        if facts["key_optional"] and spec.get("api_key_optional"):
            continue
        var = spec.get("api_key_env") or facts["api_key_env"]
        if env.get(var):
            continue
        hint = (f"; for a server that needs no key set models.{name}.api_key_optional: true"
                if facts["key_optional"] else "")
        problems.append(f"model {name!r} (backend {spec['backend']}): environment variable "
                        f"{var} is not set; it must hold the API key{hint}")
    return problems


def check_api_keys(models: Mapping[str, Mapping[str, Any]],
                   environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`MissingAPIKey` when a model lacks its key. The workflow calls this once
    the jobs are planned, for the models with a job to run, and not in a dry run (which sends
    nothing, so a run can be planned and a config checked without the keys)."""
    problems = missing_api_keys(models, environ)
    if problems:
        raise MissingAPIKey("API keys missing (no job was started):\n  " + "\n  ".join(problems))
