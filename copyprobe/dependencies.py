"""The copyprobe source files a workflow script depends on.

Reference: docs/reproducibility.md.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "copyprobe"
#: The package's folder (the copy that is imported, so a copy put first on ``sys.path`` is
#: the one analysed).
PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class _Declared:
    kind: str  # the registry's kind (``Registry("backend")``), else its variable's name
    name: str
    module: str


@dataclass(frozen=True)
class _Parsed:
    imports: tuple[str, ...]  # candidate copyprobe module names (may name non-modules)
    declared: tuple[_Declared, ...]
    data: tuple[Path, ...]


def module_file(name: str) -> Path | None:
    """The source file of copyprobe module ``name`` (a package's ``__init__.py``), or None
    where ``name`` is not a copyprobe module (an attribute, another package)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py") if len(parts) > 1 else None,
                      base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node``, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@functools.cache
def _parse(path: Path, package: str | None) -> _Parsed:
    """Imports, registry declarations and named data files of one file. ``package`` is the
    package relative imports start from (None for a script outside the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imports: list[str] = []
    registries: dict[str, str] = {}
    declared: list[_Declared] = []
    strings: list[str] = []
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            imports.append(base)
            imports += [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            func = node.value.func
            fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if fname == "Registry" and node.value.args and _str(node.value.args[0]):
                for t in targets:
                    if isinstance(t, ast.Name):
                        registries[t.id] = _str(node.value.args[0])  # type: ignore[assignment]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "declare" and isinstance(node.func.value, ast.Name)
              and len(node.args) >= 2 and _str(node.args[0]) and _str(node.args[1])):
            target = _str(node.args[1]) or ""
            if ":" in target:
                declared.append(_Declared(node.func.value.id, _str(node.args[0]) or "",
                                          target.split(":", 1)[0]))
        else:
            s = _str(node)
            if s and len(s) < 200 and "." in s and " " not in s:
                strings.append(s)
    declared = [_Declared(registries.get(d.kind, d.kind), d.name, d.module) for d in declared]
    data: list[Path] = []
    if package is not None:
        folder = path.parent
        for s in strings:
            for candidate in (folder / s, folder / "data" / s):
                if candidate.suffix != ".py" and candidate.is_file():
                    data.append(candidate.resolve())
    return _Parsed(tuple(imports), tuple(declared), tuple(sorted(set(data))))


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


_Selection = tuple[tuple[str, tuple[str, ...]], ...]


def _freeze(select: Mapping[str, Collection[str]] | None) -> _Selection:
    return tuple(sorted((k, tuple(sorted(v))) for k, v in (select or {}).items()))


@functools.cache
def _dependencies(script: Path, select: _Selection) -> tuple[Path, ...]:
    chosen = dict(select)
    found: dict[str, Path] = {}
    files: set[Path] = set()
    inside = script.is_relative_to(PACKAGE_DIR)
    todo: list[tuple[Path, str | None]] = [
        (script, _package_of(script) if inside else None)]
    while todo:
        path, package = todo.pop()
        parsed = _parse(path, package)
        files.update(parsed.data)
        wanted = list(parsed.imports)
        wanted += [d.module for d in parsed.declared
                   if d.kind not in chosen or d.name in chosen[d.kind]]
        for name in wanted:
            for mod in [*_parents(name), name]:
                if mod in found:
                    continue
                f = module_file(mod)
                if f is None:
                    continue
                found[mod] = f
                todo.append((f, _package_of(f)))
    files.update(found.values())
    return tuple(sorted(files))


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def script_dependencies(script: str | os.PathLike[str],
                        select: Mapping[str, Collection[str]] | None = None,
                        *, relative_to: str | os.PathLike[str] | None = None) -> list[str]:
    """The copyprobe files (modules and package data) that ``script`` depends on, sorted.

    ``select`` narrows the registries the closure reaches to the parts a job uses, by the
    registry's kind (``{"backend": ["llamacpp"], "backend wrapper": []}``); a registry not
    named there brings every part it declares. Paths under ``relative_to`` are given relative
    to it (Snakemake's working directory, so the plan does not depend on where the checkout
    lies), others absolute.
    """
    path = Path(script).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"workflow script {script} does not exist")
    deps = _dependencies(path, _freeze(select))
    start = Path(relative_to).resolve() if relative_to is not None else None
    out = []
    for f in deps:
        if f == path:
            continue
        out.append(str(f.relative_to(start)) if start and f.is_relative_to(start) else str(f))
    return out


def model_parts(spec: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """The generation registries' parts a model's config slice uses: every backend it names
    (its own, and nested ones such as an OCR cascade's text backend or a guard's judge) and
    the backend wrappers it switches on, and the studies that declare those wrappers. A job
    of this model depends on only these parts' modules (None: no model, no parts)."""
    from copyprobe.generation.base import backend_wrappers
    from copyprobe.studies import wrapper_studies

    backends: set[str] = set()

    def visit(obj: Any) -> None:
        if isinstance(obj, Mapping):
            if isinstance(obj.get("backend"), str):
                backends.add(obj["backend"])
            for v in obj.values():
                visit(v)
        elif isinstance(obj, list | tuple):
            for v in obj:
                visit(v)

    visit(spec or {})
    wrappers = backend_wrappers(spec) if spec else []
    return {"backend": sorted(backends), "backend wrapper": wrappers,
            "study": wrapper_studies(wrappers) if wrappers else []}
