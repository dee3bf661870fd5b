"""Glue used by the thin scripts in ``workflow_scripts/`` (nothing here reads the config)."""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path


def setup_logging(log_path: str | None) -> logging.Logger:
    """Send logging to the rule's log file and to stderr; errors are written once.

    With a log file, ERROR records (a script's own ``log.error`` and an uncaught exception) go
    to the file only: Snakemake's ``--show-failed-logs`` (set in the project's profile) prints
    a failed job's log, so on stderr too they would appear twice. An uncaught exception is
    logged as its traceback, whose last line is the exception's type, then one line with the
    message, which names the file, row or key. Without a log file it all goes to stderr.
    """
    stderr = logging.StreamHandler(sys.stderr)
    handlers: list[logging.Handler] = [stderr]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
        stderr.addFilter(lambda record: record.levelno < logging.ERROR)
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("copyprobe")

    def excepthook(tp, value, tb):  # type: ignore[no-untyped-def]
        if issubclass(tp, KeyboardInterrupt):
            sys.__excepthook__(tp, value, tb)
            return
        lines = traceback.format_exception(tp, value, tb)
        # The last line(s) repeat the message: keep the type there, the message once below.
        only = traceback.format_exception_only(tp, value)
        name = tp.__qualname__
        if tp.__module__ != "builtins":
            name = f"{tp.__module__}.{name}"
        logger.error("%s%s (message below)", "".join(lines[: len(lines) - len(only)]), name)
        logger.error("%s: %s", tp.__name__, " ".join(str(value).split()) or "(no message)")

    sys.excepthook = excepthook
    return logger
