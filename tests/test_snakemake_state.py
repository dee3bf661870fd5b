"""Each Snakemake internal that copyprobe.snakemake_state reads, checked on a real (tiny)
workflow: the jobs to run before the first starts, the jobs run after success, the config
files read, and whether --configfile was merged into the Snakefile's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = """
from copyprobe.snakemake_state import config_files, configfile_merged, jobs_run, jobs_to_run

configfile: "base.yaml"

print("FILES", sorted(os.path.basename(f) for f in config_files(workflow)))
print("MERGED", configfile_merged(workflow))


rule all:
    input:
        expand("out/{x}.txt", x=config["xs"]),


rule make:
    output:
        "out/{x}.txt",
    shell:
        "touch {output}"


onstart:
    print("TORUN", sorted((r, w.get("x")) for r, w in jobs_to_run(workflow)))


onsuccess:
    print("RAN", sorted((r, w.get("x")) for r, w in jobs_run(workflow)))
"""


@pytest.fixture()
def wd(tmp_path: Path) -> Path:
    (tmp_path / "Snakefile").write_text("import os\n" + SNAKEFILE)
    (tmp_path / "base.yaml").write_text("xs: [a, b]\n")
    (tmp_path / "more.yaml").write_text("xs: [a, b, c]\n")
    return tmp_path


def _run(wd: Path, *args: str) -> str:
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=wd,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def _line(text: str, tag: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(tag + " "))[len(tag) + 1:]


def test_jobs_to_run_leave_out_done_jobs_and_jobs_run_name_them_after(wd: Path):
    (wd / "out").mkdir()
    (wd / "out" / "a.txt").write_text("")
    out = _run(wd)
    assert _line(out, "TORUN") == "[('all', None), ('make', 'b')]"
    assert _line(out, "RAN") == "[('all', None), ('make', 'b')]"
    assert _line(out, "FILES") == "['base.yaml']"
    assert _line(out, "MERGED") == "False"


def test_configfile_merged_unless_replaced(wd: Path):
    out = _run(wd, "--dry-run", "--configfile", "more.yaml")
    assert _line(out, "MERGED") == "True"
    assert _line(out, "FILES") == "['base.yaml', 'more.yaml']"
    assert "TORUN" not in out  # a dry run runs no onstart
    out = _run(wd, "--dry-run", "--configfile", "more.yaml", "--replace-workflow-config")
    assert _line(out, "MERGED") == "False"
    # the Snakefile's own is read (then replaced), so it is listed too
    assert _line(out, "FILES") == "['base.yaml', 'more.yaml']"
