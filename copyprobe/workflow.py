"""Glue used by the thin scripts in ``workflow_scripts/`` (nothing here reads the config)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def setup_logging(log_path: str | None) -> logging.Logger:
    """Send logging (and uncaught exceptions) to the rule's log file and to stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("copyprobe")

    def excepthook(tp, value, tb):  # type: ignore[no-untyped-def]
        logger.error("failed", exc_info=(tp, value, tb))

    sys.excepthook = excepthook
    return logger
