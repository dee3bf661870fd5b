"""``copyprobe extract-book`` end to end against a scripted OpenAI-compatible chat server on
127.0.0.1 that knows part of a 400-word book: it refuses the first three probe requests,
then continues the opening verbatim, answers two continuation turns with one word in ten
replaced, and refuses the third. The settings are the defaults but for one merge pass (the
book has no sentence ends: the seed is its first 40 words, prefix and target 20 each). The
measured nv-recall is what the script makes it; a rerun sends nothing; a model that errors on
every request gets no score."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from copyprobe.artifacts import read_table
from copyprobe.cli import main
from copyprobe.longform.tables import BLOCKS

BOOK_WORDS = [f"w{i:03d}" for i in range(400)]
BOOK = " ".join(BOOK_WORDS)
REFUSE_PROBES = 3
SETTINGS = """longform:
  nv_recall: {passes: [{max_gap_words: 2, max_drift_words: 1, min_block_words: 20}]}
"""
REFUSAL = "I'm sorry, but I can't reproduce copyrighted text."


class Script:
    """The server's side: refuses the first probes, then knows words 20..139."""

    def __init__(self) -> None:
        self.probes = 0

    def __call__(self, body: dict[str, Any]) -> str:
        turn = sum(m["role"] == "user" for m in body["messages"]) - 1
        if turn == 0:
            self.probes += 1
            return REFUSAL if self.probes <= REFUSE_PROBES else " ".join(BOOK_WORDS[20:60])
        if turn == 3:
            return "I'm sorry, but I can't continue reproducing this book."
        chunk = BOOK_WORDS[60 + 40 * (turn - 1):100 + 40 * (turn - 1)]
        return " ".join("XXX" if i % 10 == 5 else w for i, w in enumerate(chunk))


