"""Scoring, the per-comparison analysis and the results table, on hand-made data."""

import json

import pandas as pd

from copyprobe.msr.analysis import analyse
from copyprobe.artifacts import MATCHES, to_table
from copyprobe.prompt import Prompt
from copyprobe.msr.scoring import score
from copyprobe.msr.tables import table_rows, to_markdown

STATS = {"n_boot": 200, "seed": 0, "blind_folds": 2, "blind_warn_auc": 0.75}


def _prompts():
    docs = {
        "p1": "a b c d e f g h i j k l m n o p q r s t",
        "p2": "the cat sat on the mat and then the dog sat on the log too",
        "q1": "zulu yankee xray whiskey victor uniform tango sierra romeo quebec",
    }
    refs = {"p1": "k l m n o p q r s t", "p2": "the dog sat on the log too",
            "q1": "tango sierra romeo quebec"}
    return pd.DataFrame({
        "request_id": list(docs), "model": "m", "source": ["s", "s", "c"],
        "doc_id": list(docs), "split": ["pre", "pre", "post"], "status": "ready",
        "prompt": Prompt("completion", text="x").to_json(), "reference": list(refs.values()),
        "document": list(docs.values()),
    })


def _gens(texts, status=None):
    n = len(texts)
    return pd.DataFrame({"request_id": ["p1", "p2", "q1"][:n], "sample_index": [0] * n,
                         "text": texts, "status": status or ["ok"] * n})


def test_score_and_failed_rows_are_not_scored():
    gens = _gens(["k l m n o p q r s", "FAIL", "nothing shared"], ["ok", "failed", "ok"])
    gens.loc[1, "text"] = None
    m = score(_prompts(), gens, k_min=5, k_max=12)
    to_table(m, MATCHES)
    by = m.set_index("doc_id")
    assert by.loc["p1", "word_longest"] == 9 and by.loc["p1", "paper_lcs_words"] == 9
    assert by.loc["p1", "word_kgram_counts"][:2] == [5, 4]
    assert by.loc["p2", "status"] == "failed" and pd.isna(by.loc["p2", "word_longest"])
    assert by.loc["q1", "word_longest"] == 0


def test_analyse_counts_and_failed_note():
    prompts = _prompts()
    gens = _gens(["k l m n o p q r s", "FAIL", "nothing shared"], ["ok", "failed", "ok"])
    m = score(prompts, gens, k_min=5, k_max=12)
    corpus = prompts.rename(columns={"document": "text"})[["source", "doc_id", "text"]]
    r = analyse(m, corpus, model="m", dataset="d", k_min=5, k_max=12, statistics=STATS)
    # p1: 9-word unique match -> counts for k = 5..8 (9 > k); q1 nothing.
    assert r["paper"]["f_pre"] == [1, 1, 1, 1, 0, 0, 0, 0]
    assert r["paper"]["f_post"] == [0] * 8
    assert r["word"]["survival_pre"] == [1, 1, 1, 1, 1, 0, 0, 0]
    assert r["n_pre"] == 1 and r["n_post"] == 1 and r["failed"] == 1
    assert any("1 generation(s) failed" in n for n in r["notes"])
    assert r["scores"] == {"longest_pre": [9], "longest_post": [0], "max_longest": 9}
    json.dumps(r, allow_nan=False)


def test_analyse_degenerate_identical_and_empty_post():
    prompts = _prompts()
    m = score(prompts, _gens(["zzz", "yyy", "xxx"]), k_min=5, k_max=12)
    corpus = prompts.rename(columns={"document": "text"})[["source", "doc_id", "text"]]
    r = analyse(m, corpus, model="m", dataset="d", k_min=5, k_max=12, statistics=STATS)
    assert r["paper"]["verdict"] == "no document reached k words in either set"
    assert r["paper"]["kw_h"] is None
    assert any("no document's verbatim match exceeded 5 words" in n for n in r["notes"])
    r2 = analyse(m[m["split"] == "pre"], corpus, model="m", dataset="d", k_min=5, k_max=12,
                 statistics=STATS)
    assert any("D_post is empty" in n for n in r2["notes"])
    json.dumps(r2, allow_nan=False)
    rows = table_rows([r, r2])
    md = to_markdown(rows)
    assert "undefined" in md and "no document reached k words" in md
    assert "nan" not in md.lower()


def test_highly_repetitive_pair_is_scored_with_a_larger_budget():
    p = _prompts().iloc[[0]].assign(reference="the " * 2000, document="the " * 2000)
    m = score(p, _gens(["the " * 2000]), k_min=5, k_max=12)
    assert m["status"].iloc[0] == "ok" and m["word_longest"].iloc[0] == 2000
