"""Scoring, the per-comparison analysis and the results table, on hand-made data."""

import json

import pandas as pd
import pytest

from copyprobe.artifacts import MATCHES, to_table
from copyprobe.cli import main
from copyprobe.msr.analysis import SCHEMA_VERSION, _small_sample, analyse, compare_settings
from copyprobe.msr.match_scoring import score
from copyprobe.msr.tables import table_rows, to_markdown
from copyprobe.prompt import Prompt

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
    assert r["documents_pre"] == 1 and r["documents_post"] == 1
    assert r["generations_failed"] == 1
    assert any("1 generation(s) failed" in n for n in r["notes"])
    by_doc = {d["doc_id"]: d for d in r["documents"]}
    assert (by_doc["p1"]["longest"], by_doc["q1"]["longest"], r["max_longest"]) == (9, 0, 9)
    assert by_doc["p1"]["paper_score"] == 9 and "p2" not in by_doc  # p2 failed
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


# --- stats JSON layout, pooling, HELM measures, small samples, settings comparisons ---------
KS = list(range(5, 13))


def _match_rows(rows):
    """MATCHES rows from (doc_id, split, sample, lcs_words, unique, longest, lcp, edit_sim)."""
    out = []
    for doc_id, split, sample, lcs_words, unique, longest, lcp, es in rows:
        out.append({"model": "m", "source": "s", "doc_id": doc_id, "split": split,
                    "request_id": f"{doc_id}-{sample}", "sample_index": sample, "status": "ok",
                    "paper_lcs": "x", "paper_lcs_words": lcs_words, "paper_unique": unique,
                    "word_longest": longest, "word_longest_text": "", "word_maximal": "[]",
                    "word_kgram_counts": [max(0, longest - k + 1) for k in KS],
                    "word_lcp": lcp, "word_edit_similarity": es, "reference_words": 20,
                    "generation_words": 20})
    return to_table(pd.DataFrame(out, columns=MATCHES.columns), MATCHES).to_pandas()


def _corpus(doc_ids):
    return pd.DataFrame({"source": "s", "doc_id": doc_ids,
                         "text": [f"text of {d} " * 3 for d in doc_ids]})


def test_samples_pool_to_the_best_counting_sample():
    # a: sample 0 has a 10-word match that is not unique, sample 1 a unique 7-word match, so
    # a counts at k = 5, 6 (7 > k) through sample 1; its word scores are the maxima.
    m = _match_rows([("a", "pre", 0, 10, False, 10, 4, 0.5), ("a", "pre", 1, 7, True, 7, 6, 0.7),
                     ("b", "post", 0, 6, True, 3, 0, 0.1)])
    r = analyse(m, _corpus(["a", "b"]), model="m", dataset="d", k_min=5, k_max=12,
                statistics=STATS)
    assert r["paper"]["f_pre"] == [1, 1, 0, 0, 0, 0, 0, 0]
    assert r["paper"]["f_post"] == [1, 0, 0, 0, 0, 0, 0, 0]
    assert r["word"]["survival_pre"] == [1] * 6 + [0, 0]  # longest 10 >= k for k <= 10
    assert r["word"]["kgrams_pre"] == [6, 5, 4, 3, 2, 1, 0, 0]
    a = next(d for d in r["documents"] if d["doc_id"] == "a")
    assert a == {"source": "s", "doc_id": "a", "split": "pre", "paper_score": 7,
                 "longest": 10, "longest_common_prefix": 6, "edit_similarity": 0.7}


