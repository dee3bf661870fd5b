"""Studies: the packages that bring a config block, its checks, workflow targets, a rule file
and CLI commands (``msr``, ``copyright``, the ``guard`` defense, ``extraction``, ``membership``, and those that
come next).

The core (:mod:`copyprobe.config`, the CLI, ``rules/common.smk``) never names a study: it asks
each registered study, in :data:`STUDIES` order, for the part it owns. Adding a study is one
package with a :class:`Study` subclass, one ``STUDIES.declare`` line here and one rule file.
A study is declared, so only the studies' light ``study`` modules are imported to validate a
config; a study class imports its heavy modules inside its methods.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from copyprobe.registry import Registry


@dataclass(frozen=True)
class ReportPage:
    """An HTML page of the report, made from one table by rule report_page (one job per
    page, rules/report.smk), and where the report lists it."""

    #: the table it shows: a Markdown file (its notes included) or the environment's Parquet
    table: str
    #: the section of report/report_page.rst (the rule's one caption template) that says what
    #: the page shows; the template dispatches on it
    caption: str
    #: the report's menu: the category, and the row's labels (column -> value)
    category: str
    labels: Mapping[str, str]
    #: the subcategory (None: the category has none)
    subcategory: str | None = None
    #: what the caption reads beside the config, such as the page's benchmark or model
    facts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedRequests:
    """Requests a study will send to one model for one part of one run, planned from the
    config alone (``copyprobe cost``, :mod:`copyprobe.cost`): how many, and the tokens of each
    (prompt: estimated from word counts; completion: the most the decoding allows)."""

    #: the model: a ``models`` name, or an extra model's name (``copyright.judge``)
    model: str
    #: its slice (backend, model_id, price, decoding)
    spec: Mapping[str, Any]
    #: the run (a variant, a benchmark) and the part of it (a source, a dataset)
    run: str
    part: str
    #: None: not known from the config (a source without a ``limit``: give its count)
    calls: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    #: a likelier count than ``calls`` where calls is a worst case (Monte Carlo sampling)
    expected_calls: int | None = None
    #: why calls is None, or what it assumes
    note: str = ""


class Study:
    """What a study declares. Every hook has a do-nothing default; ``cfg`` is the validated
    config (defaults filled in)."""

    #: the name a model lists in its ``studies`` (when :attr:`runs_models`) and the registry's
    name: ClassVar[str]
    #: the study's schema fragment, package data of the study's own package (``data/...``):
    #: ``properties`` (top-level config blocks) and ``model_properties`` (keys of a model entry)
    schema_file: ClassVar[str | None] = None
    #: its Snakemake rule file, relative to the workflow's folder (or absolute)
    rule_file: ClassVar[str | None] = None
    #: models join the study by listing its name in ``studies``
    runs_models: ClassVar[bool] = False
    #: a model that sets no ``studies`` is in this study
    default_for_models: ClassVar[bool] = False
    #: ``"module:function"`` that adds the study's ``copyprobe`` sub-commands to a
    #: sub-parsers action (named, not imported: a job that loads the studies does not depend
    #: on their command-line code)
    commands: ClassVar[str | None] = None
    #: ``copyprobe list`` kind -> ``"module:function"`` returning the study's entries of that
    #: kind (:class:`copyprobe.listing.Entry`), listed after the core's
    listers: ClassVar[Mapping[str, str]] = {}
    #: the study's interface: the modules of its package (``paths``, ``metrics.rouge``) that
    #: another study may import; tests/test_layout.py checks that studies import nothing else
    #: of each other
    interface: ClassVar[tuple[str, ...]] = ()
    #: the generation sources whose prompts tables the study makes (with its checkpoint
    #: :attr:`prompts_checkpoint`): those whose name starts with this prefix
    #: (``"copyright."``), or ``""``: the corpus sources (config ``sources``); None: none
    prompts_prefix: ClassVar[str | None] = None
    prompts_checkpoint: ClassVar[str | None] = None

    def schema(self) -> dict[str, Any]:
        """The study's schema fragment (empty without :attr:`schema_file`)."""
        if self.schema_file is None:
            return {}
        folder = Path(sys.modules[type(self).__module__].__file__ or ".").parent
        return yaml.safe_load((folder / self.schema_file).read_text(encoding="utf-8")) or {}

    def add_implied(self, cfg: dict[str, Any]) -> None:
        """Add what the config implies, before any check (e.g. the models a setting implies)."""

    def check(self, cfg: Mapping[str, Any]) -> None:
        """Raise :class:`copyprobe.config.ConfigError`, naming the key, for what the schema
        cannot check."""

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        """Take the study's keys out of a model's slice ``spec`` (a copy) and return the
        entries the study adds to it."""
        return {}

    def variants(self, cfg: Mapping[str, Any]) -> list[str]:
        """The named runs a model may make beside :data:`copyprobe.config.MAIN`."""
        return []

    def slice_run(self, cfg: Mapping[str, Any], model: str, variant: str,
                  spec: dict[str, Any]) -> None:
        """Apply a run's overrides (its ``{variant}``) to a model's slice, in place."""

    def prompts_wildcards(self, source: str, wildcards: Mapping[str, str]) -> dict[str, str]:
        """The wildcards of :attr:`prompts_checkpoint` for a generation job's."""
        return {key: wildcards[key] for key in wildcards.keys()}

    def prompts_table(self, source: str, wildcards: Mapping[str, str]) -> str:
        """The prompts table of a generation job's (model, variant, source), at the study's
        own path (what :attr:`prompts_checkpoint` writes)."""
        raise NotImplementedError(f"study {self.name!r} makes no prompts table")

    def extra_models(self, cfg: Mapping[str, Any], rules: set[str]) -> dict[str, Any]:
        """Model entries the study runs outside ``models`` (e.g. a judge), by a name for
        messages, when one of ``rules`` (the rules of the jobs to run) uses them."""
        return {}

    def model_inputs(self, cfg: Mapping[str, Any], model: str) -> list[str]:
        """Files one of the study's jobs makes that a model's weights are (a trained model):
        inputs of the model's prepare step, so that every job of the model waits for them."""
        return []

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """What ``copyprobe validate-config`` lists of the study's block."""
        return {}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        """The files the workflow's default target makes for this study."""
        return []

    def printed_tables(self, cfg: Mapping[str, Any]) -> dict[str, str | tuple[str, ...]]:
        """The tables printed after a successful run that (re)made them: the rule that makes
        each -> its Markdown file (or files), ``{wildcard}`` placeholders filled from each job
        that ran (the Snakefile's one ``onsuccess`` handler prints them)."""
        return {}

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        """The report's HTML page (its path, under ``results/report/``) of each table that
        :meth:`targets` makes."""
        return {}

    def planned_requests(self, cfg: Mapping[str, Any],
                         documents: Mapping[str, int | None]) -> list[PlannedRequests]:
        """The requests a full run of the study sends (its cost estimate), given the most
        documents each source gives (``documents``: source -> count, None when unknown)."""
        return []

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        """Add the study's ``copyprobe`` sub-commands (those :attr:`commands` names)."""
        if self.commands is not None:
            module, function = self.commands.split(":")
            getattr(importlib.import_module(module), function)(sub)

    def lister(self, kind: str) -> Callable[[], list[Any]] | None:
        """The study's contribution to ``copyprobe list KIND`` (see :attr:`listers`)."""
        target = self.listers.get(kind)
        if target is None:
            return None
        module, function = target.split(":")
        return getattr(importlib.import_module(module), function)


