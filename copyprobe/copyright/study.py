"""The copyright-compliance study as the core sees it (:class:`copyprobe.studies.Study`): its
config block and checks, its targets, report pages, rule file and commands. It makes the
prompts of the generation layer's ``{source}`` ``copyright.<benchmark>``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.config import NAME_RE, ConfigError, check_backend, check_model_entry
from copyprobe.copyright import paths as P
from copyprobe.studies import PlannedRequests, ReportPage, Study, study_models

STUDY = "copyright"
#: The generation layer's ``{source}`` of a copyright benchmark is this prefix + its name.
COPYRIGHT_PREFIX = "copyright."
#: The rules whose jobs call the judge (the second: on the head node).
JUDGE_RULES = ("copyright_judge", "copyright_judge_on_head")


def copyright_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models in the copyright study."""
    return study_models(cfg, STUDY)


def copyright_source(benchmark: str) -> str:
    """The name under which a benchmark's prompts and generations are kept (the generation
    layer's ``{source}``)."""
    return f"{COPYRIGHT_PREFIX}{benchmark}"


def judge_on_head_node(cfg: Mapping[str, Any]) -> bool:
    """Whether the copyright judge's jobs run on the head node: with ``api_jobs_on_head_node``
    and a judge of a remote backend."""
    from copyprobe.generation.base import backend_facts

    judge = cfg.get(STUDY, {}).get("judge")
    return bool(cfg.get("api_jobs_on_head_node", False) and judge is not None
                and backend_facts(judge["backend"])["remote"])


def scoring_shards(cfg: Mapping[str, Any]) -> int:
    """Scoring jobs per (benchmark, model) (``copyright.scoring.shards``, validated >= 1 by
    the schema): 1 is one job writing the scored table, more are shard jobs and a merge."""
    return int(cfg.get(STUDY, {}).get("scoring", {}).get("shards", 1))


def index_name(benchmark: str) -> str:
    """The span index over a benchmark's materials (its attribution and the output guard's)."""
    return f"copyright-{benchmark}"


def add_material_indexes(cfg: dict[str, Any]) -> None:
    """Each benchmark brings the span index ``copyright-<benchmark>`` over its materials
    (copyrighted and open alike), unless ``spans.indexes`` names one so itself."""
    from copyprobe.spans.config import index_entry

    spans = cfg.setdefault("spans", {}).setdefault("indexes", {})
    for name, bench in cfg.get(STUDY, {}).get("benchmarks", {}).items():
        if all(s in cfg["sources"] for s in bench["materials"]):  # else check_config says so
            spans.setdefault(index_name(name), index_entry(bench["materials"]))


def check_config(cfg: Mapping[str, Any]) -> None:
    """The copyright block: benchmark names, material sources, seed files, the judge's backend,
    and at least one model in the study when a benchmark is configured."""
    block = cfg[STUDY]
    for name in cfg["sources"]:
        if name.startswith(COPYRIGHT_PREFIX):
            raise ConfigError(f"config key 'sources.{name}': names starting with "
                              f"{COPYRIGHT_PREFIX!r} are kept for the copyright benchmarks")
    for name, bench in block["benchmarks"].items():
        key = f"copyright.benchmarks.{name}"
        if not NAME_RE.match(name):
            raise ConfigError(f"config key '{key}': names may use letters, digits, '_', '.', "
                              "'-' only")
        for i, s in enumerate(bench["materials"]):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key '{key}.materials.{i}': unknown source {s!r}")
        if bench["queries"] is not None and not Path(bench["queries"]).exists():
            raise ConfigError(f"config key '{key}.queries': no such file or folder "
                              f"{bench['queries']!r}")
        extra = [f for f in bench["benign_forms"] or [] if f not in bench["forms"]]
        if extra:
            raise ConfigError(f"config key '{key}.benign_forms': {extra} not in its forms "
                              f"{bench['forms']}")
        image_forms = [f for f in bench["forms"] if f.startswith("image_")]
        if image_forms and not bench["images"]:
            raise ConfigError(f"config key '{key}.forms': {image_forms} draw the notice into "
                              "the image: they need images: true")
        if bench["images"] == "released":
            if bench.get("max_words") is not None:
                raise ConfigError(f"config key '{key}.max_words': the released images show "
                                  "the authors' own samples, which an excerpt cannot cut: "
                                  "leave max_words null with images: released")
            released = bench.get("released_images") or {}
            if released.get("path") and not Path(released["path"]).is_dir():
                raise ConfigError(f"config key '{key}.released_images.path': no such folder "
                                  f"{released['path']!r}")
        elif bench.get("released_images"):
            raise ConfigError(f"config key '{key}.released_images': set, but images is not "
                              "'released'")
    if block["benchmarks"] and not copyright_models(cfg):
        raise ConfigError("config key 'copyright.benchmarks': no model runs the copyright "
                          "study (give a model studies: [copyright])")
    judge = block["judge"]
    if judge is not None:
        if "backend" not in judge:
            raise ConfigError("config key 'copyright.judge.backend': required (e.g. llamacpp, "
                              "openai)")
        check_backend(judge, "copyright.judge")
        check_model_entry({k: v for k, v in judge.items() if k != "cascade"}, "copyright.judge")


