"""The long-form extraction study as the core sees it (:class:`copyprobe.studies.Study`): its
config block, its rule file and targets, its command (``copyprobe extract-book``) and its
worst-case cost.

Light on purpose (config validation imports it): the engine, the backends and the metrics are
imported inside the methods that need them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.studies import PlannedRequests, ReportPage, Study, study_models

STUDY = "longform"


def runs(cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every (model, source) of the study: each model in it, each source of its datasets."""
    chosen = cfg[STUDY]["datasets"]
    datasets = list(cfg["datasets"]) if chosen is None else list(chosen)
    sources = sorted({s for d in datasets for s in cfg["datasets"][d]})
    return [(m, s) for m in study_models(cfg, STUDY) for s in sources
            if cfg["models"][m].get("sources") is None or s in cfg["models"][m]["sources"]]


def compared(cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (model, source) pairs that the extraction study scored as well (its p_z windows)."""
    from copyprobe.extraction import config as xc

    scored = {(m, s) for m, d in xc.runs(cfg) for s in cfg["datasets"][d]}
    return [r for r in runs(cfg) if r in scored]


class LongformStudy(Study):
    """How much of a whole document a chat model writes out, near-verbatim."""

    name = STUDY
    schema_file = "data/schema.yaml"
    rule_file = "rules/longform.smk"
    commands = "copyprobe.longform.cli:add_commands"
    runs_models = True

    def check(self, cfg: Mapping[str, Any]) -> None:
        import re

        from copyprobe.config import ConfigError
        from copyprobe.longform.perturb import POOL

        block = cfg[STUDY]
        for name in block["datasets"] or ():
            if name not in cfg["datasets"]:
                raise ConfigError(f"config key 'longform.datasets': no dataset {name!r} "
                                  f"(datasets: {', '.join(cfg['datasets'])})")
        if (block["opening_words"] is None) != (block["target_words"] is None):
            raise ConfigError("config keys 'longform.opening_words' and "
                              "'longform.target_words': set both (a fixed opening and "
                              "target) or neither (the seed's sentences)")
        for name in block["perturbations"] or ():
            if name not in POOL:
                raise ConfigError(f"config key 'longform.perturbations': no entry {name!r} "
                                  f"in the pool ({', '.join(POOL)})")
        for pattern in block["refusal_patterns"] or ():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"config key 'longform.refusal_patterns': {pattern!r} is "
                                  f"not a regular expression ({exc})") from None

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        """The table across models (it needs every (model, source)'s documents)."""
        from copyprobe.longform import paths as P

        if not runs(cfg):
            return []
        found = [P.TABLE_CSV, P.TABLE_MD, P.AGREEMENT_CSV, P.AGREEMENT_MD,
                 P.AGREEMENT_DOCUMENTS]
        return found + [P.FIGURE_VS_PZ] if compared(cfg) else found

    def printed_tables(self, cfg: Mapping[str, Any]) -> dict[str, str | tuple[str, ...]]:
        """The table across models and, where a model has a p_z map too, the comparison."""
        from copyprobe.longform import paths as P

        return {"longform_table": (P.TABLE_MD, P.AGREEMENT_MD) if compared(cfg)
                else P.TABLE_MD}

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        """The table across models, and where a model has a p_z map too, the comparison."""
        from copyprobe.longform import paths as P

        if not runs(cfg):
            return {}
        pages = {P.TABLE_PAGE: ReportPage(P.TABLE_MD, "longform_table", "Long-form tables",
                                          {"table": "nv-recall of every model"})}
        if compared(cfg):
            pages[P.AGREEMENT_PAGE] = ReportPage(
                P.AGREEMENT_MD, "longform_vs_pz", "Long-form tables",
                {"table": "nv-recall beside the p_z map"})
        return pages

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        found = runs(cfg)
        return {STUDY: [f"{m}/{s}" for m, s in found]} if found else {}

    def planned_requests(self, cfg: Mapping[str, Any],
                         documents: Mapping[str, int | None]) -> list[PlannedRequests]:
        """Every attempt and every turn of every document: the worst case."""
        from copyprobe import cost
        from copyprobe.config import model_slice
        from copyprobe.longform.engine import Settings, probe

        settings = Settings.from_config(cfg[STUDY])
        first = cost.prompt_tokens(probe(" ".join(["w"] * settings.prefix_words()), "",
                                         settings, 0)[0])
        out = []
        for model, source in runs(cfg):
            spec = model_slice(cfg, model)
            reply = cost.completion_tokens(spec)
            answer = reply if settings.probe_max_tokens is None else settings.probe_max_tokens
            turns = settings.max_turns
            if settings.max_tokens is not None:
                turns = min(turns, max(0, -(-(settings.max_tokens - answer) // reply)))
            # every turn resends the probe and its answer (counted below as one reply)
            pt = cost.conversation(first + answer - reply, reply, cost.word_tokens(
                len(settings.continue_prompt.split())), turns)
            docs = documents.get(source)
            for part, calls, prompt, completion in (
                    (f"{source} probe", settings.attempts, first, answer),
                    (f"{source} turns", turns, -(-pt // max(1, turns)), reply)):
                if calls:
                    out.append(PlannedRequests(
                        model=model, spec=spec, run="main", part=part,
                        calls=None if docs is None else docs * calls,
                        prompt_tokens=prompt, completion_tokens=completion))
        return out
