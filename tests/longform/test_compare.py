"""The long-form view beside the p_z map, on small hand-made tables: a 100-word document
whose p_z windows cover tokens 0..200 (2 tokens a word), one window with high p_z."""

from __future__ import annotations

import pandas as pd
import pytest

from copyprobe.longform.compare import high_pz_words, per_document, per_model


def windows(model: str, doc: str, log_pz: list[float], source: str = "s") -> pd.DataFrame:
    """Windows of 10 prefix and 40 suffix tokens every 50 tokens: suffixes 10-50, 60-100..."""
    return pd.DataFrame([{"model": model, "source": source, "doc_id": doc, "window_index": i,
                          "start_token": 50 * i, "n_prefix_tokens": 10, "n_tokens": 40,
                          "log_pz": lp, "greedy_match": False, "status": "scored"}
                         for i, lp in enumerate(log_pz)])


def test_high_pz_windows_map_to_words_by_relative_position():
    w = windows("m", "d", [0.0, -50.0, -50.0, -50.0])  # tokens 10..50 of 200: words 5..25
    high = high_pz_words(w, 100, 0.5)
    assert high.sum() == 20 and high[5] and high[24] and not high[25] and not high[4]


def test_a_failed_window_still_marks_where_the_document_ends():
    w = windows("m", "d", [0.0, -50.0, -50.0, -50.0])
    w.loc[3, ["status", "log_pz"]] = ["failed", None]  # tokens 160..200 not scored
    high = high_pz_words(w, 100, 0.5)
    assert high.sum() == 20 and high[5] and not high[25]


def test_documents_without_a_scored_window_or_placeable_words():
    """A document the extraction study could not score is not in both; where the windows
    may stop before the end (max_windows of them), the shares are null, not guessed."""
    docs = pd.DataFrame([{"model": "m", "source": "s", "doc_id": d, "book_words": 100,
                          "nv_recall": r} for d, r in (("a", 0.3), ("f", 0.2), ("k", 0.1))])
    blocks = pd.DataFrame([{"model": "m", "source": "s", "doc_id": "a", "book_start": 5,
                            "book_end": 25}])
    failed = windows("m", "f", [-1.0]).assign(status="failed")
    skipped = windows("m", "k", [-1.0]).assign(status="skipped", window_index=-1)
    win = pd.concat([windows("m", "a", [0.0, -50.0, -50.0, -50.0]), failed, skipped])
    rows = per_document(docs, blocks, win, 0.5)
    assert list(rows["doc_id"]) == ["a"] and rows["in_high_pz"].iloc[0] == 1.0
    cut = per_document(docs, blocks, win, 0.5, max_windows=4).iloc[0]
    assert pd.isna(cut["in_high_pz"]) and pd.isna(cut["high_pz_share"])
    assert cut["block_words"] == 20 and cut["mean_log_pz_per_token"] < 0
    m = per_model(per_document(docs, blocks, win, 0.5, max_windows=4)).iloc[0]
    assert m["block_words_in_high_pz"] is None and m["high_pz_share"] is None
    assert per_document(docs, blocks, win, 0.5, max_windows=5)["in_high_pz"].iloc[0] == 1.0


def test_agreement_per_document_and_rank_correlation_per_model():
    docs = pd.DataFrame([
        {"model": "m", "source": "s", "doc_id": d, "book_words": 100, "nv_recall": r}
        for d, r in (("a", 0.3), ("b", 0.2), ("c", 0.1), ("x", None))])
    # a: block on words 5..25 (all inside the high window); b: 0..40 (20 of 40 inside)
    blocks = pd.DataFrame([{"model": "m", "source": "s", "doc_id": "a", "book_start": 5,
                            "book_end": 25},
                           {"model": "m", "source": "s", "doc_id": "b", "book_start": 0,
                            "book_end": 40}])
    win = pd.concat([windows("m", "a", [0.0, -50.0, -50.0, -50.0]),
                     windows("m", "b", [0.0, -60.0, -60.0, -60.0]),
                     windows("m", "c", [-70.0, -70.0, -70.0, -70.0]),
                     windows("m", "x", [0.0, 0.0, 0.0, 0.0]),
                     windows("m", "z", [0.0, 0.0, 0.0, 0.0]),  # z: no long-form run
                     windows("m", "a", [0.0, 0.0, 0.0, 0.0], source="other")])
    rows = per_document(docs, blocks, win, 0.5)
    # x not measured, z and the other source's a not in both
    assert list(rows["doc_id"]) == ["a", "b", "c"]
    by = rows.set_index("doc_id")
    assert by.loc["a", "in_high_pz"] == 1.0 and by.loc["b", "in_high_pz"] == 0.5
    assert pd.isna(by.loc["c", "in_high_pz"]) and by.loc["c", "block_words"] == 0
    assert by.loc["a", "high_pz_share"] == 0.2 and by.loc["c", "high_pz_share"] == 0.0
    assert by.loc["a", "mean_log_pz_per_token"] == pytest.approx(-150 / 4 / 40)
    m = per_model(rows).iloc[0]
    assert (m["documents"], m["block_words"]) == (3, 60)
    assert m["block_words_in_high_pz"] == pytest.approx(40 / 60)
    # nv-recall 0.3 > 0.2 > 0.1 and mean log p_z per token in the same order
    assert m["spearman_rho"] == pytest.approx(1.0)