def attribution_tables(cfg: Mapping[str, Any]) -> list[str]:
    """With ``copyright.attribution``: each (benchmark, model)'s attribution table."""
    if cfg[STUDY].get("attribution") is None:
        return []
    return [P.ATTRIBUTION_MD.format(benchmark=b, model=m) for b in cfg[STUDY]["benchmarks"]
            for m in copyright_models(cfg)]


def targets(cfg: Mapping[str, Any]) -> list[str]:
    """Each benchmark's Table 1, Figure 6 and refusal agreement (and attribution tables)."""
    return [*(p.format(benchmark=b) for b in cfg[STUDY]["benchmarks"]
              for p in (P.TABLE1, P.FIG6, P.AGREEMENT)), *attribution_tables(cfg)]


#: The report's row label of each of a benchmark's tables (P.TABLE_NAMES).
TABLE_LABELS = {
    "table1": "Table 1: similarity and refusal per notice form",
    "by_notice_form": "per notice form and task",
    "by_category": "per material category",
    "table5": "Table 5: similarity against refusal",
    "over_refusal": "over-refusal of benign requests",
}


def report_pages(cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
    """The pages of each benchmark's tables (rule copyright_tables makes them all with
    Table 1), listed under the benchmark."""
    pages = {P.PAGE.format(benchmark=b, table=t): ReportPage(
        P.TABLE.format(benchmark=b, table=t), f"copyright_{t}", "Copyright tables",
        {"table": TABLE_LABELS[t]}, subcategory=b, facts={"benchmark": b})
        for b in cfg[STUDY]["benchmarks"] for t in P.TABLE_NAMES}
    if cfg[STUDY].get("attribution") is not None:
        for b in cfg[STUDY]["benchmarks"]:
            for m in copyright_models(cfg):
                pages[P.PAGE.format(benchmark=b, table=f"attribution_{m}")] = ReportPage(
                    P.ATTRIBUTION_MD.format(benchmark=b, model=m), "copyright_attribution",
                    "Copyright tables", {"table": f"attribution of {m}"}, subcategory=b,
                    facts={"benchmark": b, "model": m})
    return pages


class CopyrightStudy(Study):
    """The LVLM copyright-compliance benchmark: materials x notice forms x queries."""

    name = STUDY
    interface = ("paths", "study", "queries", "refusal", "analysis", "scored_table",
                 "response_scoring", "metrics.embedding", "metrics.rouge")
    prompts_prefix = COPYRIGHT_PREFIX
    prompts_checkpoint = "copyright_prompts"
    schema_file = "data/schema.yaml"
    commands = "copyprobe.copyright.cli:add_commands"
    listers = {"metrics": "copyprobe.copyright.listing:metrics"}
    rule_file = "rules/copyright.smk"
    runs_models = True

    def add_implied(self, cfg: dict[str, Any]) -> None:
        add_material_indexes(cfg)

    def check(self, cfg: Mapping[str, Any]) -> None:
        check_config(cfg)

    def prompts_wildcards(self, source: str, wildcards: Mapping[str, str]) -> dict[str, str]:
        return {"model": wildcards["model"], "variant": wildcards["variant"],
                "benchmark": source.removeprefix(COPYRIGHT_PREFIX)}

    def prompts_table(self, source: str, wildcards: Mapping[str, str]) -> str:
        return P.PROMPTS.format(**self.prompts_wildcards(source, wildcards))

    def extra_models(self, cfg: Mapping[str, Any], rules: set[str]) -> dict[str, Any]:
        judge = cfg[STUDY]["judge"]
        if judge is not None and rules & set(JUDGE_RULES):
            return {"copyright.judge": judge}
        return {}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        return targets(cfg)

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        return report_pages(cfg)

    def planned_requests(self, cfg: Mapping[str, Any],
                         documents: Mapping[str, int | None]) -> list[PlannedRequests]:
        from copyprobe.copyright.cost import planned_requests

        return planned_requests(cfg, documents)
