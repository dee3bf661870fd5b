import datetime as dt
import math

import pandas as pd
import pytest

from copyprobe.artifacts import CURATION_REPORT, read_meta, read_table, to_table, write_table
from copyprobe.curation import curate
from copyprobe.curation.report import build_report

from .helpers import VOCAB, change_words, corpus, text

CUT = dt.date(2024, 6, 30)
STATS = {"blind_folds": 5, "seed": 0, "blind_warn_auc": 0.75, "n_boot": 200}


def _sources():
    """Source "old" (D_pre, 6 documents of 100..200 words, one too short, one exact copy, one
    as_of another cutoff) and source "new" (D_post, 4 documents, one repeating an "old" text)."""
    pre_vocab, post_vocab = VOCAB[:100], VOCAB[100:]
    old = corpus([
        {"doc_id": f"o{i}", "source": "old", "text": text(i, n=100 + 20 * i, vocab=pre_vocab),
         "published": dt.date(2010 + i, 1, 1), "licence": "CC-BY-SA-4.0" if i < 4 else "MIT"}
        for i in range(6)
    ] + [
        {"doc_id": "o_short", "source": "old", "text": "too few words here",
         "published": dt.date(2012, 5, 5), "licence": "MIT"},
        {"doc_id": "o_copy", "source": "old", "text": text(0, n=100, vocab=pre_vocab).upper(),
         "published": dt.date(2015, 1, 1), "licence": "MIT"},
        {"doc_id": "o_other_version", "source": "old", "text": text(99), "as_of":
         dt.date(2023, 1, 1), "published": dt.date(2010, 1, 1)},
    ])
    new = corpus([
        {"doc_id": f"n{i}", "source": "new", "text": text(50 + i, n=150, vocab=post_vocab),
         "published": dt.date(2025, 1 + i, 1), "licence": "CC0-1.0"}
        for i in range(3)
    ] + [
        # a D_post document repeating a D_pre one with two words changed: a leak
        {"doc_id": "n_leak", "source": "new",
         "text": change_words(text(3, n=160, vocab=pre_vocab), [10, 80]),
         "published": dt.date(2025, 6, 1), "licence": "CC0-1.0"},
        {"doc_id": "n_margin", "source": "new", "text": text(70, vocab=post_vocab),
         "published": dt.date(2024, 7, 2), "licence": "CC0-1.0"},
    ])
    return old, new


def _report(**kw):
    old, new = _sources()
    corp = pd.concat([old, new], ignore_index=True)
    cur = pd.concat([curate(old, model="m", cutoff=CUT, margin_days=5, min_words=10),
                     curate(new, model="m", cutoff=CUT, margin_days=5, min_words=10)],
                    ignore_index=True)
    return build_report(cur, corp, model="m", cutoff=CUT, datasets={"both": ["old", "new"]},
                        statistics=STATS, **kw)


def test_report_counts_dates_lengths_and_licences():
    rep = _report()
    t = rep.table.set_index("split")
    assert list(rep.table["split"]) == ["pre", "post", "none"]
    assert (rep.table["dataset"] == "both").all()
    assert list(rep.table["sources"].iloc[0]) == ["old", "new"]
    pre, post, none = t.loc["pre"], t.loc["post"], t.loc["none"]
    assert (pre["kept"], pre["excluded"]) == (6, 2)
    assert (pre["excluded_too_short"], pre["excluded_exact_duplicate"]) == (1, 1)
    assert (post["kept"], post["excluded"]) == (4, 0)
    assert (none["kept"], none["excluded"], none["excluded_margin"]) == (0, 1, 1)
    assert (pre["published_min"], pre["published_max"]) == (dt.date(2010, 1, 1),
                                                            dt.date(2015, 1, 1))
    assert (post["published_min"], post["published_max"]) == (dt.date(2025, 1, 1),
                                                              dt.date(2025, 6, 1))
    # D_pre lengths 100, 120, ..., 200 words
    assert [pre[c] for c in ("words_min", "words_p25", "words_median", "words_p75",
                             "words_max")] == [100, 125, 150, 175, 200]
    assert dict(pre["licences"]) == {"CC-BY-SA-4.0": 4, "MIT": 2}
    assert dict(post["licences"]) == {"CC0-1.0": 4}
    assert math.isnan(none["words_median"]) and pd.isna(none["published_min"])
    assert (rep.table["other_versions"] == 1).all()
    # the table fits its declared schema
    assert to_table(rep.table, CURATION_REPORT).num_rows == 3


