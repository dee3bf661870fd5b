"""Attribution of generations on a MemoryIndex (the oracle; the suffix-array index answers the
same): spans, coverage as the union of overlapping spans, the top document, failed
generations as status rows, and the tables' schemas."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from copyprobe.artifacts import ATTRIBUTION, SPANS, to_table
from copyprobe.spans.attribution import attribute, covered_words
from copyprobe.spans.reference import MemoryIndex
from copyprobe.spans.types import CorpusDoc, Span

A = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima"
B = "one two three four five six seven eight nine ten eleven twelve"


@pytest.fixture(scope="module")
def index() -> MemoryIndex:
    return MemoryIndex([CorpusDoc("s", "a", A, title="Doc A"), CorpusDoc("s", "b", B),
                        CorpusDoc("t", "a2", "zulu " + A[:40])])


def gens(*rows: tuple[str, str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"request_id": rid, "model": "m", "source": "src", "sample_index": 0,
                          "status": status, "text": text} for rid, status, text in rows])


def test_spans_coverage_top_doc_and_failed_rows(index):
    text = ("Well: Alpha, bravo charlie delta echo foxtrot! and then one two three four five "
            "six seven eight nine nothing more")
    spans, summary = attribute(gens(("r1", "ok", text), ("r2", "failed", None),
                                    ("r3", "ok", "nothing at all here")),
                               index, min_words=4, max_docs=5, name="idx")
    assert list(spans.columns) == SPANS.columns and list(summary.columns) == ATTRIBUTION.columns
    to_table(spans, SPANS), to_table(summary, ATTRIBUTION)  # the schemas take them
    assert spans["text"].tolist() == ["alpha bravo charlie delta echo foxtrot",
                                      "one two three four five six seven eight nine"]
    first = spans.iloc[0]
    # the A prefix is in doc a and in t/a2 (which holds A's first 40 characters)
    assert first["n_docs"] == 2 and first["count"] == 2 and first["n_docs_exact"]
    assert [(d["source"], d["doc_id"], d["word_start"]) for d in first["docs"]] == [
        ("s", "a", 0), ("t", "a2", 1)]
    assert text[first["char_start"]:first["char_end"]] == "Alpha, bravo charlie delta echo foxtrot"
    r1, r2, r3 = summary.to_dict("records")
    assert r1["status"] == "ok" and r1["generation_words"] == 20 and r1["n_spans"] == 2
    assert r1["covered_words"] == 15 and math.isclose(r1["coverage"], 15 / 20)
    assert r1["longest_span_words"] == 9 and r1["top_doc"] == "s:b"
    assert r1["index"] == "idx" and r1["index_digest"] == index.digest
    assert r2["status"] == "failed" and pd.isna(r2["n_spans"]) and pd.isna(r2["coverage"])
    assert r3["n_spans"] == 0 and r3["coverage"] == 0 and r3["top_doc"] == ""
    assert set(spans["request_id"]) == {"r1"}


def test_max_docs_caps_the_list_not_the_count(index):
    spans, _ = attribute(gens(("r", "ok", A[:39])), index, min_words=4, max_docs=1)
    assert spans.iloc[0]["n_docs"] == 2 and len(spans.iloc[0]["docs"]) == 1


def test_coverage_is_the_union_of_overlapping_spans():
    def s(a: int, b: int) -> Span:
        return Span(a, b, 0, 0, "", 1, 1, True)

    assert covered_words([s(0, 5), s(3, 8), s(10, 12)]) == 10
    assert covered_words([s(2, 9), s(3, 5)]) == 7
    assert covered_words([]) == 0


def test_bad_arguments_are_errors(index):
    with pytest.raises(ValueError, match="min_words"):
        attribute(gens(("r", "ok", "x")), index, min_words=0, max_docs=1)
    with pytest.raises(ValueError, match="no source column"):
        attribute(gens(("r", "ok", "x")).drop(columns="source"), index, min_words=3,
                  max_docs=1)
    with pytest.raises(ValueError, match="lacks column"):
        attribute(pd.DataFrame({"request_id": ["r"]}), index, min_words=3, max_docs=1)
