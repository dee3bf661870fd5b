"""The package layout the project relies on: a shared core that never imports a study, and
registries whose declarations name modules and classes that really exist."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "copyprobe"
#: Study packages: only they (and the CLI, which composes them) may import a study.
STUDIES = ("msr", "copyright", "guard")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _shared_modules() -> list[Path]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in STUDIES or rel == Path("cli.py"):
            continue
        out.append(path)
    return out


def test_the_shared_core_never_imports_a_study() -> None:
    modules = _shared_modules()
    assert len(modules) > 20  # the walk found the package
    offenders = {
        str(p.relative_to(PACKAGE)): sorted(m for m in _imports(p)
                                            if m.split(".")[:2][-1] in STUDIES
                                            and m.startswith("copyprobe."))
        for p in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_layout_check_sees_a_study_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from copyprobe.msr.analysis import analyse\nimport copyprobe.msr\n")
    assert _imports(bad) == {"copyprobe.msr.analysis", "copyprobe.msr"}


@pytest.mark.parametrize("registry", ["backends", "sources", "backend wrappers"])
def test_every_declared_part_exists_and_registers_under_its_name(registry: str) -> None:
    if registry == "backends":
        from copyprobe.generation.base import BACKENDS as reg
    elif registry == "backend wrappers":
        from copyprobe.generation.base import BACKEND_WRAPPERS as reg
    else:
        from copyprobe.sources.base import SOURCES as reg
    names = reg.names()
    assert names
    for name in names:
        # get() imports the declared module, whose @register decorator must agree with the
        # declaration (else ValueError / LookupError)
        obj = reg.get(name)
        assert isinstance(obj, type), name
        assert f"{obj.__module__}:{obj.__qualname__}" == reg._declared[name].target


def test_registry_declarations_are_checked_when_imported() -> None:
    from copyprobe.registry import Registry

    reg: Registry[type] = Registry("part")
    reg.declare("decoder", "json:JSONDecoder", fast=True)
    assert "decoder" in reg and reg.facts("decoder") == {"fast": True}
    with pytest.raises(LookupError, match="declared in json, which does not register it"):
        reg.get("decoder")
    reg.declare("other", "collections:OrderedDict")
    with pytest.raises(ValueError, match="declared as collections:OrderedDict"):
        reg.register("other")(dict)
    with pytest.raises(KeyError, match="unknown part 'nope'; known: decoder, other"):
        reg.get("nope")
