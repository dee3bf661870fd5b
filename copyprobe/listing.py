"""What is registered, for ``copyprobe list backends|sources|metrics|studies``: one line per
part with its name, the facts its registry declares, the extra it needs and a description.

Nothing heavy is imported: the registries' declarations name each part's module, and that
module's source is read (not run) for its description (the class's docstring, else the
module's: the first sentence) and for the packages it imports, at any level (``if
TYPE_CHECKING:`` aside) and through the copyprobe modules it imports (their packages'
``__init__`` too); :data:`copyprobe.extras.PROVIDERS` maps those packages to extras. So the
listing stays true when a part gains a dependency, in a core install too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from copyprobe.dependencies import module_file
from copyprobe.extras import PROVIDERS

#: the kinds ``copyprobe list`` knows
KINDS = ("backends", "sources", "metrics", "studies")


@dataclass(frozen=True)
class Entry:
    """One registered part: its name, the facts worth a glance, the extras it needs (none:
    the core install has it) and a one-sentence description."""

    name: str
    description: str
    facts: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    #: distributions it needs that no extra of copyprobe installs
    others: tuple[str, ...] = ()

    @property
    def needs(self) -> str:
        """``core``, or the extras (``[local]``) and other distributions to install."""
        return "+".join([f"[{e}]" for e in self.extras] + list(self.others)) or "core"

    def line(self, width: int, needs_width: int) -> str:
        facts = ", ".join(self.facts)
        return f"{self.name:<{width}}  {self.needs:<{needs_width}}  {self.description}" + (
            f" ({facts})" if facts else "")


def _parse(module: str) -> ast.Module | None:
    path = module_file(module)
    return ast.parse(path.read_text(encoding="utf-8")) if path else None


def _walk(node: ast.AST) -> list[ast.AST]:
    """Every node below ``node`` but the bodies of ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            out += [n for x in child.orelse for n in [x, *_walk(x)]]
            continue
        out += [child, *_walk(child)]
    return out