def test_too_few_documents_give_no_correlation():
    rows = pd.DataFrame([{"model": "m", "source": "s", "doc_id": "a", "nv_recall": 0.1,
                          "mean_log_pz_per_token": -1.0, "block_words": 0,
                          "in_high_pz": None, "high_pz_share": 0.0}])
    m = per_model(rows).iloc[0]
    assert m["spearman_rho"] is None and m["block_words_in_high_pz"] is None


def test_from_the_workflow_tables(tmp_path):
    """The rule's path: BLOCKS and WINDOWS as written, the blocks' source from the pair."""
    from copyprobe.artifacts import write_table
    from copyprobe.extraction.tables import WINDOWS
    from copyprobe.longform.compare import from_files
    from copyprobe.longform.tables import BLOCKS

    docs = pd.DataFrame([{"model": "m", "source": "s", "doc_id": d, "book_words": 100,
                          "nv_recall": r} for d, r in (("a", 0.3), ("b", 0.2), ("c", 0.1))])
    blocks = pd.DataFrame([{"model": "m", "doc_id": "a", "book_start": 5, "book_end": 25,
                            "out_start": 0, "out_end": 20, "words": 20, "verbatim_words": 20,
                            "position": 0.05}])
    win = pd.concat([windows("m", d, [lp, -50.0, -50.0, -50.0])
                     for d, lp in (("a", 0.0), ("b", -10.0), ("c", -20.0))])
    win = win.assign(**{c: None for c in WINDOWS.columns if c not in win})
    write_table(blocks, tmp_path / "blocks.parquet", BLOCKS, {})
    write_table(win, tmp_path / "windows.parquet", WINDOWS, {})
    rows = from_files(docs, [str(tmp_path / "blocks.parquet")],
                      [str(tmp_path / "windows.parquet")], [("m", "s")], 0.5)
    m = per_model(rows).iloc[0]
    assert (m["documents"], m["block_words"], m["block_words_in_high_pz"]) == (3, 20, 1.0)
    assert m["spearman_rho"] == pytest.approx(1.0)
    assert from_files(docs, [], [], [], 0.5).empty


def test_the_figure_of_the_rows_beside_the_p_z_map(tmp_path):
    """rule longform_figure's function on the per-document rows: one point per document,
    one series per model, its Spearman rho in the legend; none: a figure that says so."""
    from PIL import Image

    from copyprobe.longform.figures import plot_vs_pz

    rows = pd.DataFrame([{"model": m, "source": "s", "doc_id": d, "nv_recall": r,
                          "mean_log_pz_per_token": lp, "block_words": 0, "in_high_pz": None,
                          "high_pz_share": 0.0}
                         for m, d, r, lp in (("m", "a", 0.3, -0.1), ("m", "b", 0.2, -0.5),
                                             ("m", "c", 0.1, -0.9), ("n", "a", 0.0, -2.0))])
    legend = plot_vs_pz(rows, per_model(rows), tmp_path / "f.png")
    assert legend == ["m (3 documents, Spearman rho 1.00)", "n (1 document)"]
    assert Image.open(tmp_path / "f.png").size[0] > 300
    assert plot_vs_pz(rows.iloc[:0], per_model(rows.iloc[:0]), tmp_path / "e.png") == []
    assert (tmp_path / "e.png").stat().st_size > 0
