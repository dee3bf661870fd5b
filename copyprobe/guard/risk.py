"""The query risk analyzer: which task a request asks for, and whether that task would make the
model reproduce a protected text (``infringing``) or only talk about it (``benign``).

Tasks (the copyright benchmark's, plus ``other``): ``repetition``, ``extraction``,
``paraphrase`` and ``translation`` are infringing (the answer carries the text itself, whole,
in part, reworded or in another language); ``summary``, ``author``, ``comment``,
``background`` and ``other`` (a request that names none of these) are benign.

Analyzers live in :data:`RISK_ANALYZERS`, declared here and imported only when built:

- ``rules`` (offline, :mod:`copyprobe.guard.risk_rules`): keyword and construction rules over
  the normalised request; where they find no task or tasks that conflict, a nearest-exemplar
  classifier over multilingual-e5-small embeddings of labelled example requests decides;
- ``llm`` (:mod:`copyprobe.guard.risk_llm`): a chat model asked for a JSON object
  ``{"task": ..., "risk": ...}`` through the generation layer (cached like every model call);
  an unparseable or failed answer falls back to ``rules``, and the finding says so.

``risk_analyzer(spec)`` builds one from a spec such as ``{"analyzer": "rules"}`` or
``{"analyzer": "llm", "model": {...model entry...}, "cache_dir": ".cache/copyprobe"}``;
every analyzer has ``classify(query) -> RiskFinding`` and ``classify_many(queries)``, and may
have ``load()`` (its models, loaded by ``Guard.build()`` at start). A finding's risk is
``infringing``, ``benign``, or ``uncertain`` (the ``rules`` embedding's two risks scored within
``uncertain_margin``; the guard's ``risk: {uncertain: ...}`` policy decides what it counts as).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from copyprobe.copyright.queries import BENIGN_TASKS, TASKS
from copyprobe.guard.types import RiskFinding
from copyprobe.registry import Registry

__all__ = ["ALL_TASKS", "INFRINGING_TASKS", "RISK_ANALYZERS", "RiskAnalyzer", "RiskError",
           "risk_analyzer", "risk_of"]

#: tasks whose answer reproduces the text (whole, in part, reworded or translated)
INFRINGING_TASKS: tuple[str, ...] = TASKS
#: every task an analyzer may report; ``other``: the request names none of the others
ALL_TASKS: tuple[str, ...] = (*TASKS, *BENIGN_TASKS, "other")

#: name -> analyzer class; ``Cls(**options)`` has ``classify`` and ``classify_many``
RISK_ANALYZERS: Registry[type] = Registry("risk analyzer")
RISK_ANALYZERS.declare("rules", "copyprobe.guard.risk_rules:RuleAnalyzer", offline=True)
RISK_ANALYZERS.declare("llm", "copyprobe.guard.risk_llm:LLMAnalyzer", offline=False)


class RiskError(ValueError):
    """A bad analyzer spec, or a classification that failed with no fallback configured."""


class RiskAnalyzer(Protocol):
    name: str

    def classify(self, query: str) -> RiskFinding: ...

    def classify_many(self, queries: Sequence[str]) -> list[RiskFinding]: ...


def risk_of(task: str) -> str:
    """``"infringing"`` for a task that reproduces the text, ``"benign"`` for the others."""
    if task not in ALL_TASKS:
        raise RiskError(f"unknown task {task!r}; known: {', '.join(ALL_TASKS)}")
    return "infringing" if task in INFRINGING_TASKS else "benign"


def check_query(query: object) -> str:
    """The query itself; anything but a non-blank string is an error saying what it was."""
    if not isinstance(query, str):
        raise RiskError(f"a query must be a string, not {type(query).__name__}")
    if not query.strip():
        raise RiskError("a query is empty")
    return query


def risk_analyzer(spec: Mapping[str, Any] | None = None) -> RiskAnalyzer:
    """Build the analyzer a spec names: ``{"analyzer": NAME, **options}`` (``None`` or no
    ``analyzer``: ``rules``). The options are the analyzer class's keyword arguments."""
    options = dict(spec or {})
    name = options.pop("analyzer", "rules")
    if name not in RISK_ANALYZERS:
        raise RiskError(f"unknown risk analyzer {name!r}; known: "
                        f"{', '.join(RISK_ANALYZERS.names())}")
    cls = RISK_ANALYZERS.get(name)
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:  # an option the analyzer does not take
        raise RiskError(f"risk analyzer {name!r}: {exc}") from exc
    return cls(**options)
