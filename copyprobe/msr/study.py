"""The MSR study as the core sees it (:class:`copyprobe.studies.Study`): its config block and
checks, its slice of a model, its targets, report pages, rule file and commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.msr import experiments as cpx
from copyprobe.msr import paths as P
from copyprobe.paths import membership_sets
from copyprobe.msr.config import (
    check_attribution,
    check_config,
    expand_index_corpora,
    msr_models,
    take_msr_settings,
)
from copyprobe.paths import PROMPTS
from copyprobe.studies import PlannedRequests, ReportPage, Study


def experiments_of(cfg: Mapping[str, Any], kind: str) -> list[str]:
    """The experiments of one kind (sweep, comparison)."""
    return [n for n, e in cfg["experiments"].items() if e["kind"] == kind]


def all_stats(cfg: Mapping[str, Any]) -> list[str]:
    """The stats JSON of every (model, variant, dataset) run."""
    return [P.STATS.format(model=m, variant=v, dataset=d) for m, v, d in cpx.runs(cfg)]


def all_membership(cfg: Mapping[str, Any]) -> list[str]:
    """The membership comparisons under the table, one per (model, dataset) of the runs
    (statistics.membership_scores)."""
    return membership_sets(cfg, ((m, d) for m, _v, d in cpx.runs(cfg)))


def all_comparisons(cfg: Mapping[str, Any]) -> list[str]:
    """The comparison of each model of each comparison experiment."""
    return [P.COMPARISON.format(experiment=n, model=m) for n in experiments_of(cfg, "comparison")
            for m in cpx.experiment_models(cfg, n)]


def experiment_figures(cfg: Mapping[str, Any]) -> list[str]:
    return [P.EXPERIMENT_FIGURE.format(experiment=n, model=m) for n in cfg["experiments"]
            for m in cpx.experiment_models(cfg, n)]


def curation_reports(cfg: Mapping[str, Any]) -> list[str]:
    return [p.format(model=m) for m in msr_models(cfg)
            for p in (P.CURATION_TABLE, P.CURATION_REPORT)]


def targets(cfg: Mapping[str, Any]) -> list[str]:
    """Table 1, each run's figures, the per-dataset model figures, the experiments' figures
    and tables, each model's curation report, and with ``msr.attribution`` the attribution
    table."""
    runs = cpx.runs(cfg)
    figures = [P.FIGURE.format(model=m, variant=v, dataset=d, kind=kind) for m, v, d in runs
               for kind in P.FIGURE_KINDS]
    models = [P.MODELS_FIGURE.format(dataset=d) for d in sorted({d for _, _, d in runs})]
    sweeps = [p.format(experiment=n) for n in experiments_of(cfg, "sweep")
              for p in (P.SWEEP_CSV, P.SWEEP_MD)]
    comparisons = [P.COMPARISONS_CSV, P.COMPARISONS_MD]
    msr_table = [P.TABLE_CSV, P.TABLE_MD]
    attribution = ([P.ATTRIBUTION_CSV, P.ATTRIBUTION_MD]
                   if runs and cfg["msr"].get("attribution") else [])
    return [*(msr_table if runs else []), *figures, *models, *experiment_figures(cfg),
            *sweeps, *(comparisons if all_comparisons(cfg) else []), *curation_reports(cfg),
            *attribution]


def report_pages(cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
    """The pages of the tables that :func:`targets` makes: Table 1, each sweep's Table 2, the
    settings comparisons and each model's curation report."""
    tables = "MSR tables"
    pages = {
        P.TABLE_PAGE: ReportPage(P.TABLE_MD, "msr_table", tables,
                                 {"table": "results of every model (Table 1)"}),
        P.COMPARISONS_PAGE: ReportPage(P.COMPARISONS_MD, "comparisons", tables,
                                       {"table": "settings comparisons"}),
    }
    for n in experiments_of(cfg, "sweep"):
        pages[P.SWEEP_PAGE.format(experiment=n)] = ReportPage(
            P.SWEEP_MD.format(experiment=n), "sweep_table", tables,
            {"table": f"sweep {n} (Table 2)"}, facts={"experiment": n})
    pages[P.ATTRIBUTION_PAGE] = ReportPage(P.ATTRIBUTION_MD, "msr_attribution", tables,
                                           {"table": "attribution: spans found in the corpus"})
    for m in msr_models(cfg):
        pages[P.CURATION_PAGE.format(model=m)] = ReportPage(
            P.CURATION_REPORT.format(model=m), "curation", "Curation", {"model": m},
            facts={"model": m})
    made = set(targets(cfg))
    return {page: p for page, p in pages.items() if p.table in made}


class MSRStudy(Study):
    """Many-Shot Regurgitation: D_pre vs D_post per model, variants and experiments."""

    name = "msr"
    interface = ("paths", "prompts", "match_scoring")
    prompts_prefix = ""  # the corpus sources
    prompts_checkpoint = "msr_build_prompts"
    schema_file = "data/schema.yaml"
    commands = "copyprobe.msr.cli:add_commands"
    rule_file = "rules/msr.smk"
    runs_models = True
    default_for_models = True

    def add_implied(self, cfg: dict[str, Any]) -> None:
        expand_index_corpora(cfg)

    def check(self, cfg: Mapping[str, Any]) -> None:
        check_config(cfg)
        cpx.check(cfg)
        check_attribution(cfg)

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return {"msr": take_msr_settings(cfg, spec)}

    def variants(self, cfg: Mapping[str, Any]) -> list[str]:
        return list(cfg.get("variants", {}))

    def slice_run(self, cfg: Mapping[str, Any], model: str, variant: str,
                  spec: dict[str, Any]) -> None:
        v = cpx.variant_spec(cfg, variant)
        spec["decoding"] = {**spec.get("decoding", {}), **v.get("decoding", {})}
        spec["msr"] = {**spec["msr"], **v.get("msr", {})}

    def prompts_table(self, source: str, wildcards: Mapping[str, str]) -> str:
        return PROMPTS.format(model=wildcards["model"], variant=wildcards["variant"],
                              source=source)

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        return {"datasets": list(cfg["datasets"])}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        return targets(cfg)

    def printed_tables(self, cfg: Mapping[str, Any]) -> dict[str, str]:
        return {"msr_make_table": P.TABLE_MD}

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        return report_pages(cfg)

    def planned_requests(self, cfg: Mapping[str, Any],
                         documents: Mapping[str, int | None]) -> list[PlannedRequests]:
        from copyprobe.msr.cost import planned_requests

        return planned_requests(cfg, documents)
