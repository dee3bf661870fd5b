"""Progress of long work: one live line per job and one summary line at the end.

On a terminal the live line (done / total, failures, rate, ETA) is rewritten in place at most
every ``tty_interval`` seconds. Elsewhere (a log file, a cluster job's captured stderr) a line is
written at most every ``interval`` seconds, so a 10,000-request job does not write 10,000
lines. The live line goes to ``stream`` only; :meth:`Progress.close` sends the summary through
the logger, whose handlers (the job's log file and stderr) then carry it once each.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import IO

log = logging.getLogger("copyprobe.progress")

#: Seconds between progress lines when the stream is not a terminal.
INTERVAL = 30.0
#: Seconds between redraws of the live line on a terminal.
TTY_INTERVAL = 0.2


def _is_tty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real file
        return False


class Progress:
    def __init__(self, total: int, label: str, stream: IO[str] | None = None, *,
                 interval: float = INTERVAL, tty_interval: float = TTY_INTERVAL,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.failed = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _is_tty(self.stream)
        self.interval = tty_interval if self.tty else interval
        self._clock = clock
        self.t0 = clock()
        self._last = self.t0
        self._drawn = False  # a live line is on the terminal
        self._closed = False

    def line(self) -> str:
        elapsed = self._clock() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta_s = f"{eta:.0f}s" if eta == eta else "?"
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.label}: {self.done}/{self.total}{failed} ({rate:.2f}/s, ETA {eta_s})"

    def update(self, n: int = 1, *, failed: int = 0) -> None:
        """``n`` more items done, ``failed`` of them failed."""
        self.done += n
        self.failed += failed
        now = self._clock()
        if now - self._last < self.interval or self.done >= self.total:
            return  # the last item is reported by close()
        self._last = now
        if self.tty:
            self.stream.write("\r" + self.line() + "\033[K")
            self._drawn = True
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self, note: str = "") -> None:
        """Clear the live line and log one summary line (with ``note`` appended)."""
        if self._closed:
            return
        self._closed = True
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
        elapsed = self._clock() - self.t0
        failed = f", {self.failed} failed" if self.failed else ""
        log.info("%s: %d/%d done%s in %.1f s%s", self.label, self.done, self.total, failed,
                 elapsed, f"; {note}" if note else "")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
