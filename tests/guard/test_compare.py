"""Guards compared: which config entries form the rows, the output guard as post-processing
(equal to what the guard gives on the same text), and the table on scored rows whose rates,
bounds, flags and latencies are counted by hand."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from copyprobe.config import ConfigError, validate_config
from copyprobe.guard.compare import (
    MIN_OVER_REFUSAL_N,
    OUTPUT_CHECKS,
    apply_output_guard,
    compared_rows,
    guard_kind,
    guards_compared,
    latency_stats,
    output_index,
    output_sources,
    write_guards_compared,
)
from copyprobe.stats.common import clopper_pearson, clopper_pearson_upper


# -- the Clopper-Pearson bound ---------------------------------------------------------------------
def test_the_one_sided_upper_bound_by_hand():
    # k = 0: 1 - alpha ** (1 / n), the "rule of three" (3/n)
    assert clopper_pearson_upper(0, 80) == pytest.approx(1 - 0.05 ** (1 / 80))
    assert clopper_pearson_upper(0, 1000) == pytest.approx(0.002991, abs=1e-6)
    # the one-sided 95% bound is the two-sided 90% interval's upper end
    assert clopper_pearson_upper(3, 10) == pytest.approx(clopper_pearson(3, 10, 0.10)[1])
    assert clopper_pearson_upper(5, 5) == 1.0 and clopper_pearson_upper(0, 0) == 1.0
    with pytest.raises(ValueError, match="0 <= k <= m"):
        clopper_pearson_upper(3, 2)
    # the old import still works
    from copyprobe.extraction.montecarlo import clopper_pearson as old

    assert old is clopper_pearson


# -- which entries form the rows -------------------------------------------------------------------
BASE = {"backend": "openai", "studies": ["copyright"], "model_id": "m", "api_key_env": "K"}
FULL = {"policy": "remind", "notice": True, "status": True, "risk": True}
OUT = {"min_words": 12, "action": "block"}


def _models(**guards) -> dict:
    models = {"m": copy.deepcopy(BASE)}
    for name, guard in guards.items():
        models[name] = {**copy.deepcopy(BASE), "base": "m", "guard": guard}
    return {"models": models}


def test_each_guard_block_gives_its_row_and_the_output_rows_their_sources():
    off = dict.fromkeys(("notice", "status", "risk"), False)
    cfg = _models(**{"m-remind": {**FULL, **off}, "m-guard": FULL,
                     "m-guard-no-risk": {**FULL, "risk": False},  # the ablation's
                     "m-out": {**FULL, "input": False, "output": OUT},
                     "m-both": {**FULL, "output": OUT},
                     "m-block-all": {**FULL, **off, "policy": "block"}})
    assert guard_kind({**FULL, **off}) == "reminder" and guard_kind(None) == "none"
    assert compared_rows(cfg) == {"m": [("none", "m"), ("reminder", "m-remind"),
                                        ("input", "m-block-all"), ("input", "m-guard"),
                                        ("output", "m-out"), ("both", "m-both")]}
    # output-only reads the base's generations, both the input guard's (the same block)
    assert output_sources(cfg) == {"m-out": "m", "m-both": "m-guard"}
    assert output_index({"output": OUT}, "bench") == "copyright-bench"
    assert output_index({"output": {**OUT, "index": "mine"}}, "bench") == "mine"


def test_a_both_guard_without_its_input_guard_is_an_error_naming_it():
    cfg = _models(**{"m-both": {**FULL, "output": OUT}, "m-other": {**FULL, "risk": False}})
    with pytest.raises(ConfigError, match=r"'models.m-both.guard.output'.*add a model with "
                                          r"base 'm' and this guard block less 'output'"):
        output_sources(cfg)


# -- the output guard as post-processing -----------------------------------------------------------
def _generations(texts: list[str], finish: list[str | None] | None = None,
                 status: list[str] | None = None) -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({
        "request_id": [f"r{i}" for i in range(n)], "cache_key": [f"k{i}" for i in range(n)],
        "text": texts, "status": status or ["ok"] * n, "model": "m", "sample_index": 0,
        "finish_reason": finish or ["stop"] * n, "latency_s": 0.5})


class _OutputGuard:
    """The agreed OutputGuard.check over a MemoryIndex (the output guard's own module is
    another branch's until merged): the first span of >= min_words words decides."""

    def __init__(self, index, *, min_words=12, action="block", block_text=None, max_docs=5):
        self.index, self.min_words, self.action = index, min_words, action
        self.block_text, self.max_docs = block_text or "blocked", max_docs

    def check(self, text):
        from types import SimpleNamespace

        spans = self.index.find_spans(text, min_words=self.min_words, max_docs=self.max_docs)
        if not spans:
            action, out, finish, span = "pass", text, None, None
        else:
            span = spans[0]
            action = self.action
            out = self.block_text if action == "block" else text[:span.char_start]
            finish = "guard_block" if action == "block" else "guard_truncate"
        rec = {"output_action": action, "output_span_words": span.n_words if span else None,
               "output_span_text": span.text if span else None,
               "output_doc_ids": [d.doc_id for d in span.docs] if span else None,
               "output_s": 0.001}
        return SimpleNamespace(action=action, span=span, text=out, finish_reason=finish,
                               check_s=0.001, as_record=lambda: rec)


POEM = ("the rain falls soft upon the silver hills and every river sings of distant seas "
        "where lanterns burn")


@pytest.fixture(scope="module")
def index():
    from copyprobe.spans.reference import MemoryIndex
    from copyprobe.spans.types import CorpusDoc

    return MemoryIndex([CorpusDoc(source="poems", doc_id="rain", text=POEM, title="Rain")])


@pytest.mark.parametrize("action", ["block", "truncate"])
def test_the_post_processed_generations_are_what_the_guard_gives(index, action):
    guard = _OutputGuard(index, min_words=8, action=action)
    recital = "Sure! " + POEM.title() + "."
    gens = _generations([recital, "A poem about rain and hills.", "refused", None],
                        finish=["stop", "stop", "guard_block", None],
                        status=["ok", "ok", "ok", "failed"])
    out, checks = apply_output_guard(gens, guard, model="m-out", source_model="m")
    want = guard.check(recital)
    assert want.action == action
    assert out.loc[0, "text"] == want.text and out.loc[0, "finish_reason"] == want.finish_reason
    if action == "truncate":
        assert out.loc[0, "text"] == "Sure! "
    # a passing answer, an answer the input guard blocked and a failure are kept as they are
    assert out.loc[1:, ["text", "finish_reason"]].equals(gens.loc[1:, ["text", "finish_reason"]])
    assert set(out["model"]) == {"m-out"} and out["cache_key"].equals(gens["cache_key"])
    assert list(checks.columns) == list(OUTPUT_CHECKS.columns)
    assert checks["checked"].tolist() == [True, True, False, False]
    assert checks.loc[0, "output_doc_ids"] == ["rain"] and checks.loc[0, "output_span_words"] \
        == len(POEM.split())
    assert checks.loc[1, "output_action"] == "pass" and pd.isna(checks.loc[1, "finish_reason"])
