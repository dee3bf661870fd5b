"""The MSR study as the core sees it (:class:`copyprobe.studies.Study`): its config block and
checks, its slice of a model, its targets, report pages, rule file and commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.msr import experiments as cpx
from copyprobe.msr.config import check_config, msr_models, take_msr_settings
from copyprobe.studies import STUDIES, Study


def experiments_of(cfg: Mapping[str, Any], kind: str) -> list[str]:
    """The experiments of one kind (sweep, comparison)."""
    return [n for n, e in cfg["experiments"].items() if e["kind"] == kind]


def all_stats(cfg: Mapping[str, Any]) -> list[str]:
    """The stats JSON of every (model, variant, dataset) run."""
    return [f"results/stats/{m}/{v}/{d}.json" for m, v, d in cpx.runs(cfg)]


def all_comparisons(cfg: Mapping[str, Any]) -> list[str]:
    """The comparison of each model of each comparison experiment."""
    return [f"results/comparisons/{n}/{m}.json" for n in experiments_of(cfg, "comparison")
            for m in cpx.experiment_models(cfg, n)]


def experiment_figures(cfg: Mapping[str, Any]) -> list[str]:
    return [f"results/figures/experiments/{n}/{m}.png" for n in cfg["experiments"]
            for m in cpx.experiment_models(cfg, n)]


def curation_reports(cfg: Mapping[str, Any]) -> list[str]:
    return [f"results/curation/{m}.{ext}" for m in msr_models(cfg) for ext in ("parquet", "md")]


def targets(cfg: Mapping[str, Any]) -> list[str]:
    """Table 1, each run's figures, the per-dataset model figures, the experiments' figures
    and tables, and each model's curation report."""
    runs = cpx.runs(cfg)
    figures = [f"results/figures/{m}/{v}/{d}_{kind}.png" for m, v, d in runs
               for kind in ("fk", "per_document", "helm")]
    models = [f"results/figures/{d}_fk_models.png" for d in sorted({d for _, _, d in runs})]
    sweeps = [f"results/tables/sweep_{n}.{ext}" for n in experiments_of(cfg, "sweep")
              for ext in ("csv", "md")]
    comparisons = ["results/tables/comparisons.csv", "results/tables/comparisons.md"]
    msr_table = ["results/tables/msr_table.csv", "results/tables/msr_table.md"]
    return [*(msr_table if runs else []), *figures, *models, *experiment_figures(cfg),
            *sweeps, *(comparisons if all_comparisons(cfg) else []), *curation_reports(cfg)]


def report_pages(cfg: Mapping[str, Any]) -> dict[str, str]:
    pages = {"results/tables/msr_table.md": "results/report/msr/msr_table.html",
             "results/tables/comparisons.md": "results/report/msr/comparisons.html"}
    for n in experiments_of(cfg, "sweep"):
        pages[f"results/tables/sweep_{n}.md"] = f"results/report/msr/sweep_{n}.html"
    for m in msr_models(cfg):
        pages[f"results/curation/{m}.md"] = f"results/report/curation/{m}.html"
    return pages


@STUDIES.register("msr")
class MSRStudy(Study):
    """Many-Shot Regurgitation: D_pre vs D_post per model, variants and experiments."""

    name = "msr"
    schema_file = "data/schema.yaml"
    commands = "copyprobe.msr.cli:add_commands"
    rule_file = "rules/msr.smk"
    runs_models = True
    default_for_models = True

    def check(self, cfg: Mapping[str, Any]) -> None:
        check_config(cfg)
        cpx.check(cfg)

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return {"msr": take_msr_settings(cfg, spec)}

    def variants(self, cfg: Mapping[str, Any]) -> list[str]:
        return list(cfg.get("variants", {}))

    def slice_run(self, cfg: Mapping[str, Any], model: str, variant: str,
                  spec: dict[str, Any]) -> None:
        v = cpx.variant_spec(cfg, variant)
        spec["decoding"] = {**spec.get("decoding", {}), **v.get("decoding", {})}
        spec["msr"] = {**spec["msr"], **v.get("msr", {})}

    def claims_prompts(self, cfg: Mapping[str, Any], source: str) -> str | None:
        return "build_prompts" if source in cfg["sources"] else None

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        return {"datasets": list(cfg["datasets"])}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        return targets(cfg)

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, str]:
        return report_pages(cfg)
