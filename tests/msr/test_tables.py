"""Tables: the results table with decoding, small-sample and HELM columns and both delta
directions explained; the sweep table (the MSR paper's Table 2); settings comparisons."""

from __future__ import annotations

from scipy.stats import kruskal

from copyprobe.msr.analysis import compare_settings
from copyprobe.msr.tables import (
    COLUMNS,
    comparison_rows,
    decoding_label,
    msr_label,
    sweep_markdown,
    sweep_table,
    table_rows,
    to_markdown,
)

SETTINGS = {"decoding": {"temperature": 0.1, "top_p": 1.0, "samples": 1},
            "msr": {"n": 6, "num_words": 1000}}
THREE_VS_THREE = {"a": ("pre", 9, 9, 8, 0.9), "b": ("pre", 8, 8, 4, 0.7),
                  "c": ("pre", 7, 7, 2, 0.6), "d": ("post", 2, 2, 0, 0.2),
                  "e": ("post", 1, 1, 1, 0.1), "f": ("post", 0, 0, 0, 0.0)}


def _many(n_pre, n_post):
    docs = {f"p{i}": ("pre", 9, 9, 3, 0.5) for i in range(n_pre)}
    docs.update({f"q{i}": ("post", 1, 1, 0, 0.1) for i in range(n_post)})
    return docs


def test_decoding_and_msr_labels():
    assert decoding_label(SETTINGS) == "temperature 0.1"
    assert decoding_label({"decoding": {"temperature": 0.0, "top_p": 0.9}}) == "greedy"
    assert decoding_label({"decoding": {"temperature": 0.7, "top_p": 0.9, "samples": 5}}) == (
        "temperature 0.7, top_p 0.9, 5 samples")
    assert decoding_label(None) == decoding_label({}) == "not recorded"
    assert msr_label(SETTINGS) == "n=6, 1000 words" and msr_label({}) == "not recorded"


def test_results_table_row(make_result):
    r = make_result(THREE_VS_THREE, model="gpt", settings=SETTINGS)
    df = table_rows([r])
    assert list(df.columns) == COLUMNS
    row = df.iloc[0].to_dict()
    assert (row["decoding"], row["msr_settings"]) == ("temperature 0.1", "n=6, 1000 words")
    assert (row["documents_pre"], row["documents_post"], row["generations_failed"]) == (3, 3, 0)
    assert row["small_sample"] == "yes (3 vs 3 documents)"
    assert row["f_pre"] == "3 3 2 1 0 0 0 0" and row["f_post"] == "0 0 0 0 0 0 0 0"
    assert row["cliffs_delta"] == -0.5 and row["ks_statistic"] == 0.5
    assert (row["max_longest_pre"], row["max_longest_post"]) == (9, 2)
    assert row["doc_cliffs_delta"] == -1.0
    assert (row["lcp_mean_pre"], row["lcp_mean_post"], row["lcp_cliffs_delta"]) == (
        4.67, 0.33, -1.0)
    assert (row["edit_similarity_mean_pre"], row["edit_similarity_mean_post"]) == (0.733, 0.1)


def test_small_sample_column_from_document_counts(make_result):
    big = table_rows([make_result(_many(12, 10))]).iloc[0]
    assert big["small_sample"] == "no"
    small = table_rows([make_result(_many(12, 9))]).iloc[0]
    assert small["small_sample"] == "yes (12 vs 9 documents)"


def test_markdown_explains_both_directions_and_shows_decoding(make_result):
    md = to_markdown(table_rows([make_result(THREE_VS_THREE, model="gpt", settings=SETTINGS)]))
    header = md.splitlines()[0]
    assert header.startswith("| Dataset | Model | Decoding | docs pre | docs post | "
                             "small sample | Cliff's delta | KS |")
    assert "| wiki | gpt | temperature 0.1 | 3 | 3 | yes (3 vs 3 documents) | -0.5 | 0.5 |" in md
    assert ("paper mode: Cliff's delta = P(f_post > f_pre) - P(f_post < f_pre) over the f_k "
            "values; negative: D_pre has more matching documents") in md
    assert ("per document: Cliff's delta = P(post > pre) - P(post < pre) over the documents' "
            "scores; negative: D_pre documents have longer matches") in md
    assert "small sample: fewer than 10 documents in a set" in md
    assert "- wiki / gpt (temperature 0.1; n=6, 1000 words): f_pre = [3 3 2 1 0 0 0 0]" in md


def test_sweep_table_is_table_2(make_result):
    # input lengths with k_max = L / 6 (integer division), in the order given
    by_length = {str(L): make_result(THREE_VS_THREE, k_max=L // 6) for L in (75, 250)}
    df = sweep_table(by_length, "input words")
    assert list(df["setting"]) == ["75", "250"]
    assert list(df["k_values"]) == ["5-12", "5-41"]
    first = df.iloc[0]
    assert (first["parameter"], first["cliffs_delta"], first["ks_statistic"]) == (
        "input words", -0.5, 0.5)
    kw = kruskal([0] * 8, [3, 3, 2, 1, 0, 0, 0, 0])
    assert first["kw_h"] == round(kw.statistic, 2) == 4.89
    assert first["kw_p"] == round(kw.pvalue, 4)
    assert first["small_sample"] == "yes (3 vs 3 documents)"
    md = sweep_markdown(df)
    assert md.splitlines()[0].startswith("| input words | k | docs pre | docs post |")
    assert (f"| 75 | 5-12 | 3 | 3 | yes (3 vs 3 documents) | -0.5 | 0.5 | 4.89 | "
            f"{round(kw.pvalue, 4)} | D_pre higher") in md
    assert "negative: D_pre has more matching documents" in md


def test_comparison_rows(make_result):
    a = make_result(THREE_VS_THREE, settings=SETTINGS)
    b = make_result({**THREE_VS_THREE, "a": ("pre", 3, 3, 0, 0.3)})
    row = comparison_rows([compare_settings(a, b, label_a="t=0.1", label_b="t=0.7",
                                            split="pre")]).iloc[0]
    fa, fb = [3, 3, 2, 1, 0, 0, 0, 0], [2, 2, 1, 0, 0, 0, 0, 0]
    assert (row["f_a"], row["f_b"]) == (" ".join(map(str, fa)), " ".join(map(str, fb)))
    assert (row["paired_documents"], row["paired_a_higher"], row["paired_ties"]) == (3, 1, 2)
    pairs = [(x > y) - (x < y) for x in fa for y in fb]
    assert row["cliffs_delta"] == round(sum(pairs) / 64, 3) == 0.203  # 13 / 64
    assert row["ks_statistic"] == 0.25  # largest CDF gap, at value 2: 6/8 vs 8/8
    assert "positive when t=0.1 is higher" in row["direction"]
