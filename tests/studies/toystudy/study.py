"""The toy study: one file per model in it, its greeting repeated ``toy_repeat`` times."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.config import ConfigError
from copyprobe.studies import Study, study_models


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("toy-greet", help="print the toy study's greeting")
    p.add_argument("--greeting", default="hello", help="what to say")
    p.set_defaults(func=lambda args: {"greeting": args.greeting})


class ToyStudy(Study):
    name = "toy"
    schema_file = "data/schema.yaml"
    rule_file = str(Path(__file__).resolve().parent / "toy.smk")
    commands = "toystudy.study:add_commands"
    runs_models = True

    def check(self, cfg: Mapping[str, Any]) -> None:
        if not cfg["toy"]["greeting"].strip():
            raise ConfigError("config key 'toy.greeting': must not be blank")

    def slice_model(self, cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return {"toy": {"repeat": spec.pop("toy_repeat")}}

    def targets(self, cfg: Mapping[str, Any]) -> list[str]:
        return [f"results/toy/{m}.txt" for m in study_models(cfg, "toy")]
