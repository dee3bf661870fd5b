"""MSR attribution on a MemoryIndex: a span echoing the prompt is in_prompt (not
cross-document, even where another document holds it too), a span of another document is
cross_doc, a D_post generation with a span of a D_pre document is a post-to-pre leak, and the
table counts them per (dataset, model, variant, split)."""

from __future__ import annotations

import pandas as pd
import pytest

from copyprobe.artifacts import to_table
from copyprobe.msr.attribution import (
    MSR_ATTRIBUTION,
    MSR_SPANS,
    attribute_run,
    attribution_table,
    shown_text,
    table_markdown,
)
from copyprobe.msr.prompts import build_prompt, segment
from copyprobe.spans.reference import MemoryIndex
from copyprobe.spans.types import CorpusDoc


def words(prefix: str, a: int, b: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(a, b))


SHARED = words("k", 0, 8)  # a quotation in p2 that q1's prompt shows too
DOCS = {("wiki", "p1"): words("w", 0, 24),
        ("wiki", "p2"): words("v", 0, 16) + " " + SHARED,
        ("ctrl", "q1"): words("u", 0, 6) + " " + SHARED + " " + words("u", 6, 20)}
SPLIT = {"p1": "pre", "p2": "pre", "q1": "post"}


@pytest.fixture(scope="module")
def run():
    index = MemoryIndex([CorpusDoc(s, d, t) for (s, d), t in DOCS.items()])
    prompts, gens = [], []
    for (source, doc_id), text in DOCS.items():
        prompt, reference = build_prompt(segment(text, 2), "chat", "Continue.")
        rid = f"m:{doc_id}"
        prompts.append({"request_id": rid, "model": "m", "source": source, "doc_id": doc_id,
                        "split": SPLIT[doc_id], "status": "ready", "prompt": prompt.to_json(),
                        "reference": reference, "document": text})
    gens = [
        # echo of its prompt, then its own reference, then p2's words
        ("m:p1", "ok", f"{words('w', 4, 12)} zz {words('w', 14, 22)} yy {words('v', 2, 10)}"),
        ("m:p2", "failed", None),
        # echo of its prompt's quotation (also in p2), then p1's reference: a leak
        ("m:q1", "ok", f"{SHARED} xx {words('w', 12, 21)}"),
    ]
    generations = pd.DataFrame([{"request_id": r, "model": "m", "sample_index": 0,
                                 "status": st, "text": t}
                                for r, st, t in gens])
    curated = pd.DataFrame([{"source": s, "doc_id": d, "split": SPLIT[d], "kept": True}
                            for s, d in DOCS])
    return attribute_run(generations, pd.DataFrame(prompts), curated, index, min_words=6,
                         max_docs=5, name="wiki-idx", dataset="ds", variant="main")


def test_flags_of_each_span(run):
    spans, _ = run
    to_table(spans, MSR_SPANS)
    got = {(r.request_id, r.text.split()[0]): (r.own_doc, r.in_prompt, r.cross_doc, r.pre_doc)
           for r in spans.itertuples()}
    assert got == {
        ("m:p1", "w4"): (True, True, False, False),     # echoes the prompt
        ("m:p1", "w14"): (True, False, False, False),   # its own held-out text
        ("m:p1", "v2"): (False, False, True, True),     # another (D_pre) document
        ("m:q1", "k0"): (True, True, False, False),     # in p2 too, but shown in the prompt
        ("m:q1", "w12"): (False, False, True, True),    # p1's text in a D_post generation
    }


def test_summary_counts_and_the_leak(run):
    _, summary = run
    to_table(summary, MSR_ATTRIBUTION)
    by = summary.set_index("request_id")
    assert by.loc["m:p1", "n_cross_doc"] == 1 and by.loc["m:p1", "n_in_prompt"] == 1
    assert not by.loc["m:p1", "post_to_pre_leak"]  # a D_pre generation cannot leak
    assert by.loc["m:q1", "post_to_pre_leak"] and by.loc["m:q1", "leak_docs"] == ["wiki:p1"]
    assert by.loc["m:q1", "longest_cross_doc_words"] == 9
    assert by.loc["m:p2", "status"] == "failed" and pd.isna(by.loc["m:p2", "n_cross_doc"])
    assert by["source"].to_dict() == {"m:p1": "wiki", "m:p2": "wiki", "m:q1": "ctrl"}


def test_the_table_and_its_markdown(run):
    spans, summary = run
    table = attribution_table([summary], [spans])
    rows = table.set_index("split")
    assert rows.loc["pre", "generations"] == 1 and rows.loc["pre", "failed"] == 1
    assert rows.loc["post", "post_to_pre_leaks"] == 1
    assert rows.loc["post", "top_leaks"] == "q1 -> wiki:p1: 9 words"
    assert rows.loc["pre", "longest_cross_doc_doc"] == "wiki:p2"
    md = table_markdown(table, min_words=6, max_docs=5, index={"ds": "wiki-idx"})
    assert "| ds | m | main | post | 1 | 0 |" in md and "ds: wiki-idx" in md


def test_shown_text_is_the_prompt_without_the_system_message():
    prompt, _ = build_prompt(["one two", "three four", "five six", "seven"], "chat", "Sys.")
    assert shown_text(prompt.to_json()) == "one two three four five six"
    prompt, _ = build_prompt(["one two", "three"], "completion", None)
    assert shown_text(prompt.to_json()) == "one two"


def test_the_longest_cross_doc_span_names_a_document_other_than_the_prompts_own():
    from copyprobe.msr.attribution import _other_doc

    span = {"source": "wiki", "doc_id": "p1",
            "docs": [{"source": "wiki", "doc_id": "p1"}, {"source": "wiki", "doc_id": "p2"}]}
    assert _other_doc(span) == "wiki:p2"
    assert _other_doc({**span, "docs": span["docs"][:1]}) == ""  # beyond the listed ones
