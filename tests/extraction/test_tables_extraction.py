"""The extraction study's tables from a constructed WINDOWS table: the Parquet schema, the
per-document table, the statistics JSON's summary and the study's table (CSV and Markdown)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from copyprobe.artifacts import ArtifactError, read_table, write_table
from copyprobe.extraction.analysis import compare_splits
from copyprobe.extraction.stats import dataset_stats
from copyprobe.extraction.tables import (
    WINDOWS,
    comparison_numbers,
    documents_spec,
    documents_table,
    extraction_table,
    table_markdown,
)

sys.path.insert(0, str(Path(__file__).parent))
from windows_table import CORPUS, NS, PS, windows_table  # noqa: E402

ANALYSIS = {"ns": NS, "ps": PS, "headline": {"n": 1, "p": 0.5, "metric": "max_log_pz"},
            "statistics": {"n_boot": 200, "seed": 0, "blind_folds": 2}}


def test_the_windows_table_keeps_its_schema(tmp_path):
    path = write_table(windows_table(), tmp_path / "w.parquet", WINDOWS, {})
    back = read_table(path, WINDOWS)
    assert list(back.columns) == WINDOWS.columns
    assert back["status"].value_counts().to_dict() == {"scored": 24, "failed": 1, "skipped": 1}
    bad = windows_table().assign(window_index="first")
    with pytest.raises(ArtifactError, match="window_index"):
        write_table(bad, tmp_path / "bad.parquet", WINDOWS, {})


def test_per_document_table_counts_windows_and_labels_splits(tmp_path):
    docs = documents_table(windows_table(), model="m", dataset="ds", ns=NS, ps=PS)
    write_table(docs, tmp_path / "d.parquet", documents_spec(NS, PS), {})
    by = docs.set_index("doc_id")
    assert by.loc["doc0", "split"] == "D_pre" and by.loc["doc3", "split"] == "D_post"
    assert (by.loc["doc0", ["n_windows", "n_scored", "n_failed"]] == [5, 4, 1]).all()
    assert by.loc["short", "n_scored"] == 0 and math.isnan(by.loc["short", "max_log_pz"])
    assert by.loc["doc0", "max_pz"] == pytest.approx(0.9)
    # p_z >= 0.5: doc0's windows 0 and 1 (a run of 2) of its 4 scored windows
    frac = [c for c in docs.columns if c.startswith("frac_")]
    runs = [c for c in docs.columns if c.startswith("longest_run_")]
    assert len(frac) == len(runs) == len(NS) * len(PS)


def test_stats_summary_and_the_table():
    windows = windows_table()
    docs = documents_table(windows, model="m", dataset="ds", ns=NS, ps=PS)
    result = dataset_stats(docs, windows, CORPUS, model="m", dataset="ds", analysis=ANALYSIS)
    json.dumps(result, allow_nan=False)  # JSON as the rule writes it
    s = result["summary"]
    assert s["windows"] == {"scored": 24, "failed": 1, "skipped": 1}
    assert s["splits"]["D_pre"]["extractable"] == 4  # 0.9, 0.6, 0.7, 0.8
    assert s["splits"]["D_pre"]["fraction_extractable"] == pytest.approx(4 / 12)
    assert s["splits"]["D_post"]["extractable"] == 0
    assert s["splits"]["D_post"]["documents"] == 4 and result["excluded_documents"] == 1
    assert result["metric"] == "max_log_pz" and result["metrics"][0] == "max_log_pz"
    table = extraction_table([result, {**result, "dataset": "other"}])
    assert list(table["dataset"]) == ["ds", "other"]
    row = table.iloc[0]
    assert row["windows_scored"] == 24 and row["extractable_pre"] == pytest.approx(1 / 3)
    assert row["max_log_pz"] == pytest.approx(math.log(0.9))
    md = table_markdown(table)
    assert md.count("\n| m | ") == 2 and "Notes:" in md and "(n=1, p=0.5)" in md
    assert "| 0.9 |" in md  # max p_z
    # 4 documents a side: flagged, as MSR's table flags it
    assert bool(row["small_sample"]) and md.count(" | yes |\n") == 2 and "Small sample" in md


def test_the_workflow_prints_the_table_it_remade(tmp_path, monkeypatch, capsys):
    from copyprobe.extraction import paths as P
    from copyprobe.extraction.study import ExtractionStudy
    from copyprobe.studies import print_tables

    def print_table(jobs):
        print_tables([ExtractionStudy()], {}, jobs)

    monkeypatch.chdir(tmp_path)
    (tmp_path / P.TABLE_MD).parent.mkdir(parents=True)
    (tmp_path / P.TABLE_MD).write_text("| model |\n")
    print_table([("extraction_score", None)])
    assert capsys.readouterr().out == ""
    print_table([("extraction_table", None)])
    assert "extraction_table.md:\n\n| model |" in capsys.readouterr().out


def test_the_comparison_numbers_are_those_of_compare_splits():
    rng = np.random.default_rng(0)
    docs = pd.DataFrame({
        "doc_id": [f"d{i}" for i in range(16)],
        "split": ["D_pre"] * 8 + ["D_post"] * 8,
        "text": [f"old text number {i} about history" for i in range(8)]
                + [f"new text number {i} about novelty" for i in range(8)],
        "x": np.r_[rng.normal(1.0, 0.3, 8), rng.normal(0.0, 0.3, 8)],
    })
    stats = compare_splits(docs, metrics=["x"], n_boot=200, seed=0, blind_folds=2)
    got = comparison_numbers(stats, "x")
    assert got["auc"] == stats["metrics"]["x"]["auc"]
    assert [got["auc_low"], got["auc_high"]] == stats["metrics"]["x"]["auc_ci"]
    gap = stats["auc_minus_blind"]["x"]
    assert got["blind_auc"] == gap["blind_auc"]
    assert got["auc_minus_blind"] == pytest.approx(got["auc"] - got["blind_auc"])
    assert [got["auc_minus_blind_low"], got["auc_minus_blind_high"]] == gap["ci"]
    assert got["auc_minus_blind_low"] <= got["auc_minus_blind"] <= got["auc_minus_blind_high"]
    # a metric without a comparison reads as None, not as an error
    assert set(comparison_numbers({"metrics": {}}, "x").values()) == {None}


def test_an_empty_table_still_has_its_columns():
    df = extraction_table([])
    assert len(df) == 0 and "auc_minus_blind" in df.columns
    assert "Notes:" in table_markdown(pd.DataFrame(columns=df.columns))


def test_the_default_headline_orders_texts_of_a_model_that_extracts_nothing():
    """Nothing reaches p_z 0.5: the (n,p) share is 0 everywhere and orders nothing (AUC 0.5),
    while the default headline, mean log p_z per token, still tells D_pre from D_post; the
    table flags the small sample."""
    # the config's default (test_study_config.test_defaults_and_a_monte_carlo_model)
    headline = {"n": 1, "p": 0.5, "metric": "mean_log_pz_per_token"}
    w = windows_table()
    w = w.assign(log_pz=w["log_pz"] - 30.0, greedy_match=False)
    docs = documents_table(w, model="m", dataset="ds", ns=NS, ps=PS)
    analysis = {**ANALYSIS, "headline": headline}
    result = dataset_stats(docs, w, CORPUS, model="m", dataset="ds", analysis=analysis)
    row = extraction_table([result]).iloc[0]
    assert (row["extractable_pre"], row["extractable_post"]) == (0.0, 0.0)
    assert row["metric"] == "mean_log_pz_per_token" and row["auc"] == 1.0
    assert bool(row["small_sample"])
    from sklearn.metrics import roc_auc_score

    d = docs[docs["split"].isin(["D_pre", "D_post"]) & docs["frac_np_n1_p0.5"].notna()]
    assert roc_auc_score(d["split"] == "D_pre", d["frac_np_n1_p0.5"]) == 0.5  # the old one
