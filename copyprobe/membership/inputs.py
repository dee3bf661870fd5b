"""The input, params and resource functions of rules/membership.smk (one object per
workflow, holding the validated config)."""

from __future__ import annotations

from typing import Any

import copyprobe.config as cpc
import copyprobe.paths as paths
from copyprobe.rule_inputs import one_of
from copyprobe.membership.runs import given_runs, runs, trained_runs, uses_gpu

#: a wildcard constraint no name matches
NOTHING = r"(?!)"


class MembershipInputs:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def _run(self, wildcards: Any) -> dict[str, Any]:
        return runs(self.config)[wildcards.run]

    def corpus(self, wildcards: Any) -> str:
        return paths.CORPUS.format(source=self._run(wildcards)["source"])

    def base_manifest(self, wildcards: Any) -> str:
        return paths.MODEL_MANIFEST.format(model=self._run(wildcards)["model"])

    def trained(self) -> str:
        """The wildcard constraint of the runs that train (none: matches nothing)."""
        return one_of(trained_runs(self.config)) or NOTHING

    def given(self) -> str:
        """The wildcard constraint of the runs of models trained elsewhere."""
        return one_of(given_runs(self.config)) or NOTHING

    def truth(self, wildcards: Any) -> str:
        return self._run(wildcards)["truth"]

    def run_params(self, wildcards: Any) -> dict[str, Any]:
        return self._run(wildcards)

    def base_params(self, wildcards: Any) -> dict[str, Any]:
        """The base model's slice (as a generation job gets it)."""
        return cpc.model_slice(self.config, self._run(wildcards)["model"])

    def scoring_params(self, wildcards: Any) -> dict[str, Any]:
        """The scoring settings, and those of the studies whose measures the run scores (so
        that changing another study's settings reruns only the runs that use them)."""
        cfg, families = self.config, self._run(wildcards)["measures"]
        extraction = cfg.get("extraction", {})
        return {**cfg.get("membership", {}).get("scoring", {}),
                "di_aggregate": cfg["statistics"]["di_aggregate"],
                "cache_dir": cfg["cache_dir"], "measures": list(families),
                **({"windows": extraction["windows"],
                    "max_windows_per_document": extraction["max_windows_per_document"]}
                   if "extraction" in families else {}),
                **({"msr": {k: cfg["msr"][k] for k in ("n", "num_words", "min_segment_words",
                                                       "system_message", "prompt_format")},
                    "matching": {k: cfg["matching"][k] for k in ("k_min", "k_max")}}
                   if "msr" in families else {})}

    def gpus(self, wildcards: Any) -> int:
        """1 where the base model's entry puts it on a GPU (device_map cuda/auto), else 0."""
        return 1 if uses_gpu(self.config["models"][self._run(wildcards)["model"]]) else 0

    def train_threads(self, wildcards: Any) -> int:
        return int(self.config["models"][self._run(wildcards)["model"]].get("n_threads") or 2)

    def env(self, wildcards: Any) -> str:
        """The GPU environment where the run trains on a GPU, the CPU one (torch and
        transformers included) else."""
        return f"../envs/generation-{'gpu' if self.gpus(wildcards) else 'cpu'}.yaml"
