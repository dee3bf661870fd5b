"""The help format of every ``copyprobe`` command, the core's and the studies' alike."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default (when it has one)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default in (None, False, []):
            return action.help
        return super()._get_help_string(action)
