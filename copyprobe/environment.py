"""What a run's results were made with: the environment table of the reproducibility step.

One row per fact, with ``kind`` one of :data:`KINDS`: the Python version, the platform, the
installed version of every package copyprobe depends on (extras included; None where one is
not installed), the sha256 of every file of the copyprobe package and of the workflow
(Snakefile, rule files, workflow scripts), a hash of the resolved config and each model's
weights sha256 (from its ``results/models/<model>.json``). Nothing secret goes in: API keys
live only in the environment, and the config enters as a hash.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.dependencies import PACKAGE, PACKAGE_DIR

KINDS = ("python", "platform", "package", "library_module", "workflow_file", "config",
         "model_file")

ENVIRONMENT = TableSpec(
    "environment",
    pa.schema([("kind", pa.string()), ("name", pa.string()), ("version", pa.string()),
               ("sha256", pa.string())]),
)

#: The workflow's own files, relative to its base folder (where the Snakefile is).
WORKFLOW_PATTERNS = ("Snakefile", "rules/*.smk", "workflow_scripts/*.py")


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def config_digest(config: Mapping[str, Any]) -> str:
    """sha256 of the resolved config as canonical JSON (sorted keys)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _requirement_names() -> list[str]:
    """The distributions copyprobe depends on, extras included, from its installed metadata
    or, where copyprobe runs from a checkout without being installed, its pyproject.toml."""
    try:
        reqs = importlib.metadata.requires(PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        project = tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text())["project"]
        reqs = [*project.get("dependencies", []),
                *(r for group in project.get("optional-dependencies", {}).values()
                  for r in group)]
    names = {re.split(r"[\s<>=!~;\[(@]", r.strip(), maxsplit=1)[0] for r in reqs}
    names.discard(PACKAGE)  # the `all` extra names copyprobe's other extras
    return sorted((n for n in names if n), key=str.lower)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment_facts() -> list[dict[str, str | None]]:
    """The Python, platform and package rows of the process that calls it."""
    libc, libc_version = platform.libc_ver()
    rows: list[dict[str, str | None]] = [
        {"kind": "python", "name": platform.python_implementation(),
         "version": platform.python_version()},
        {"kind": "platform", "name": "system",
         "version": f"{platform.system()} {platform.release()}"},
        {"kind": "platform", "name": "machine", "version": platform.machine()},
    ]
    if libc:
        rows.append({"kind": "platform", "name": libc, "version": libc_version})
    rows.append({"kind": "package", "name": PACKAGE, "version": _version(PACKAGE)})
    rows += [{"kind": "package", "name": n, "version": _version(n)} for n in _requirement_names()]
    return [{**r, "sha256": None} for r in rows]


def package_files(relative_to: str | os.PathLike[str] | None = None) -> list[str]:
    """Every file of the copyprobe package (modules and package data; no caches), sorted;
    paths under ``relative_to`` relative to it, others absolute."""
    start = Path(relative_to).resolve() if relative_to is not None else None
    out = []
    for p in sorted(PACKAGE_DIR.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts or p.suffix in (".pyc", ".pyo"):
            continue
        out.append(str(p.relative_to(start)) if start and p.is_relative_to(start) else str(p))
    return out


def workflow_files(basedir: str | os.PathLike[str]) -> list[str]:
    """The workflow's files under ``basedir`` (:data:`WORKFLOW_PATTERNS`), relative to it."""
    base = Path(basedir)
    return sorted(str(p.relative_to(base)) for pattern in WORKFLOW_PATTERNS
                  for p in base.glob(pattern) if p.is_file())


def _library_name(path: str) -> str:
    """``copyprobe/...`` for a package file wherever the package lies."""
    p = Path(path).resolve()
    return str(p.relative_to(PACKAGE_DIR.parent)) if p.is_relative_to(PACKAGE_DIR) else path


def environment_table(facts: Iterable[Mapping[str, Any]], *, library: Iterable[str],
                      workflow: Iterable[str], config_sha256: str,
                      models: Mapping[str, str | os.PathLike[str]]) -> pd.DataFrame:
    """The environment table: ``facts`` (from :func:`environment_facts`), the sha256 of each
    ``library`` and ``workflow`` file (named relative to the package's parent folder and as
    given), the config's digest and each model's weights sha256 read from its manifest JSON
    (``models``: name -> manifest path; None for a remote model)."""
    rows = [dict(f) for f in facts]
    rows += [{"kind": "library_module", "name": _library_name(p), "version": None,
              "sha256": sha256_file(p)} for p in library]
    rows += [{"kind": "workflow_file", "name": str(p), "version": None,
              "sha256": sha256_file(p)} for p in workflow]
    rows.append({"kind": "config", "name": "resolved config", "version": None,
                 "sha256": config_sha256})
    for name, manifest in sorted(models.items()):
        m = json.loads(Path(manifest).read_text())
        rows.append({"kind": "model_file", "name": name, "version": None,
                     "sha256": m.get("sha256")})
    df = pd.DataFrame(rows, columns=ENVIRONMENT.columns)
    bad = sorted(set(df["kind"]) - set(KINDS))
    if bad:
        raise ValueError(f"environment table: unknown kind(s) {bad}; known: {list(KINDS)}")
    return df
