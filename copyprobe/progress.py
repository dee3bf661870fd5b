"""Progress for long work: done / total, rate and ETA, to stderr (a Snakemake job's terminal)
and to the log at roughly every 10 %."""

from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("copyprobe.progress")


class Progress:
    def __init__(self, total: int, label: str, stream=None) -> None:  # type: ignore[no-untyped-def]
        self.total = total
        self.label = label
        self.done = 0
        self.t0 = time.perf_counter()
        self.stream = stream if stream is not None else sys.stderr
        self._next_log = max(1, total // 10)

    def line(self) -> str:
        elapsed = time.perf_counter() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta_s = f"{eta:.0f}s" if eta == eta else "?"
        return f"{self.label}: {self.done}/{self.total} ({rate:.2f}/s, ETA {eta_s})"

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.done >= self._next_log or self.done == self.total:
            self._next_log += max(1, self.total // 10)
            msg = self.line()
            log.info(msg)
            print(msg, file=self.stream, flush=True)

    def close(self) -> None:
        pass
