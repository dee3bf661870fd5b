"""The Monte Carlo path of rule extraction_score on its own: every open window takes its next
batch in one generation call of more samples (the earlier ones are the cached ones), a window
stops once the sequential test has decided, a failed sample makes a failed row, and the hit
is an exact prefix match of the suffix's text. The generation runner is replaced by a table
of fixed continuations (the engines' own tests cover the runner)."""

from __future__ import annotations

import math

import pandas as pd

from copyprobe.extraction.window_scoring import WindowJob, is_hit, mc_log_pz, score_monte_carlo
from copyprobe.extraction.windows import Window

MC = {"n": 1, "p": 0.5, "alpha": 0.05, "batch": 10, "max_samples": 40}


def job(doc: str, suffix: str) -> WindowJob:
    row = {"model": "m", "source": "s", "doc_id": doc, "split": "pre", "method": "monte_carlo",
           "window_index": 0, "start_token": 0, "n_prefix_tokens": 2, "n_tokens": 2}
    return WindowJob(row, Window(0, 0, (1, 2), (3, 4)), "the prefix", suffix)


def test_windows_stop_when_decided_and_later_calls_ask_for_more_samples():
    always = job("always", " and so on")  # every sample reproduces it: decided at once
    never = job("never", " the end")  # none does: decided at once as well
    fail = job("fail", " broken")
    calls = []

    def generate(prompts: pd.DataFrame, samples: int) -> pd.DataFrame:
        calls.append((sorted(prompts["request_id"]), samples))
        rows = []
        for rid in prompts["request_id"]:
            for s in range(samples):
                ok = not (rid.endswith("fail:w0") and s == 3)
                text = {"m:always:w0": " and so on, further", "m:never:w0": " and so on"
                        }.get(rid, " broken")
                rows.append({"request_id": rid, "sample_index": s,
                             "status": "ok" if ok else "failed", "text": text if ok else None,
                             "error_class": None if ok else "RateLimitError",
                             "error": None if ok else "429 after 6 attempts"})
        return pd.DataFrame(rows)

    rows = score_monte_carlo([always, never, fail], "completion", MC, generate)
    by = {r["doc_id"]: r for r in rows}
    assert calls[0] == (["m:always:w0", "m:fail:w0", "m:never:w0"], 10)
    assert by["always"]["mc_hits"] == 10 and by["always"]["mc_samples"] == 10
    assert by["always"]["mc_decision"] != by["never"]["mc_decision"]
    assert by["never"]["mc_hits"] == 0
    assert by["never"]["log_pz"] == -math.inf and mc_log_pz(0, 10) == -math.inf
    assert by["always"]["log_pz"] == 0.0
    assert by["fail"]["status"] == "failed" and by["fail"]["error_class"] == "RateLimitError"
    assert len(calls) == 1  # nothing left open after the first look


def test_an_undecided_window_draws_batch_after_batch_up_to_the_cap():
    half = job("half", " x")
    calls = []

    def generate(prompts: pd.DataFrame, samples: int) -> pd.DataFrame:
        calls.append(samples)
        return pd.DataFrame([{"request_id": "m:half:w0", "sample_index": s, "status": "ok",
                              "text": " x" if s % 2 else " y", "error_class": None,
                              "error": None} for s in range(samples)])

    [row] = score_monte_carlo([half], "completion", MC, generate)
    assert calls == [10, 20, 30, 40][:len(calls)] and calls[-1] <= 40
    assert row["mc_samples"] == calls[-1] and row["mc_hits"] == calls[-1] // 2
    assert row["status"] == "scored"



def test_a_hit_is_the_suffix_exactly_whitespace_before_it_aside():
    assert is_hit("and so on, further", " and so on")  # a chat turn starts without the space
    assert is_hit("\n and so on", "and so on")
    assert not is_hit(" And so on", " and so on")  # case counts
    assert not is_hit(" and so  on", " and so on")  # so does every space inside
    assert not is_hit(" and so", " and so on")  # a continuation cut short is no hit
