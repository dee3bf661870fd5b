"""The input and params functions of rules/guard.smk, bound to the workflow's config."""

from __future__ import annotations

from typing import Any

from copyprobe.guard import paths as P
from copyprobe.guard.study import guard_pairs


class GuardInputs:
    """``GuardInputs(config).all_decisions`` is an input function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    def all_decisions(self, wildcards: Any) -> list[str]:
        """The decision sidecar of every guarded model of the pairs, on every benchmark."""
        return [P.DECISIONS.format(benchmark=b, model=m)
                for b in self.config["copyright"]["benchmarks"] for m in guard_pairs(self.config)]

    def tables_params(self, wildcards: Any) -> dict[str, Any]:
        """Guarded models and their bases, their guard blocks, each benchmark's rights."""
        pairs = guard_pairs(self.config)
        return {"pairs": pairs, "guards": {m: self.config["models"][m]["guard"] for m in pairs},
                "rights": {b: spec["rights"]
                           for b, spec in self.config["copyright"]["benchmarks"].items()}}
