"""The package layout the project relies on, as the README claims it: a shared core that never
imports a study nor names a study's config keys, no import cycle (imports inside functions
included), no import of another package's private names, and registries whose declarations
name modules and classes that really exist."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

PACKAGE = Path(__file__).resolve().parents[1] / "copyprobe"
#: Study packages: only they may import a study.
STUDIES = ("msr", "copyright", "guard", "extraction", "longform", "membership")
#: Imports of another package's private name that are tolerated (none: add one only for a
#: change under way, with the change that removes it)
PRIVATE_ALLOWED: set[tuple[str, str, str]] = set()


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
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] not in STUDIES]


def _package(module: str) -> str:
    """``msr`` for ``copyprobe.msr.study``, ``config`` for ``copyprobe.config``."""
    return (module.split(".") + [""])[1]


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> tuple[dict[str, set[str]],
                                                  list[tuple[str, str, str]]]:
    """Each copyprobe module's imports of copyprobe modules (anywhere in the file, functions
    included; ``from a import b`` counts ``a.b`` when that is a module), and every import of a
    private name (``_x``) from a module of another package: (importer, module, name)."""
    paths = {_module_name(p, package): p for p in package.rglob("*.py")}
    is_package = {m for m, p in paths.items() if p.name == "__init__.py"}
    edges: dict[str, set[str]] = defaultdict(set)
    private = []
    for mod, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[tuple[str, str | None]] = []
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = mod.split(".") if mod in is_package else mod.split(".")[:-1]
                    here = here[:len(here) - node.level + 1]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                targets = [(f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base, a.name)
                           for a in node.names]
            for target, name in targets:
                while target not in paths and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target not in paths or target == mod:
                    continue
                edges[mod].add(target)
                if (name and name.startswith("_") and not name.startswith("__")
                        and target.rsplit(".", 1)[0] != mod.rsplit(".", 1)[0]):
                    private.append((mod, target, name))
    return dict(edges), private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_and_no_private_import_across_packages() -> None:
    edges, private = import_graph()
    assert len(edges) > 40  # the walk found the package
    assert cycles(edges) == []
    assert set(private) <= PRIVATE_ALLOWED, sorted(set(private) - PRIVATE_ALLOWED)


def test_the_graph_check_sees_a_cycle_inside_a_function_and_a_private_import(
        tmp_path: Path) -> None:
    pkg = tmp_path / "copyprobe"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from copyprobe import b\n")
    (pkg / "b.py").write_text("def f():\n    from copyprobe.a import g\n")
    (pkg / "sub" / "c.py").write_text("from copyprobe.b import _hidden\nfrom . import d\n")
    (pkg / "sub" / "d.py").write_text("from .c import _ok_here\n")
    edges, private = import_graph(pkg)
    assert cycles(edges) == [["copyprobe.a", "copyprobe.b"], ["copyprobe.sub.c", "copyprobe.sub.d"]]
    assert private == [("copyprobe.sub.c", "copyprobe.b", "_hidden")]


def _study_keys() -> set[str]:
    """The config keys the studies' schema fragments bring (not also a core key)."""
    from copyprobe.config import SCHEMA_PATH

    core = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))["properties"]
    core_keys = {*core, *core["models"]["additionalProperties"]["properties"]}
    keys = set()
    for study in STUDIES:
        fragment = yaml.safe_load((PACKAGE / study / "data" / "schema.yaml").read_text())
        keys |= {*fragment.get("properties", {}), *fragment.get("model_properties", {})}
    return keys - core_keys


def _config_reads(path: Path, keys: set[str]) -> set[str]:
    """The keys of ``keys`` a module reads from a mapping: ``x["key"]`` or ``x.get("key")``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault") and node.args
              and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        if isinstance(key, str) and key in keys:
            found.add(key)
    return found


def test_no_core_module_reads_a_study_config_key() -> None:
    keys = _study_keys()
    assert {"msr", "datasets", "variants", "copyright", "guard", "base"} <= keys
    offenders = {str(p.relative_to(PACKAGE)): sorted(_config_reads(p, keys))
                 for p in _shared_modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_key_check_sees_a_study_key_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('x = cfg["datasets"]\ny = cfg.get("copyright", {})\nz = cfg["sources"]\n')
    assert _config_reads(bad, {"datasets", "copyright"}) == {"datasets", "copyright"}


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
    # the studies reach the core only as the registry's declarations (strings)
    edges, _ = import_graph()
    core = {m: {t for t in targets if _package(t) in STUDIES}
            for m, targets in edges.items() if _package(m) not in STUDIES}
    assert {m: t for m, t in core.items() if t} == {}


def test_the_layout_check_sees_a_study_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from copyprobe.msr.analysis import analyse\nimport copyprobe.msr\n")
    assert _imports(bad) == {"copyprobe.msr.analysis", "copyprobe.msr"}


def study_interfaces() -> dict[str, set[str]]:
    """Each study's interface (``Study.interface``), as module names."""
    from copyprobe.studies import studies

    return {s.name: {f"copyprobe.{s.name}.{m}" for m in s.interface} for s in studies()}