def test_cross_source_leak_is_reported_not_dropped():
    rep = _report()
    assert len(rep.pairs) == 1
    p = rep.pairs.iloc[0]
    assert (p["source"], p["doc_id"], p["split"]) == ("new", "n_leak", "post")
    assert (p["other_source"], p["other_doc_id"], p["other_split"]) == ("old", "o3", "pre")
    assert p["kind"] == "near" and 0.8 <= p["similarity"] < 1
    t = rep.table.set_index("split")
    assert t.loc["pre", "cross_source_duplicates"] == t.loc["post", "cross_source_duplicates"] == 1
    assert t.loc["pre", "cross_split_duplicates"] == t.loc["post", "cross_split_duplicates"] == 1
    assert t.loc["post", "kept"] == 4  # reported, still kept
    md = rep.to_markdown()
    assert "**Leak warning:** 1 pair(s)" in md
    assert "| new/n_leak | post | old/o3 | pre | near |" in md


def test_blind_baseline_separates_disjoint_vocabularies():
    rep = _report()
    row = rep.table.iloc[0]
    # D_pre and D_post are written from disjoint word lists (but for the leak, a D_post
    # document in D_pre's words): text alone separates them, above the warning level 0.75
    assert row["blind_auc"] >= 0.75
    assert row["blind_auc_low"] <= row["blind_auc"] <= row["blind_auc_high"]
    assert row["blind_folds"] == 4  # reduced to the 4 D_post documents
    assert "separates D_pre from D_post" in row["blind_note"]
    assert (rep.table["blind_auc"] == row["blind_auc"]).all()


def test_blind_baseline_is_nan_with_a_note_when_a_split_is_too_small():
    old, new = _sources()
    new = new[new["doc_id"] == "n0"]
    corp = pd.concat([old, new], ignore_index=True)
    cur = pd.concat([curate(old, model="m", cutoff=CUT), curate(new, model="m", cutoff=CUT)],
                    ignore_index=True)
    rep = build_report(cur, corp, model="m", cutoff=CUT, datasets={"both": ["old", "new"]},
                       statistics=STATS)
    row = rep.table.iloc[0]
    assert math.isnan(row["blind_auc"]) and math.isnan(row["blind_auc_low"])
    assert pd.isna(row["blind_folds"])
    assert "fewer than 2 documents in D_post" in row["blind_note"]
    assert "AUC NaN" in rep.to_markdown()


def test_markdown_lists_settings_counts_and_dropped_duplicates():
    md = _report(settings={"margin_before_days": 5, "margin_after_days": 5, "min_words": 10,
                           "max_words": None}).to_markdown()
    assert md.startswith("# Curation report: m (cutoff 2024-06-30)\n")
    assert "## Dataset both (sources: old, new)" in md
    assert "| pre | 6 | 2 | too short 1, exact duplicate 1 | 2010-01-01 to 2015-01-01 | " \
           "100 / 125 / 150 / 175 / 200 | CC-BY-SA-4.0 4, MIT 2 | 1 | 1 |" in md
    assert "| none | 0 | 1 | margin 1 |" in md
    assert "1 corpus row(s) are other models' versions" in md
    assert "| old | o_copy | exact | o0 | 1.000 |" in md
    assert "| old | 9 | 1 | 6 | 0 | 2 |" in md
    assert "more than 5 day(s) before the cutoff" in md
    assert "MinHash LSH, 128 permutations" in md


def test_report_of_a_curated_document_missing_from_the_corpus_names_it():
    old, new = _sources()
    cur = curate(old, model="m", cutoff=CUT)
    with pytest.raises(ValueError, match=r"curated document old/o1 of model 'm' is not in the "
                                         r"corpus of its source"):
        build_report(cur, old[old["doc_id"] != "o1"], model="m", cutoff=CUT,
                     datasets={"d": ["old"]}, statistics=STATS)


def test_report_parquet_round_trip(tmp_path):
    rep = _report()
    path = write_table(rep.table, tmp_path / "m.parquet", CURATION_REPORT, {"step": "test"})
    back = read_table(path, CURATION_REPORT)
    assert dict(back.set_index("split").loc["pre", "licences"]) == {"CC-BY-SA-4.0": 4, "MIT": 2}
    assert read_meta(path)["table"] == "curation_report"
