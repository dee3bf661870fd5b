"""The guard (CopyGuard) as the core sees it (:class:`copyprobe.studies.Study`): the ``guard``
and ``base`` keys of a model entry, the ablation variants a guard block asks for, the pairs of
guarded models and their bases, the rows of the guards-compared table (which entry is the
reminder, the input, the output or both; whose generations an output guard reads), the
guard's tables, its commands, and its entry among the generation layer's backend wrappers.

A guarded model names its base, the same model without the guard (``base: <model>``): the
base must exist, have no guard block, and equal the guarded entry but for ``guard`` and
``base``; a guarded model of the copyright study without one is an error."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from copyprobe.config import ConfigError
from copyprobe.generation.base import BACKEND_WRAPPERS
from copyprobe.guard import paths as P
from copyprobe.studies import ReportPage, Study, study_models

#: The checks a guard runs, each switched off in turn by an ablation variant.
GUARD_CHECKS = ("notice", "status", "risk")
#: A guarded model's ``guard`` block switches the wrapper on (a block of the same name).
BACKEND_WRAPPERS.declare("guard", "copyprobe.guard.backend:GuardWrapper")


def guarded(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("guard"))


def expand_ablations(cfg: dict[str, Any]) -> None:
    """A guarded model with ``guard.ablation: true`` brings its ablation: one variant per check,
    ``<name>-no-<check>``, the same entry (its ``base`` too) with that check switched off (an
    entry of that name already in the config is an error). The ``ablation`` key itself is then
    dropped from every guard block: it says which models to run, not how a request is
    guarded."""
    models = cfg["models"]
    for name in list(models):
        guard = models[name].get("guard")
        if not isinstance(guard, dict):
            continue
        if guard.pop("ablation", False):
            if guard.get("input", True) is False:
                raise ConfigError(f"config key 'models.{name}.guard.ablation': the ablation "
                                  "switches the input checks (notice, status, risk) off one at "
                                  "a time, and 'input: false' has switched them all off already")
            for check in GUARD_CHECKS:
                if guard.get(check, True) is False:
                    continue  # already off in the model itself
                variant = f"{name}-no-{check}"
                if variant in models:
                    raise ConfigError(f"config key 'models.{name}.guard.ablation': the variant "
                                      f"'{variant}' it adds is already a model")
                models[variant] = {**copy.deepcopy(models[name]),
                                   "guard": {**copy.deepcopy(guard), check: False}}


def _without_guard(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in ("guard", "base")}


def check_bases(cfg: Mapping[str, Any]) -> None:
    """Each ``base`` names a model without a guard that equals its guarded entry but for the
    guard; a guarded model of the copyright study names one."""
    models = cfg["models"]
    in_study = set(study_models(cfg, "copyright"))
    for name, spec in models.items():
        key = f"models.{name}"
        if "base" not in spec:
            if guarded(spec) and name in in_study:
                bare = _without_guard(spec)
                same = [m for m, s in models.items()
                        if m != name and not guarded(s) and _without_guard(s) == bare]
                hint = f" (the same entry without a guard: {same[0]!r})" if len(same) == 1 else ""
                raise ConfigError(f"config key '{key}.base': required: guarded model {name!r} "
                                  f"names its base, the same model without the guard{hint}")
            continue
        base = spec["base"]
        if not guarded(spec):
            raise ConfigError(f"config key '{key}.base': only a guarded model (with a guard "
                              "block) names a base")
        if base not in models:
            raise ConfigError(f"config key '{key}.base': guarded model {name!r} names base "
                              f"{base!r}, which is not a model")
        if guarded(models[base]):
            raise ConfigError(f"config key '{key}.base': base {base!r} of guarded model "
                              f"{name!r} has a guard block itself")
        mine, theirs = _without_guard(spec), _without_guard(models[base])
        differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
        if differ:
            same = ("backend", "model_id", "model_file")
            what = ("a different backend or model" if any(k in differ for k in same)
                    else "other settings")
            raise ConfigError(f"config key '{key}.base': guarded model {name!r} and its base "
                              f"{base!r} must differ only by the guard; they have {what}: "
                              f"{', '.join(differ)}")


def guard_pairs(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Each guarded model of the copyright study and the base it names (its ``base``)."""
    models = cfg["models"]
    return {m: models[m]["base"] for m in study_models(cfg, "copyright")
            if guarded(models[m]) and "base" in models[m]}


#: The rows of the guards-compared table (copyprobe.guard.compare), in table order.
KINDS = ("none", "reminder", "input", "output", "both")
#: The implicit index of a benchmark's materials (copyrighted and open), when an output block
#: names none.
BENCHMARK_INDEX = "copyright-{benchmark}"


def output_block(guard: Mapping[str, Any]) -> Mapping[str, Any] | None:
    out = guard.get("output")
    if out is None or out is False:
        return None
    return {} if out is True else out


def _input_on(guard: Mapping[str, Any]) -> bool:
    return guard.get("input", True) is not False


def guard_kind(guard: Mapping[str, Any] | None) -> str:
    """The row a (validated) guard block gives: one of :data:`KINDS`."""
    if not guard:
        return "none"
    if output_block(guard) is not None:
        return "both" if _input_on(guard) else "output"
    if _input_on(guard) and all(guard.get(c, True) is False for c in GUARD_CHECKS) \
            and guard.get("policy", "remind") == "remind":
        return "reminder"
    return "input"


