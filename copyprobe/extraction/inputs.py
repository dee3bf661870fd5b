"""The input and params functions of rules/extraction.smk, bound to the workflow's config
(Snakemake calls each with the job's wildcards). Paths are those of the study's rules, MSR's
curated tables (copyprobe.msr.paths.CURATED) and the shared corpus."""

from __future__ import annotations

from typing import Any

from copyprobe import config as cpc
from copyprobe.extraction import config as xc
from copyprobe.extraction import paths as P
from copyprobe.msr.paths import CURATED
from copyprobe.paths import CORPUS


class ExtractionInputs:
    """``ExtractionInputs(config).score_params`` is a params function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    def model_params(self, wildcards: Any) -> dict[str, Any]:
        """The model's slice (as a generation job gets it, MSR's keys included)."""
        return cpc.model_slice(self.config, wildcards.model)

    def score_params(self, wildcards: Any) -> dict[str, Any]:
        """Windows, cap, method, format, path and Monte Carlo settings of the model."""
        return xc.job_settings(self.config, wildcards.model)

    def analysis_params(self, wildcards: Any) -> dict[str, Any]:
        return xc.analysis_settings(self.config)

    def dataset_windows(self, wildcards: Any) -> list[str]:
        return [P.WINDOWS.format(model=wildcards.model, source=s)
                for s in self.config["datasets"][wildcards.dataset]]

    def dataset_corpora(self, wildcards: Any) -> list[str]:
        return [CORPUS.format(source=s) for s in self.config["datasets"][wildcards.dataset]]

    def dataset_curated(self, wildcards: Any) -> list[str]:
        return [CURATED.format(model=wildcards.model, source=s)
                for s in self.config["datasets"][wildcards.dataset]]

    def membership_params(self, wildcards: Any) -> dict[str, Any]:
        """The model's slice and the statistics settings of the membership comparison."""
        return {"model": cpc.model_slice(self.config, wildcards.model),
                "statistics": dict(self.config["statistics"])}

    def window_shards(self, wildcards: Any) -> list[str]:
        """The scoring jobs' tables of a (model, source): ``extraction.shards`` of them."""
        n = int(self.config["extraction"]["shards"])
        return [P.WINDOWS_SHARD.format(model=wildcards.model, source=wildcards.source,
                                       shard=f"{i:05d}-of-{n:05d}") for i in range(n)]

    def curated(self, wildcards: Any) -> str:
        return CURATED.format(model=wildcards.model, source=wildcards.source)

    def figure_params(self, wildcards: Any) -> dict[str, Any]:
        """The (n,p) grid and headline, and the title's names."""
        return {**xc.analysis_settings(self.config), "model": wildcards.model,
                "dataset": wildcards.dataset}