def test_stats_json_keys_say_what_they_count():
    m = _match_rows([("a", "pre", 0, 9, True, 9, 9, 0.9), ("b", "post", 0, 2, True, 2, 0, 0.2)])
    settings = {"decoding": {"temperature": 0.1, "top_p": 1.0}, "msr": {"n": 6,
                                                                         "num_words": 1000}}
    r = analyse(m, _corpus(["a", "b"]), model="m", dataset="d", k_min=5, k_max=12,
                statistics=STATS, settings=settings)
    assert r["schema_version"] == SCHEMA_VERSION == 2
    assert r["k_values"] == KS and r["settings"] == settings
    assert (r["documents_pre"], r["documents_post"], r["generations_failed"]) == (1, 1, 0)
    for old in ("ks", "n_pre", "n_post", "failed", "scores"):
        assert old not in r
    for section in (r["paper"], r["per_document"], r["blind_baseline"],
                    *r["helm"].values()):
        assert "ks" not in section and "n_pre" not in section and "n_post" not in section
    assert r["paper"]["ks_statistic"] == 0.5 and r["per_document"]["ks_statistic"] == 1.0
    assert r["per_document"]["documents_pre"] == r["blind_baseline"]["documents_pre"] == 1
    assert r["paper"]["direction"].startswith("paper mode: Cliff's delta = P(f_post > f_pre)")
    assert "negative: D_pre" in r["per_document"]["direction"]
    assert analyse(m, _corpus(["a", "b"]), model="m", dataset="d", k_min=5, k_max=12,
                   statistics=STATS)["settings"] == {}


def test_helm_prefix_and_edit_similarity_reach_the_stats():
    m = _match_rows([("a", "pre", 0, 9, True, 9, 8, 0.9), ("b", "pre", 0, 9, True, 9, 4, 0.7),
                     ("c", "post", 0, 2, True, 2, 0, 0.2), ("d", "post", 0, 2, True, 2, 1, 0.1)])
    r = analyse(m, _corpus(list("abcd")), model="m", dataset="d", k_min=5, k_max=12,
                statistics=STATS)
    lcp, es = r["helm"]["longest_common_prefix"], r["helm"]["edit_similarity"]
    assert (lcp["mean_pre"], lcp["median_pre"], lcp["mean_post"]) == (6.0, 6.0, 0.5)
    assert es["mean_pre"] == pytest.approx(0.8) and es["mean_post"] == pytest.approx(0.15)
    assert lcp["cliffs_delta"] == -1.0 and es["cliffs_delta"] == -1.0
    assert lcp["roc_auc"] == 1.0 and lcp["documents_pre"] == 2
    assert lcp["small_sample"] is True


def test_small_sample_is_derived_from_document_counts():
    m = _match_rows([(f"p{i}", "pre", 0, 9, True, 9, 1, 0.5) for i in range(3)]
                    + [(f"q{i}", "post", 0, 2, True, 2, 0, 0.1) for i in range(3)])
    r = analyse(m, _corpus([f"p{i}" for i in range(3)] + [f"q{i}" for i in range(3)]),
                model="m", dataset="d", k_min=5, k_max=12, statistics=STATS)
    assert r["per_document"]["small_sample"] is True
    assert any(n.startswith("small sample: D_pre has 3 and D_post has 3 document(s), fewer "
                            "than 10 in a set") for n in r["notes"])
    assert _small_sample({}, 3, 30) is True and _small_sample({}, 10, 10) is False
    assert _small_sample({"small_sample": True}, 50, 50) is True  # the stats' own flag counts


def test_msr_score_and_the_workflow_count_f_k_the_same_way(tmp_path, capsys):
    prompts = _prompts()
    texts = ["k l m n o p q r s", "the dog sat on the log too", "tango sierra romeo quebec"]
    m = score(prompts, _gens(texts), k_min=5, k_max=12)
    corpus = prompts.rename(columns={"document": "text"})[["source", "doc_id", "text"]]
    r = analyse(m, corpus, model="m", dataset="d", k_min=5, k_max=12, statistics=STATS)
    csv = tmp_path / "g.csv"
    prompts.assign(generation=texts).to_csv(csv, index=False)
    args = ["msr-score", str(csv), "--document-col", "document", "--reference-col",
            "reference", "--generation-col", "generation"]
    assert main(args) == 0
    paper = json.loads(capsys.readouterr().out)
    assert main([*args, "--mode", "words"]) == 0
    words = json.loads(capsys.readouterr().out)
    both = [a + b for a, b in zip(r["paper"]["f_pre"], r["paper"]["f_post"])]
    # p1 has a unique 9-word match (k = 5..8), p2 a unique 7-word one (k = 5, 6), q1 4 words
    assert paper["f_k"] == both == [2, 2, 1, 1, 0, 0, 0, 0]
    assert words["f_k"] == [a + b for a, b in zip(r["word"]["survival_pre"],
                                                  r["word"]["survival_post"])]
    assert paper["k_values"] == r["k_values"]