def _ablation_variant(name: str, models: Mapping[str, Any]) -> bool:
    return any(name.endswith(f"-no-{c}") and guarded(models.get(name[:-len(f"-no-{c}")], {}))
               for c in GUARD_CHECKS)


def _without_output(guard: Mapping[str, Any]) -> dict[str, Any]:
    g = {k: v for k, v in guard.items() if k != "output"}
    g.setdefault("input", True)
    return g


def compared_rows(cfg: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Per base of the copyright study's guarded models: its rows ``(kind, model)`` in table
    order (the base first as ``none``; kinds as :data:`KINDS`, then by model name)."""
    models = cfg["models"]
    rows: dict[str, list[tuple[str, str]]] = {}
    for name in study_models(cfg, "copyright"):
        spec = models[name]
        if not guarded(spec) or "base" not in spec or _ablation_variant(name, models):
            continue
        rows.setdefault(spec["base"], [("none", spec["base"])]).append(
            (guard_kind(spec["guard"]), name))
    return {b: sorted(r, key=lambda kr: (KINDS.index(kr[0]), kr[1])) for b, r in rows.items()}


def output_sources(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Each output-guarded model of the copyright study (kinds ``output`` and ``both``) and the
    model whose generations its output check reads: the base, or for ``both`` the entry with
    the same base and guard but no ``output`` block. None such is a :class:`ConfigError`."""
    models = cfg["models"]
    out: dict[str, str] = {}
    for name in study_models(cfg, "copyright"):
        spec = models[name]
        if not guarded(spec) or "base" not in spec:
            continue
        kind = guard_kind(spec["guard"])
        if kind == "output":
            out[name] = spec["base"]
        elif kind == "both":
            want = _without_output(spec["guard"])
            same = sorted(m for m, s in models.items()
                          if m != name and guarded(s) and s.get("base") == spec["base"]
                          and output_block(s["guard"]) is None
                          and _without_output(s["guard"]) == want)
            if not same:
                raise ConfigError(
                    f"config key 'models.{name}.guard.output': a guard with input checks and "
                    f"an output block is run over the generations of the same guard without "
                    f"the output block: add a model with base {spec['base']!r} and this guard "
                    "block less 'output' (or set input: false for an output-only guard)")
            out[name] = same[0]
    return out


def check_compared(cfg: Mapping[str, Any]) -> None:
    """The output-guarded models' sources exist (:func:`output_sources`) and are in the study,
    and the span index each output block names is one the config builds (``spans.indexes``,
    which holds every benchmark's ``copyright-<benchmark>``): a misspelt index would otherwise
    surface only as a missing ``index.json`` when the workflow plans its jobs."""
    from copyprobe.spans.config import indexes

    in_study = set(study_models(cfg, "copyright"))
    built = indexes(cfg)
    benchmarks = cfg.get("copyright", {}).get("benchmarks", {})
    for name, source in output_sources(cfg).items():
        if source not in in_study:
            raise ConfigError(f"config key 'models.{source}.studies': {source!r} is the source "
                              f"of output-guarded model {name!r}: it must run the copyright study")
        guard = cfg["models"][name]["guard"]
        for benchmark in benchmarks:
            index = output_index(guard, benchmark)
            if index not in built:
                raise ConfigError(f"config key 'models.{name}.guard.output.index': no span index "
                                  f"{index!r}; the config builds {sorted(built)}")


def output_index(guard: Mapping[str, Any], benchmark: str) -> str:
    """The span index an output guard checks against on a benchmark: the block's ``index``,
    else the benchmark's own materials index (:data:`BENCHMARK_INDEX`)."""
    out = output_block(guard) or {}
    return str(out.get("index") or BENCHMARK_INDEX.format(benchmark=benchmark))


#: The report's row label of each of the guard's tables (P.TABLE_NAMES).
TABLE_LABELS = {
    "table2": "Table 2: guarded against unguarded",
    "table6": "Table 6: guard decisions",
    "ablation": "ablation of the guard's parts",
    "latency": "latency the guard adds",
    "guards_compared": "guards compared: none, reminder, input, output, both",
}


class GuardStudy(Study):
    """The copyright guard: guarded models beside their bases in the copyright study."""

    name = "guard"
    schema_file = "data/schema.yaml"
    rule_file = "rules/guard.smk"
    commands = "copyprobe.guard.cli:add_commands"

    def add_implied(self, cfg: dict[str, Any]) -> None:
        expand_ablations(cfg)

    def check(self, cfg: Mapping[str, Any]) -> None:
        check_bases(cfg)
        check_compared(cfg)

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        spec.pop("base", None)  # which entry a guarded model is compared with, not how it runs
        return {}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        """The guard's tables (Table 2 and its siblings), when a benchmark has pairs."""
        if not (cfg["copyright"]["benchmarks"] and guard_pairs(cfg)):
            return []
        # guards compared, when a model has an output guard (copyprobe.guard.compare)
        return [P.TABLE2, *([P.COMPARED_MD] if output_sources(cfg) else [])]

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        """The pages of the guard's tables (rule copyright_guard_tables makes them all with
        Table 2), listed as the subcategory ``guard`` of the copyright tables."""
        if not self.targets(cfg):
            return {}
        tables = [*P.TABLE_NAMES, *(["guards_compared"] if P.COMPARED_MD in self.targets(cfg)
                                    else [])]
        return {P.PAGE.format(table=t): ReportPage(
            P.TABLE.format(table=t), f"guard_{t}", "Copyright tables",
            {"table": TABLE_LABELS[t]}, subcategory="guard") for t in tables}
