"""The membership study as the core sees it (:class:`copyprobe.studies.Study`): its commands
(membership-score, -train, -canaries) and its ``membership.runs`` block, whose ground-truth
runs (train, then score against the truth) the workflow makes (rules/membership.smk)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.studies import ReportPage, Study


class MembershipStudy(Study):
    """Membership scores, their detection against a known truth, and dataset inference."""

    name = "membership"
    schema_file = "data/schema.yaml"
    rule_file = "rules/membership.smk"
    commands = "copyprobe.membership.commands:add_commands"
    runs_models = True

    def add_implied(self, cfg: dict[str, Any]) -> None:
        from copyprobe.membership.runs import resolve_trained

        resolve_trained(cfg)

    def model_inputs(self, cfg: Mapping[str, Any], model: str) -> list[str]:
        from copyprobe.membership import paths as P

        run = cfg["models"][model].get("trained")
        return [P.MODEL_YAML.format(run=run)] if run else []

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        spec.pop("trained", None)  # where the weights come from: model_id says it
        return {}

    def check(self, cfg: Mapping[str, Any]) -> None:
        from copyprobe.membership.runs import check_config

        check_config(cfg)

    def summary(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        runs = cfg.get("membership", {}).get("runs", {})
        return {"membership": sorted(runs)} if runs else {}

    def printed_tables(self, cfg: Mapping[str, Any]) -> dict[str, str]:
        from copyprobe.membership import paths as P

        return {"membership_score": P.RESULT_MD, "membership_given": P.RESULT_MD}

    def report_pages(self, cfg: Mapping[str, Any]) -> dict[str, ReportPage]:
        from copyprobe.membership import paths as P

        return {P.RESULT_PAGE.format(run=r): ReportPage(
            P.RESULT_MD.format(run=r), "membership_result", "Membership",
            {"run": r}, facts={"run": r}) for r in cfg.get("membership", {}).get("runs", {})}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        from copyprobe.membership import paths as P

        return [p.format(run=r) for r in cfg.get("membership", {}).get("runs", {})
                for p in (P.RESULT_MD, P.RESULT_TABLE)]