def _imported(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every module ``tree`` imports, at any level (relative imports resolved)."""
    out: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    nodes = _walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base[:len(base) - node.level + 1]
                name = ".".join(parent + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)  # submodules named by from-imports
    # a package found by name without importing it: find_spec("pkg") or find_spec(CONSTANT)
    constants = {n.targets[0].id: n.value.value for n in tree.body
                 if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
                 and isinstance(n.value.value, str)}
    for node in nodes:
        if (isinstance(node, ast.Call) and node.args
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "find_spec"):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                out.add(constants[arg.id])
    return out


@cache
def packages_needed(module: str) -> frozenset[str]:
    """The top-level packages outside copyprobe that ``module`` imports, directly or through
    the copyprobe modules it imports, found by reading their source."""
    seen: set[str] = set()
    found: set[str] = set()
    stack = [module]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = _parse(name)
        if tree is None:
            continue
        path = module_file(name)
        for imp in _imported(tree, name, path is not None and path.name == "__init__.py"):
            top = imp.split(".")[0]
            if top == "copyprobe":  # the module and the packages it runs on the way
                parts = imp.split(".")
                stack += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            elif top:
                found.add(top)
    return frozenset(found)


def extras_needed(modules: Iterable[str]) -> tuple[str, ...]:
    """The fewest extras that install every optional package the ``modules`` import: each
    package, fewest choices first, takes its first extra unless one chosen already has it."""
    options = sorted({PROVIDERS[p][1] for m in modules for p in packages_needed(m)
                      if p in PROVIDERS}, key=lambda extras: (len(extras), extras))
    chosen: list[str] = []
    for extras in options:
        if not set(extras) & set(chosen):
            chosen.append(extras[0])
    return tuple(chosen)


def _first_sentence(doc: str | None) -> str:
    if not doc:
        return ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text).replace("``", "")
    text = re.sub(r"^(Source|Backend) \S+: (\w)", lambda m: m.group(2).upper(), text)
    m = re.match(r"(.+?)\.(\s|$)", text)
    return m.group(1) if m else text


def describe(target: str) -> str:
    """The first sentence of the docstring of ``module:attribute`` (the class's, else the
    module's), read from the source."""
    module, _, attr = target.partition(":")
    tree = _parse(module)
    if tree is None:
        return ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == attr and ast.get_docstring(node):
            return _first_sentence(ast.get_docstring(node))
    return _first_sentence(ast.get_docstring(tree))


def backends() -> list[Entry]:
    from copyprobe.generation.base import BACKENDS, backend_facts
    from copyprobe.generation.logprob_scoring import scoring_facts

    out = []
    for decl in BACKENDS.declarations():
        name, target = decl.name, decl.target
        f = backend_facts(name)
        scores = scoring_facts(name)["scores"]
        facts = ["remote" if f["remote"] else "local", *(["gpu"] if f["gpu"] else []),
                 *(["model_file"] if f["needs_model_file"] else []),
                 *([f"key {f['api_key_env']}" + (" (optional)" if f["key_optional"] else "")]
                   if f["api_key_env"] else []),
                 *(["scores" + (" (with echo_logprobs)" if scores == "echo_logprobs" else "")]
                   if scores else [])]
        out.append(Entry(name, describe(target), tuple(facts),
                         extras_needed([target.split(":")[0]])))
    return out


def sources() -> list[Entry]:
    from copyprobe.sources.base import SOURCES

    out = []
    for decl in SOURCES.declarations():
        shown = [k for k in ("uses_cutoffs", "reads_installed") if decl.facts.get(k)]
        out.append(Entry(decl.name, describe(decl.target), tuple(shown),
                         extras_needed([decl.target.split(":")[0]])))
    return out


@dataclass(frozen=True)
class Metric:
    """A metric as listed: what it scores and the module that computes it."""

    name: str
    scores: str
    module: str
    facts: tuple[str, ...] = ()


#: the metrics of the shared core: MSR's matching modes (msr-score --mode); each study adds
#: its own (copyprobe.copyright.listing), handed to :func:`add_command` by the CLI
METRICS = (
    Metric("msr-paper", "MSR f_k: longest common character substring longer than k words, "
           "once in the document", "copyprobe.matching.paper", ("msr-score --mode paper",)),
    Metric("msr-words", "MSR f_k: longest run of shared words, at least k",
           "copyprobe.matching.words", ("msr-score --mode words",)),
)


def metric_entries(metrics: Iterable[Metric]) -> list[Entry]:
    return [Entry(m.name, m.scores, m.facts, extras_needed([m.module])) for m in metrics]


def metrics() -> list[Entry]:
    return metric_entries(METRICS)


def studies() -> list[Entry]:
    """The registered studies (:data:`copyprobe.studies.STUDIES`), one entry each: its class's
    docstring and the ``copyprobe`` commands it adds, as facts."""
    import argparse

    from copyprobe.studies import studies as registered

    out = []
    for study in registered():
        sub = argparse.ArgumentParser(add_help=False).add_subparsers()
        study.add_commands(sub)
        out.append(Entry(study.name, _first_sentence(type(study).__doc__),
                         tuple(sorted(sub.choices))))
    return out


LISTERS: dict[str, Callable[[], list[Entry]]] = {
    "backends": backends, "sources": sources, "metrics": metrics, "studies": studies}

#: a study's contribution to a listing: a function returning its entries
Lister = Callable[[], list[Entry]]


def render(kind: str, more: Sequence[Lister] = ()) -> str:
    """The listing of ``kind`` (one of :data:`KINDS`), one line per entry; ``more``: the
    studies' listers of that kind, whose entries follow the core's."""
    entries = LISTERS[kind]() + [e for lister in more for e in lister()]
    width = max((len(e.name) for e in entries), default=0)
    needs = max((len(e.needs) for e in entries), default=0)
    return "".join(e.line(width, needs) + "\n" for e in entries)


def cmd_list(args: Any) -> None:
    print(render(args.kind, args.study_listers.get(args.kind, ())), end="")


def add_command(sub: Any, study_listers: Mapping[str, Sequence[Lister]] | None = None) -> None:
    """``copyprobe list KIND`` on the CLI's subparsers; ``study_listers``: kind -> the
    studies' listers (the CLI composes the studies, the core imports none)."""
    p = sub.add_parser("list", help="list the registered backends, sources, metrics or studies",
                       description="List what is registered, one line each: the name, what it "
                                   "needs (core, or the extras to install), a description and "
                                   "the facts its registry declares. Imports no backend.")
    p.add_argument("kind", choices=KINDS, help="what to list")
    p.set_defaults(func=cmd_list, study_listers=dict(study_listers or {}))
