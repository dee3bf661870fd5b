"""The input, params and target functions of rules/msr.smk, bound to the workflow's config
(Snakemake calls each with the job's wildcards). Paths are those of the MSR study's rules."""

from __future__ import annotations

from typing import Any

from copyprobe import config as cpc
from copyprobe.msr import experiments as cpx
from copyprobe.msr import paths as P
from copyprobe.msr.config import model_datasets, model_sources
from copyprobe.paths import CORPUS


class MSRInputs:
    """``MSRInputs(config).dataset_matches`` is an input function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    def msr_params(self, wildcards: Any) -> dict[str, Any]:
        return cpc.run_slice(self.config, wildcards.model, wildcards.variant)["msr"]

    def matching_params(self, wildcards: Any) -> dict[str, Any]:
        """The thresholds k of a (model, variant): k_max auto resolved."""
        return cpx.run_matching(self.config, wildcards.model, wildcards.variant)

    def run_settings(self, wildcards: Any) -> dict[str, Any]:
        """Decoding, MSR settings and thresholds of a (model, variant), kept in its stats JSON."""
        return cpx.run_settings(self.config, wildcards.model, wildcards.variant)

    def curation_params(self, wildcards: Any) -> dict[str, Any]:
        return {"cutoff": self.config["models"][wildcards.model]["cutoff"],
                **self.config["curation"]}

    def model_curated(self, wildcards: Any) -> list[str]:
        """The curated table of every source the model runs on."""
        return [P.CURATED.format(model=wildcards.model, source=s)
                for s in model_sources(self.config, wildcards.model)]

    def model_corpora(self, wildcards: Any) -> list[str]:
        return [CORPUS.format(source=s) for s in model_sources(self.config, wildcards.model)]

    def curation_report_params(self, wildcards: Any) -> dict[str, Any]:
        """The model's cutoff, the curation and blind-baseline settings, and its datasets."""
        cfg = self.config
        return {"cutoff": cfg["models"][wildcards.model]["cutoff"],
                "curation": cfg["curation"], "statistics": cfg["statistics"],
                "datasets": {d: cfg["datasets"][d]
                             for d in model_datasets(cfg, wildcards.model)}}

    def dataset_matches(self, wildcards: Any) -> list[str]:
        return [P.MATCHES.format(model=wildcards.model, variant=wildcards.variant, source=s)
                for s in self.config["datasets"][wildcards.dataset]]

    def dataset_corpora(self, wildcards: Any) -> list[str]:
        return [CORPUS.format(source=s) for s in self.config["datasets"][wildcards.dataset]]

    def dataset_models_stats(self, wildcards: Any) -> list[str]:
        """Figures 1 and 2: every model's main run on one dataset."""
        return [P.STATS.format(model=m, variant=cpc.MAIN, dataset=wildcards.dataset)
                for m in self.config["models"]
                if wildcards.dataset in cpx.run_datasets(self.config, m, cpc.MAIN)]

    def experiment_stats(self, wildcards: Any) -> list[str]:
        """The stats JSON of an experiment's variants of one model, in the experiment's order."""
        e = self.config["experiments"][wildcards.experiment]
        return [P.STATS.format(model=wildcards.model, variant=v, dataset=e["dataset"])
                for v in cpx.experiment_variants(e)]

    def experiment_params(self, wildcards: Any) -> dict[str, Any]:
        """What the aggregate scripts of an experiment need: kind, labels, parameter, title."""
        e = self.config["experiments"][wildcards.experiment]
        return {"name": wildcards.experiment, "kind": e["kind"], "dataset": e["dataset"],
                "labels": cpx.experiment_labels(e), "parameter": e.get("parameter", "setting"),
                "split": e.get("split", "pre"),
                "title": e.get("title", f"{wildcards.experiment} on {e['dataset']}")}

    def sweep_stats(self, wildcards: Any) -> list[str]:
        """Every model's stats of one sweep, model by model in the experiment's order."""
        e = self.config["experiments"][wildcards.experiment]
        return [P.STATS.format(model=m, variant=v, dataset=e["dataset"])
                for m in cpx.experiment_models(self.config, wildcards.experiment)
                for v in cpx.experiment_variants(e)]


class AttributionInputs:
    """The input and params functions of rules msr_attribution and msr_attribution_table
    (``msr.attribution`` set)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    @property
    def settings(self) -> dict[str, Any]:
        return self.config["msr"]["attribution"]

    def _sources(self, wildcards: Any) -> list[str]:
        return self.config["datasets"][wildcards.dataset]

    def generations(self, wildcards: Any) -> list[str]:
        from copyprobe.paths import GENERATIONS

        return [GENERATIONS.format(model=wildcards.model, variant=wildcards.variant, source=s)
                for s in self._sources(wildcards)]

    def prompts(self, wildcards: Any) -> list[str]:
        from copyprobe.paths import PROMPTS

        return [PROMPTS.format(model=wildcards.model, variant=wildcards.variant, source=s)
                for s in self._sources(wildcards)]

    def curated(self, wildcards: Any) -> list[str]:
        return [P.CURATED.format(model=wildcards.model, source=s)
                for s in self._sources(wildcards)]

    def index(self, wildcards: Any) -> str:
        from copyprobe.spans.paths import INDEX_MANIFEST

        return INDEX_MANIFEST.format(index=self.settings["index"])

    def params(self, wildcards: Any) -> dict[str, Any]:
        """The settings, the index's name and unit, and the run's dataset and variant."""
        from copyprobe.spans.config import index_spec

        name = self.settings["index"]
        return {**self.settings, "unit": index_spec(self.config, name)["unit"],
                "dataset": wildcards.dataset, "variant": wildcards.variant}

    def runs(self, kind: str) -> list[str]:
        """The spans or summary table of every (model, variant, dataset) run."""
        pattern = P.ATTRIBUTION_SPANS if kind == "spans" else P.ATTRIBUTION_SUMMARY
        return [pattern.format(model=m, variant=v, dataset=d) for m, v, d in cpx.runs(self.config)]

    def table_params(self) -> dict[str, Any]:
        return {**self.settings, "index": {d: self.settings["index"]
                                           for d in self.config["datasets"]}}
