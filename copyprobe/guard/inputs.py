"""The input and params functions of rules/guard.smk, bound to the workflow's config."""

from __future__ import annotations

from typing import Any

from copyprobe import config as cpc
from copyprobe.copyright import paths as CP
from copyprobe.copyright.study import copyright_source
from copyprobe.guard import paths as P
from copyprobe.guard import study as S
from copyprobe.guard.study import compared_rows, guard_pairs, output_sources
from copyprobe.spans import paths as SP


class GuardInputs:
    """``GuardInputs(config).all_decisions`` is an input function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    def all_decisions(self, wildcards: Any) -> list[str]:
        """The decision sidecar of every guarded model of the pairs, on every benchmark."""
        return [P.DECISIONS.format(benchmark=b, model=m)
                for b in self.config["copyright"]["benchmarks"] for m in guard_pairs(self.config)]

    def all_scored(self, wildcards: Any) -> list[str]:
        """Every benchmark's pooled scored table (the guard's tables span benchmarks)."""
        return [CP.POOLED.format(benchmark=b) for b in self.config["copyright"]["benchmarks"]]

    def model_main(self, wildcards: Any) -> dict[str, Any]:
        """A guarded model's slice (its variant main: the copyright study runs no variants)."""
        return cpc.run_slice(self.config, wildcards.model, cpc.MAIN)

    @property
    def generated_models(self) -> list[str]:
        """The guarded models whose generate jobs call the guard (the others, output-guarded,
        get their answers from the output check)."""
        return sorted(set(guard_pairs(self.config)) - set(self.output_models))

    def decision_shards(self, shared: Any) -> Any:
        """The input function of a guarded model's decisions on a benchmark: the tables its
        generate jobs wrote, one per shard (``shared``: the shared rules' inputs, which know
        the shards)."""
        def shards(wildcards: Any) -> list[str]:
            return shared.shards_of(wildcards.model, cpc.MAIN,
                                    copyright_source(wildcards.benchmark), P.DECISIONS_SHARD)
        return shards

    def tables_params(self, wildcards: Any) -> dict[str, Any]:
        """Guarded models and their bases, their guard blocks, each benchmark's rights."""
        pairs = guard_pairs(self.config)
        return {"pairs": pairs, "guards": {m: self.config["models"][m]["guard"] for m in pairs},
                "rights": {b: spec["rights"]
                           for b, spec in self.config["copyright"]["benchmarks"].items()}}

    # -- guards compared (copyprobe.guard.compare) ------------------------------------------------
    @property
    def output_models(self) -> dict[str, str]:
        """Each output-guarded model and the model whose generations its output check reads."""
        return output_sources(self.config)

    def _guard(self, wildcards: Any) -> dict[str, Any]:
        return self.config["models"][wildcards.model]["guard"]

    def output_source_generations(self, wildcards: Any) -> str:
        return CP.GENERATIONS.format(model=self.output_models[wildcards.model],
                                     benchmark=wildcards.benchmark)

    def output_index(self, wildcards: Any) -> str:
        """The manifest of the span index the output check reads on this benchmark."""
        return SP.INDEX_MANIFEST.format(index=S.output_index(self._guard(wildcards),
                                                      wildcards.benchmark))

    def output_params(self, wildcards: Any) -> dict[str, Any]:
        return {"guard": self._guard(wildcards),
                "source_model": self.output_models[wildcards.model]}

    def compared(self, wildcards: Any) -> dict[str, list[str]]:
        """Per benchmark, what the table reads: the pooled scored table, and of every row's
        model its generations (finish reasons), its decisions (guarded models) and its output
        checks (output-guarded models)."""
        rows = compared_rows(self.config)
        models = sorted({m for kinds in rows.values() for _, m in kinds})
        pairs, outputs = guard_pairs(self.config), self.output_models
        out: dict[str, list[str]] = {"scored": [], "generations": [], "decisions": [],
                                     "output_checks": []}
        for b in self.config["copyright"]["benchmarks"]:
            out["scored"].append(CP.POOLED.format(benchmark=b))
            out["generations"] += [CP.GENERATIONS.format(benchmark=b, model=m) for m in models]
            out["decisions"] += [P.DECISIONS.format(benchmark=b, model=m)
                                 for m in models if m in pairs]
            out["output_checks"] += [P.OUTPUT_CHECKS.format(benchmark=b, model=m)
                                     for m in models if m in outputs]
        return out

    def compared_params(self, wildcards: Any) -> dict[str, Any]:
        return {"rows": compared_rows(self.config), "sources": self.output_models,
                "rights": {b: spec["rights"]
                           for b, spec in self.config["copyright"]["benchmarks"].items()}}
