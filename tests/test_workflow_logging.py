"""copyprobe.script_logging.setup_logging: an uncaught error in a workflow script is logged once."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from copyprobe.script_logging import setup_logging
log = setup_logging(sys.argv[1] if len(sys.argv) > 1 else None)
log.info("working")
log.error("an error the script logs itself")
def inner():
    raise ValueError("table t.csv row 3: bad date\\n'x'")
inner()
"""


def test_error_goes_to_the_log_file_once_not_to_stderr(tmp_path):
    log = tmp_path / "logs" / "job.log"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert "working" in proc.stderr and "bad date" not in proc.stderr
    assert "logs itself" not in proc.stderr  # Snakemake prints a failed job's log instead
    text = log.read_text()
    assert text.count("an error the script logs itself") == 1
    assert text.count("bad date") == 1 and ", in inner" in text
    assert text.strip().splitlines()[-1].endswith(
        "ERROR copyprobe: ValueError: table t.csv row 3: bad date 'x'")
    assert "\nValueError (message below)" in text


def test_without_a_log_file_the_error_goes_to_stderr_once():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count("bad date") == 1 and ", in inner" in proc.stderr
    assert proc.stderr.count("an error the script logs itself") == 1
