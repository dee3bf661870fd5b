import datetime as dt
import random

import pytest

from copyprobe.curation import DedupSettings, curate
from copyprobe.curation.dedup import (
    CANDIDATE_RECALL,
    find_duplicates,
    jaccard,
    lsh_bands,
    normalise,
    shingles,
    text_key,
)

from .helpers import change_words, corpus, text

CUT = dt.date(2024, 6, 30)
OLD, NEW = dt.date(2010, 1, 1), dt.date(2011, 1, 1)


def test_normalised_text_and_key():
    assert normalise("  The  Cat\n\tsat ") == "the cat sat"
    assert text_key("The cat  sat") == text_key("the CAT\nsat")
    assert text_key("the cat sat") != text_key("the cat sat.")


def test_shingles_of_short_and_empty_texts():
    assert shingles("a b c d e f", 5) == {"a b c d e", "b c d e f"}
    assert shingles("A  b", 5) == {"a b"}
    assert shingles("   ", 5) == frozenset()


def test_bands_reach_the_recall_at_the_threshold():
    b, r = lsh_bands(0.8, 128)
    assert b * r <= 128
    assert 1 - (1 - 0.8 ** r) ** b >= CANDIDATE_RECALL
    # one more row per band would fall below it (the bands are the tightest that reach it)
    b2 = 128 // (r + 1)
    assert 1 - (1 - 0.8 ** (r + 1)) ** b2 < CANDIDATE_RECALL
    assert (b, r) == (21, 6)


def test_exact_duplicate_differing_in_case_and_spacing_is_dropped():
    t = text(1)
    c = corpus([
        {"doc_id": "orig", "text": t, "published": OLD},
        {"doc_id": "copy", "text": "  " + t.upper().replace(" ", "\n  "), "published": NEW},
    ])
    out = curate(c, model="m", cutoff=CUT, dedup={"near": False})
    by = out.set_index("doc_id")
    assert by.loc["orig", "kept"]
    assert not by.loc["copy", "kept"]
    assert by.loc["copy", "exclusion"] == "exact_duplicate"
    assert by.loc["copy", "duplicate_of"] == "orig"
    assert by.loc["copy", "similarity"] == 1.0
    assert by.loc["copy", "reason"] == ("exact duplicate of orig (same text after lowercasing "
                                        "and collapsing whitespace)")


def test_pair_differing_in_a_few_words_is_a_near_duplicate():
    t = text(2)
    edited = change_words(t, [20, 90, 160])
    sim = jaccard(shingles(t, 5), shingles(edited, 5))
    assert 0.8 <= sim < 1.0
    c = corpus([
        {"doc_id": "edited", "text": edited, "published": NEW},
        {"doc_id": "orig", "text": t, "published": OLD},
    ])
    by = curate(c, model="m", cutoff=CUT).set_index("doc_id")
    assert by.loc["orig", "kept"] and not by.loc["edited", "kept"]
    assert by.loc["edited", "exclusion"] == "near_duplicate"
    assert by.loc["edited", "duplicate_of"] == "orig"
    assert by.loc["edited", "similarity"] == pytest.approx(sim)
    assert by.loc["edited", "reason"] == (
        f"near duplicate of orig (Jaccard similarity {sim:.3f} of word 5-shingles, "
        "threshold 0.8)")
    # with near-duplicate removal off, both stay
    assert curate(c, model="m", cutoff=CUT, dedup={"near": False})["kept"].all()


def test_pair_sharing_less_than_half_is_kept():
    t = text(3)
    words = t.split()
    other = " ".join(words[:90] + text(4, n=110).split())  # same first 90 words of 200
    sim = jaccard(shingles(t, 5), shingles(other, 5))
    assert sim < 0.5
    c = corpus([{"doc_id": "a", "text": t, "published": OLD},
                {"doc_id": "b", "text": other, "published": NEW}])
    out = curate(c, model="m", cutoff=CUT)
    assert out["kept"].all() and (out["exclusion"] == "").all()


def test_just_below_the_threshold_is_kept_and_just_above_dropped():
    t = text(5, n=400)
    base = shingles(t, 5)
    # change words one by one until the similarity falls below 0.8
    positions, edited = [], t
    while jaccard(base, shingles(edited, 5)) >= 0.8:
        positions.append(7 + 13 * len(positions))
        above = edited
        edited = change_words(t, positions)
    assert jaccard(base, shingles(above, 5)) >= 0.8 > jaccard(base, shingles(edited, 5))
    s = DedupSettings()
    assert find_duplicates([("t", t), ("above", above)], s).keys() == {"above"}
    assert find_duplicates([("t", t), ("below", edited)], s) == {}


def test_kept_copy_is_the_earliest_published_then_first_doc_id_whatever_the_order():
    t = text(6)
    rows = [
        {"doc_id": "c", "text": t, "published": OLD},
        {"doc_id": "b", "text": change_words(t, [5]), "published": OLD},
        {"doc_id": "a", "text": change_words(t, [100]), "published": NEW},
        {"doc_id": "z", "text": change_words(t, [150]), "published": dt.date(2005, 1, 1)},
    ]
    results = set()
    for seed in range(4):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        out = curate(corpus(shuffled), model="m", cutoff=CUT).set_index("doc_id")
        results.add((tuple(sorted(out.index[out["kept"]])),
                     tuple(out.loc[["a", "b", "c"], "duplicate_of"])))
    assert results == {(("z",), ("z", "z", "z"))}
    # among documents of the same date, the first doc_id is kept
    out = curate(corpus(rows[:2]), model="m", cutoff=CUT).set_index("doc_id")
    assert out.loc["b", "kept"] and out.loc["c", "duplicate_of"] == "b"


def test_dedup_runs_across_the_split_but_only_among_kept_documents():
    t = text(7)
    c = corpus([
        {"doc_id": "pre", "text": t, "published": OLD},
        {"doc_id": "post", "text": change_words(t, [3]), "published": dt.date(2025, 1, 1)},
        {"doc_id": "a_undated", "text": t, "published": None},
    ])
    by = curate(c, model="m", cutoff=CUT).set_index("doc_id")
    # a D_post copy of a D_pre document is dropped: the model may have seen its text
    assert by.loc["post", "split"] == "post" and by.loc["post", "duplicate_of"] == "pre"
    # a document excluded before dedup keeps its own reason and is never the kept copy
    assert by.loc["a_undated", "exclusion"] == "no_date"
    assert by.loc["a_undated", "duplicate_of"] == ""
    assert by.loc["pre", "kept"]


def test_bad_dedup_settings_are_refused():
    with pytest.raises(ValueError, match="threshold must lie in"):
        DedupSettings(threshold=0)
    with pytest.raises(TypeError):
        DedupSettings.from_params({"treshold": 0.5})
