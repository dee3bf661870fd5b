"""Progress: one live line per job (in place on a terminal, throttled elsewhere) and one
summary line, never the same line twice on stderr."""

from __future__ import annotations

import io
import logging

from copyprobe.progress import Progress
from copyprobe.script_logging import setup_logging


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_logged_job_prints_each_line_once(tmp_path, capfd):
    """With the job's logging set up (log file and stderr), 10,000 quick updates give one
    summary line on stderr and one in the log file, not a line per tenth printed twice."""
    log_file = tmp_path / "job.log"
    setup_logging(str(log_file))
    try:
        progress = Progress(10_000, "generate m [00000-of-00001]")
        for _ in range(10_000):
            progress.update()
        progress.close()
        err = capfd.readouterr().err
    finally:
        logging.getLogger().handlers.clear()
    lines = [ln for ln in err.splitlines() if "generate m [00000-of-00001]" in ln]
    assert len(lines) == 1, err
    assert "generate m [00000-of-00001]: 10000/10000 done in" in lines[0]
    logged = [ln for ln in log_file.read_text().splitlines() if "generate m" in ln]
    assert logged == [ln for ln in logged if ln.endswith(lines[0].split(" INFO ", 1)[1])]
    assert len(logged) == 1


def test_not_a_terminal_one_line_per_interval():
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(1000, "work", stream=out, interval=30.0, clock=clock)
    for _ in range(1000):  # 1000 items over 100 s: lines at 30, 60 and 90 s
        clock.now += 0.1
        progress.update()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("work: 300/1000 (10.00/s, ETA 70s)")


def test_terminal_rewrites_one_line_in_place(caplog):
    clock, term = FakeClock(), Terminal()
    progress = Progress(100, "work", stream=term, tty_interval=1.0, clock=clock)
    for _ in range(100):  # a redraw every 4 items (1 s), the last item left to close()
        clock.now += 0.25
        progress.update(failed=1)
    text = term.getvalue()
    assert "\n" not in text  # never a new line: the same line is redrawn
    assert text.count("\r") == 24
    assert text.endswith("\rwork: 96/100, 96 failed (4.00/s, ETA 1s)\033[K")
    with caplog.at_level(logging.INFO, logger="copyprobe.progress"):
        progress.close()
        progress.close()  # idempotent
    assert term.getvalue().endswith("\r\033[K")  # the live line is cleared for the summary
    assert [r.getMessage() for r in caplog.records] == ["work: 100/100 done, 100 failed in 25.0 s"]
