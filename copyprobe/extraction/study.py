"""The extraction study as the core sees it (:class:`copyprobe.studies.Study`): its config
block and checks, its keys of a model entry, its targets, report page, rule file and command.

The study scores the curated D_pre / D_post documents of the MSR datasets (rule msr_curate), so a
model in it needs a cutoff; it makes no prompts for the generation layer (its Monte Carlo
samples go through the generation runner inside its own scoring job)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.extraction import config as xc
from copyprobe.extraction import paths as P
from copyprobe.paths import membership_sets
from copyprobe.studies import PlannedRequests, ReportPage, Study


def figures(cfg: Mapping[str, Any]) -> list[str]:
    return [P.FIGURE.format(model=m, dataset=d, kind=k) for m, d in xc.runs(cfg)
            for k in P.FIGURE_KINDS]


def all_stats(cfg: Mapping[str, Any]) -> list[str]:
    return [P.STATS.format(model=m, dataset=d) for m, d in xc.runs(cfg)]


def all_membership(cfg: Mapping[str, Any]) -> list[str]:
    """The membership comparisons under the table (statistics.membership_scores)."""
    return membership_sets(cfg, xc.runs(cfg))


def targets(cfg: Mapping[str, Any]) -> list[str]:
    """The study's table (CSV and Markdown) and each (model, dataset)'s figures."""
    if not xc.runs(cfg):
        return []
    return [P.TABLE_CSV, P.TABLE_MD, *figures(cfg)]


class ExtractionStudy(Study):
    """Exact extraction probabilities, (n,p)-discoverability and extraction maps."""

    name = "extraction"
    schema_file = "data/schema.yaml"
    rule_file = "rules/extraction.smk"
    commands = "copyprobe.extraction.cli:add_commands"
    runs_models = True
    #: what the longform and membership studies read: its config's windows, the window tables,
    #: the p_z measures, and the window scoring
    interface = ("config", "tables", "discoverability", "windows", "window_scoring")

    def check(self, cfg: Mapping[str, Any]) -> None:
        xc.check_config(cfg)

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        # how the study scores a model, not how the model runs: out of every slice, so that
        # setting them reruns no generation job (the scoring job gets them through its params)
        for key in xc.MODEL_KEYS:
            spec.pop(key, None)
        return {}

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """The study's (model, dataset) runs, beside the core's lists."""
        runs = xc.runs(cfg)
        return {"extraction": [f"{m}/{d}" for m, d in runs]} if runs else {}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        return targets(cfg)

    def printed_tables(self, cfg: Mapping[str, Any]) -> dict[str, str]:
        return {"extraction_table": P.TABLE_MD}

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        if not self.targets(cfg):
            return {}
        return {P.TABLE_PAGE: ReportPage(P.TABLE_MD, "extraction_table", "Extraction tables",
                                         {"table": "extraction probabilities of every model"})}

    def planned_requests(self, cfg: Mapping[str, Any],
                         documents: Mapping[str, int | None]) -> list[PlannedRequests]:
        from copyprobe.extraction.cost import planned_requests

        return planned_requests(cfg, documents)
