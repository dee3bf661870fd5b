"""The membership study's commands: ``membership-score`` (:mod:`copyprobe.membership.cli`),
``membership-train`` and ``membership-canaries`` (:mod:`copyprobe.membership.insertion_cli`)."""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction) -> None:
    from copyprobe.membership import cli, insertion_cli

    cli.add_commands(sub)
    insertion_cli.add_commands(sub)