def undeclared_study_imports(edges: dict[str, set[str]],
                             interfaces: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each study module's imports of another study's modules that are not in that study's
    interface."""
    out = {}
    for mod, targets in edges.items():
        own = _package(mod)
        if own not in STUDIES:
            continue
        bad = sorted(t for t in targets if _package(t) in STUDIES and _package(t) != own
                     and t not in interfaces.get(_package(t), set()))
        if bad:
            out[mod] = bad
    return out


def test_a_study_imports_another_only_through_its_interface() -> None:
    interfaces = study_interfaces()
    assert set(interfaces) == set(STUDIES)
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    # every declared module exists, and is used by another study
    declared = set().union(*interfaces.values())
    assert declared - modules == set()
    edges, _ = import_graph()
    used = {t for m, ts in edges.items() for t in ts if _package(m) in STUDIES
            and _package(t) != _package(m)}
    assert declared - used == set()
    assert undeclared_study_imports(edges, interfaces) == {}


def test_the_interface_check_sees_an_undeclared_study_import() -> None:
    edges = {"copyprobe.guard.compare": {"copyprobe.copyright.analysis",
                                         "copyprobe.copyright.figures", "copyprobe.stats.common",
                                         "copyprobe.guard.paths"},
             "copyprobe.spans.find": {"copyprobe.msr.tables"}}
    got = undeclared_study_imports(edges, {"copyright": {"copyprobe.copyright.analysis"}})
    assert got == {"copyprobe.guard.compare": ["copyprobe.copyright.figures"]}


@pytest.mark.parametrize("registry", ["backends", "sources", "backend wrappers", "studies"])
def test_every_declared_part_exists_and_registers_under_its_name(registry: str) -> None:
    if registry == "backends":
        from copyprobe.generation.base import BACKENDS as reg
    elif registry == "backend wrappers":
        from copyprobe.generation.base import BACKEND_WRAPPERS as reg
        from copyprobe.studies import load_wrapper_studies

        load_wrapper_studies()  # the studies that bring wrappers declare them
    elif registry == "studies":
        from copyprobe.studies import STUDIES as reg
    else:
        from copyprobe.sources.base import SOURCES as reg
    names = reg.names()
    assert names
    for name in names:
        # get() imports the declared module and takes the attribute the declaration names
        obj = reg.get(name)
        assert isinstance(obj, type), name
        assert f"{obj.__module__}:{obj.__qualname__}" == reg._declared[name].target


def test_a_registry_entry_is_declared_once_and_imported_on_first_use() -> None:
    import subprocess
    import sys

    from copyprobe.registry import Registry

    reg: Registry[type] = Registry("part")
    reg.declare("decoder", "json:JSONDecoder", fast=True)
    assert "decoder" in reg and reg.facts("decoder") == {"fast": True}
    import json

    assert reg.get("decoder") is json.JSONDecoder
    with pytest.raises(ValueError, match="'decoder' is registered twice"):
        reg.register("decoder")(dict)
    with pytest.raises(ValueError, match="'decoder' is registered twice"):
        reg.declare("decoder", "json:JSONEncoder")
    reg.declare("gone", "json:NoSuchDecoder")
    with pytest.raises(LookupError, match="declared as json:NoSuchDecoder, which json does not"):
        reg.get("gone")
    with pytest.raises(KeyError, match="unknown part 'nope'; known: decoder, gone"):
        reg.get("nope")
    # nothing in the package registers a declared part a second time
    doubles = [str(p) for p in PACKAGE.rglob("*.py")
               if re.search(r"^@[A-Z_]+\.register\(", p.read_text(), re.M)]
    assert doubles == []
    # a declared backend's module is imported by get(), not by naming the registry
    code = ("import sys; from copyprobe.generation.base import BACKENDS; "
            "assert 'copyprobe.generation.openai_api' not in sys.modules; "
            "BACKENDS.facts('openai'); "
            "assert 'copyprobe.generation.openai_api' not in sys.modules; "
            "BACKENDS.get('openai'); assert 'copyprobe.generation.openai_api' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