# The temperature ablation: the MSR paper reports Cliff's delta 0.5625 and KS 0.5 for
# temperature 0.1 vs 0.7 (k = 4..15; f_4 195 vs 162, f_15 57 vs 31). Its vectors are only
# drawn in a figure, so these are vectors with the same end points and the same statistics.
T01 = [195, 180, 178, 172, 163, 151, 148, 94, 91, 86, 67, 57]
T07 = [162, 139, 132, 130, 91, 80, 72, 72, 52, 50, 39, 31]


def _result(f_pre, docs, settings=None):
    return {"model": "gpt", "dataset": "wiki", "k_values": list(range(4, 16)),
            "settings": settings or {}, "paper": {"f_pre": f_pre, "f_post": [0] * 12},
            "documents": [{"source": "s", "doc_id": d, "split": "pre", "longest": n}
                          for d, n in docs.items()]}


def test_compare_settings_reproduces_the_papers_temperature_statistics():
    a = _result(T01, {"x": 12, "y": 9, "z": 7, "w": 3}, {"decoding": {"temperature": 0.1}})
    b = _result(T07, {"x": 8, "y": 9, "z": 2, "v": 1}, {"decoding": {"temperature": 0.7}})
    c = compare_settings(a, b, label_a="t=0.1", label_b="t=0.7", split="pre")
    p = c["paper"]
    assert p["cliffs_delta"] == 0.5625 and p["ks_statistic"] == 0.5
    assert p["f_a"] == T01 and p["f_b"] == T07
    assert p["verdict"].startswith("t=0.1 higher")
    assert "positive when t=0.1 is higher" in p["direction"]
    assert c["settings_a"]["decoding"]["temperature"] == 0.1
    swapped = compare_settings(b, a, label_a="t=0.7", label_b="t=0.1", split="pre")
    assert swapped["paper"]["cliffs_delta"] == -0.5625
    q = c["paired"]  # x, y, z in both; w only in a, v only in b
    assert (q["documents"], q["documents_only_a"], q["documents_only_b"]) == (3, 1, 1)
    assert (q["a_higher"], q["b_higher"], q["ties"]) == (2, 0, 1)
    assert q["mean_difference"] == pytest.approx(3.0)
    # unpaired over {12, 9, 7, 3} vs {8, 9, 2, 1}: 11 pairs a > b, 4 a < b, 1 tie
    assert q["cliffs_delta_unpaired"] == pytest.approx((11 - 4) / 16)
    # Wilcoxon drops the zero difference: ranks of 4 and 5 both positive, exact p = 2 / 4
    assert q["wilcoxon_p"] == pytest.approx(0.5) and q["small_sample"] is True
    json.dumps(c, allow_nan=False)


def test_compare_settings_refuses_different_thresholds_and_bad_split():
    a = _result(T01, {})
    b = dict(_result(T07, {}), k_values=list(range(5, 17)))
    with pytest.raises(ValueError, match=r"a has k_values \[4, .*\] and b has \[5, "):
        compare_settings(a, b, label_a="a", label_b="b", split="pre")
    with pytest.raises(ValueError, match="split must be 'pre' or 'post'"):
        compare_settings(a, a, label_a="a", label_b="b", split="all")
    same = compare_settings(a, a, label_a="a", label_b="b", split="pre")
    assert same["paired"]["documents"] == 0 and same["paired"]["wilcoxon_p"] is None
    assert same["paired"]["notes"] == ["no document of split 'pre' is in both settings"]
