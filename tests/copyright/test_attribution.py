"""Copyright attribution on a MemoryIndex of two materials: which material a response
reproduces, its coverage, whether it is the request's own, failed responses as status rows,
and the table by task and notice form."""

from __future__ import annotations

import math

import pandas as pd

from copyprobe.artifacts import to_table
from copyprobe.copyright.attribution import (
    COPYRIGHT_ATTRIBUTION,
    attribute_responses,
    table_markdown,
    task_form_table,
)
from copyprobe.spans.reference import MemoryIndex
from copyprobe.spans.types import CorpusDoc

HARBOUR = ("The harbour master kept a log of every ship. Each entry named the tide. The log "
           "filled three shelves by winter.")
PARSER = "Call parse with a path to read a file. The result is a tree of nodes."


def test_materials_coverage_and_own_material():
    index = MemoryIndex([CorpusDoc("materials", "harbour.md", HARBOUR),
                         CorpusDoc("materials", "parser.md", PARSER)])
    manifest = pd.DataFrame([
        {"request_id": r, "material_id": mat, "title": "t", "category": "book",
         "notice_form": form, "task": task, "benign": False, "query_id": "q"}
        for r, mat, form, task in [("r1", "harbour.md", "none", "repetition"),
                                   ("r2", "harbour.md", "image_generic", "repetition"),
                                   ("r3", "parser.md", "none", "repetition"),
                                   ("r4", "parser.md", "none", "extraction")]])
    texts = {"r1": "Sure: the harbour master kept a log of every ship.",  # 1 + 9 words
             "r2": "I cannot help with that request.",
             "r3": "Here: the harbour master kept a log of every ship and more",  # not its own
             "r4": None}
    gens = pd.DataFrame([{"request_id": r, "model": "m", "sample_index": 0,
                          "status": "ok" if t else "failed", "text": t}
                         for r, t in texts.items()])
    spans, att = attribute_responses(gens, manifest, index, min_words=6, max_docs=5,
                                     name="copyright-b", benchmark="b")
    to_table(att, COPYRIGHT_ATTRIBUTION)
    by = att.set_index("request_id")
    assert by.loc["r1", "materials"] == ["harbour.md"] and by.loc["r1", "reproduces_own_material"]
    assert math.isclose(by.loc["r1", "coverage"], 9 / 10) and by.loc["r1", "own_covered_words"] == 9
    assert by.loc["r2", "materials"] == [] and not by.loc["r2", "reproduces_own_material"]
    assert by.loc["r3", "materials"] == ["harbour.md"]
    assert not by.loc["r3", "reproduces_own_material"] and by.loc["r3", "own_covered_words"] == 0
    assert by.loc["r4", "status"] == "failed" and by.loc["r4", "materials"] is None
    assert by.loc["r2", "notice_form"] == "image_generic"  # image prompts alike
    assert set(att["source"]) == {"copyright.b"} and set(spans["source"]) == {"copyright.b"}

    table = task_form_table([att]).set_index(["task", "notice_form"])
    rep = table.loc[("repetition", "none")]
    assert rep["responses"] == 2 and rep["reproducing"] == 2 and rep["own_material_share"] == 0.5
    assert table.loc[("extraction", "none"), "failed"] == 1
    assert table.loc[("repetition", "image_generic"), "reproducing_share"] == 0.0
    md = table_markdown(task_form_table([att]), benchmark="b", model="m", min_words=6,
                        index="copyright-b")
    assert "| repetition | none | 2 | 0 | 2 | 1.000 | 0.500 |" in md
