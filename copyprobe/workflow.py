"""Glue used by the thin scripts in ``workflow_scripts/`` (nothing here reads the config)."""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path


def setup_logging(log_path: str | None) -> logging.Logger:
    """Send logging to the rule's log file and to stderr; an uncaught exception is logged once.

    A job's error goes to the log file only (with a rule's log, Snakemake's
    ``--show-failed-logs`` prints that file after the failure): first the traceback, whose last
    line is the exception's type, then one line with the message, which names the file, row or
    key. Without a log file it goes to stderr in the same form.
    """
    stderr = logging.StreamHandler(sys.stderr)
    handlers: list[logging.Handler] = [stderr]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("copyprobe")
    error_handlers = handlers[1:] or [stderr]

    def excepthook(tp, value, tb):  # type: ignore[no-untyped-def]
        if issubclass(tp, KeyboardInterrupt):
            sys.__excepthook__(tp, value, tb)
            return
        lines = traceback.format_exception(tp, value, tb)
        # The last line(s) repeat the message: keep the type there, the message once below.
        only = traceback.format_exception_only(tp, value)
        trace = "".join(lines[: len(lines) - len(only)])
        name = tp.__qualname__
        if tp.__module__ != "builtins":
            name = f"{tp.__module__}.{name}"
        trace += f"{name} (message below)"
        message = " ".join(str(value).split()) or "(no message)"
        for text in (trace, f"{tp.__name__}: {message}"):
            record = logger.makeRecord(logger.name, logging.ERROR, __file__, 0, text, (), None)
            for handler in error_handlers:
                handler.handle(record)

    sys.excepthook = excepthook
    return logger
