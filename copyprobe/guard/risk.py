"""The query risk analyzer: which task a request asks for, and whether that task would make the
model reproduce a protected text (``infringing``) or only talk about it (``benign``).

Reference: docs/guard-risk.md.
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