STUDIES: Registry[type[Study]] = Registry("study")
STUDIES.declare("msr", "copyprobe.msr.study:MSRStudy")
STUDIES.declare("copyright", "copyprobe.copyright.study:CopyrightStudy")
# A study that declares a generation backend wrapper says so (``backend_wrappers``): the
# generation layer loads only those studies, and a job depends only on its wrappers' studies.
STUDIES.declare("guard", "copyprobe.guard.study:GuardStudy", backend_wrappers=("guard",))
STUDIES.declare("extraction", "copyprobe.extraction.study:ExtractionStudy")
STUDIES.declare("longform", "copyprobe.longform.study:LongformStudy")
STUDIES.declare("membership", "copyprobe.membership.study:MembershipStudy")


def print_tables(registered: Iterable[Study], cfg: Mapping[str, Any],
                 jobs_run: Iterable[tuple[str, Any]]) -> None:
    """After a successful run, print (Markdown) each study's table whose rule ran
    (:meth:`Study.printed_tables`), study by study."""
    jobs = list(jobs_run)
    for study in registered:
        for rule, patterns in study.printed_tables(cfg).items():
            tables = dict.fromkeys(pattern.format(**dict(wildcards or {}))
                                   for pattern in ((patterns,) if isinstance(patterns, str)
                                                   else patterns)
                                   for name, wildcards in jobs if name == rule)
            for table in tables:
                if Path(table).is_file():
                    print(f"\n{table}:\n\n{Path(table).read_text()}", flush=True)


def studies() -> list[Study]:
    """Every registered study, by name (importing each one's ``study`` module)."""
    return [STUDIES.get(name)() for name in STUDIES.names()]


def wrapper_studies(wrappers: Iterable[str] | None = None) -> list[str]:
    """The studies that declare a backend wrapper (of ``wrappers``, when given)."""
    wanted = None if wrappers is None else set(wrappers)
    return [name for name in STUDIES.names()
            if (declared := set(STUDIES.facts(name).get("backend_wrappers", ())))
            and (wanted is None or declared & wanted)]


def load_wrapper_studies() -> None:
    """Import the ``study`` module of every study that declares a backend wrapper, so that
    :data:`copyprobe.generation.base.BACKEND_WRAPPERS` holds its declaration."""
    for name in wrapper_studies():
        STUDIES.get(name)


def study_models(cfg: Mapping[str, Any], study: str) -> list[str]:
    """The models in ``study`` (their ``studies`` list it; filled in by the schema)."""
    return [m for m, spec in cfg["models"].items() if study in spec.get("studies", ())]