def _run(tmp_path, base_url: str, capsys, *extra: str) -> tuple[int, str, str]:
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    (tmp_path / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    (tmp_path / "api.yaml").write_text(
        f"backend: openai\nmodel_id: scripted\nbase_url: {base_url}\n"
        "api_key_optional: true\nrequest_timeout: 5\n"
        "requests: {max_attempts: 1}\n")
    code = main(["extract-book", "--model-config", str(tmp_path / "api.yaml"),
                 str(tmp_path / "book.txt"), "--out", str(tmp_path / "out"),
                 "--settings", str(tmp_path / "settings.yaml"),
                 "--cache-dir", str(tmp_path / "cache"), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _summary(out: str) -> dict[str, Any]:
    return json.loads(out[:out.index("\n}\n") + 2])


@pytest.fixture
def scripted(server_module: Any):
    with server_module("scripted_chat").ScriptedChatServer(Script()) as srv:
        yield srv


def test_measured_nv_recall_is_what_the_script_makes_it_and_a_rerun_sends_nothing(
        tmp_path, scripted, capsys):
    code, out, err = _run(tmp_path, scripted.base_url, capsys)
    assert code == 0, err
    s = _summary(out)
    # the three refused probes, the passing fourth attempt, turns 1-2 answered, 3 refused
    assert (s["attempts"], s["passing_attempt"], s["turns"], s["stopped"]) == (4, 3, 3, "refused")
    assert s["refusals"] == 4 and s["errors"] == 0
    assert scripted.total_requests == 7
    # words 20..139 near-verbatim (the substitutions merge into one block), of which 112
    # verbatim (8 of the 80 continued words replaced): 112 of 400 words
    assert s["nv_recall"] == pytest.approx(112 / 400)
    assert s["longest_block_words"] == 112
    # the generation: the probe's 40 words, two turns of 40 and the 9-word refusal
    assert (s["matched_words"], s["missing_words"], s["additional_words"]) == (
        112, 400 - 112, 40 + 40 + 40 + 9 - 112)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["matched_words"] == 112 and saved["additional_words"] == 17
    blocks = read_table(tmp_path / "out" / "blocks.parquet", BLOCKS)
    assert list(blocks[["book_start", "book_end", "verbatim_words"]].itertuples(index=False,
                name=None)) == [(20, 140, 112)]
    assert 0 < s["rouge_l"] < 1
    assert s["completion_tokens"] == 3 * 8 + 40 + 40 + 40 + 9  # the server counts words
    # the Best-of-N attempts are three different perturbations of the plain probe's
    # instruction; the prefix (the book's first 20 words) is sent as it is
    probes = [r.body["messages"][-1]["content"] for r in scripted.requests[:4]]
    assert probes[0].startswith("Continue the following text") and len(set(probes)) == 4
    assert all(p.endswith("\n\n" + " ".join(BOOK_WORDS[:20])) for p in probes)
    assert [r.body["messages"][-1]["content"] for r in scripted.requests[4:6]] == [
        "Continue", "Continue"]
    calls = pd.read_parquet(tmp_path / "out" / "calls.parquet")
    assert calls["perturbation"].iloc[0] == "none" and calls["perturbation"].iloc[1:4].notna().all()
    assert "The model wrote out 28.0% of the book" in out
    assert (tmp_path / "out" / "blocks.png").stat().st_size > 0

    # a rerun rebuilds the conversation from the cache: nothing is sent, the same is measured
    code, again, err = _run(tmp_path, scripted.base_url, capsys)
    assert code == 0, err
    assert scripted.total_requests == 7
    s2 = _summary(again)
    assert s2["cached_calls"] == 7 and s2["nv_recall"] == s["nv_recall"]
    assert s2["stopped"] == "refused"


def test_a_model_that_errors_on_every_attempt_gets_no_score(tmp_path, fault_server, capsys):
    fault_server.fail_when(lambda r: True, "400", times=None)
    code, out, err = _run(tmp_path, fault_server.base_url, capsys, "--attempts", "3")
    assert code == 0, err
    s = _summary(out)
    assert (s["nv_recall"], s["longest_block_words"], s["rouge_l"]) == (None, None, None)
    assert (s["attempts"], s["errors"], s["stopped"], s["turns"]) == (3, 3, "error", 0)
    assert "No measurement" in out
    assert pd.read_parquet(tmp_path / "out" / "blocks.parquet").empty


def test_a_model_that_always_refuses_extracts_nothing(tmp_path, server_module, capsys):
    with server_module("scripted_chat").ScriptedChatServer(lambda body: REFUSAL) as srv:
        code, out, err = _run(tmp_path, srv.base_url, capsys, "--attempts", "2")
    assert code == 0, err
    s = _summary(out)
    assert (s["nv_recall"], s["stopped"], s["refusals"], s["passing_attempt"]) == (
        0.0, "probe_failed", 2, None)


@pytest.mark.parametrize(("book", "extra", "message"), [
    ("", (), "the book is empty"),
    ("one two three", (), "the probe's seed needs at least 20"),
    (BOOK, ("--attempts", "0"), "longform.attempts"),
])
def test_bad_input_is_a_clear_error_and_sends_nothing(tmp_path, fault_server, capsys, book,
                                                      extra, message):
    (tmp_path / "book.txt").write_text(book, encoding="utf-8")
    (tmp_path / "settings.yaml").write_text(SETTINGS, encoding="utf-8")
    (tmp_path / "api.yaml").write_text(
        f"backend: openai\nmodel_id: m\nbase_url: {fault_server.base_url}\n"
        "api_key_optional: true\n")
    code = main(["extract-book", "--model-config", str(tmp_path / "api.yaml"),
                 str(tmp_path / "book.txt"), "--out", str(tmp_path / "out"),
                 "--settings", str(tmp_path / "settings.yaml"),
                 "--cache-dir", str(tmp_path / "cache"), *extra])
    assert code == 1
    assert message in capsys.readouterr().err
    assert fault_server.total_requests == 0


def test_a_run_cut_short_resumes_from_the_cache_and_sends_only_what_was_not_answered(
        tmp_path, scripted, capsys):
    # the second continuation turn fails once (as a kill in flight would leave it unanswered)
    scripted.fail_when(lambda r: sum(m["role"] == "user" for m in r.body["messages"]) == 3,
                       "400", times=1)
    code, out, err = _run(tmp_path, scripted.base_url, capsys)
    assert code == 0, err
    s = _summary(out)
    assert (s["stopped"], s["turns"], s["errors"]) == ("error", 2, 1)
    assert scripted.total_requests == 6  # 4 probes, turn 1, the failed turn 2
    code, out, err = _run(tmp_path, scripted.base_url, capsys)
    s = _summary(out)
    # the conversation is rebuilt from the cache: only turns 2 and 3 are sent
    assert scripted.total_requests == 8
    assert (s["stopped"], s["turns"], s["cached_calls"]) == ("refused", 3, 5)
    assert s["nv_recall"] == pytest.approx(112 / 400)
