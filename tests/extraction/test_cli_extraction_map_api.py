"""``copyprobe extraction-map`` with ``method: monte_carlo`` on an API model (an
OpenAI-compatible chat server, scripted, on 127.0.0.1): the windows are cut in words (the API
serves no tokenizer), each window's samples are real requests cached per sample index, the
sequential test stops a window once it is decided, and a second run with a larger sample
budget sends only the samples it did not have."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from copyprobe.artifacts import read_meta, read_table
from copyprobe.cli import main
from copyprobe.extraction.tables import WINDOWS

WORDS = [f"w{i:02d}" for i in range(40)]
TEXT = " ".join(WORDS)
#: the windows are 6 + 4 words with stride 10: windows 0..3; the server reproduces the suffix
#: of window 1 on every sample and of window 2 on every third, and never that of 0 or 3
MEMORISED = {1: 1, 2: 3}


def _answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
    start = WORDS.index(prompt.split()[0])
    window = start // 10
    every = MEMORISED.get(window)
    if every and body.get("seed", 0) % every == 0:
        # a chat answer starts without the space that joins the suffix to the prefix
        return " ".join(WORDS[start + 6:start + 10]) + " and more"
    return " something else entirely"


@pytest.fixture
def server(server_module: Any):
    with server_module("scripted_chat").ScriptedChatServer(_answer) as srv:
        yield srv


def _run(tmp_path, srv, out: str, max_samples: int, capsys) -> pd.DataFrame:
    (tmp_path / "text.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "api.yaml").write_text(
        f"backend: openai\nmodel_id: scripted\nbase_url: {srv.base_url}\n"
        "api_key_optional: true\nmethod: monte_carlo\nrequest_timeout: 5\n")
    code = main(["extraction-map", "--model-config", str(tmp_path / "api.yaml"),
                 str(tmp_path / "text.txt"), "--out", str(tmp_path / out),
                 "--prefix-tokens", "6", "--suffix-tokens", "4", "--stride", "10",
                 "--max-samples", str(max_samples), "--batch", "10",
                 "--cache-dir", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().out
    return read_table(tmp_path / out, WINDOWS).sort_values("window_index")


def test_monte_carlo_through_an_api_samples_once_and_resumes(tmp_path, server, capsys):
    first = _run(tmp_path, server, "a.parquet", 20, capsys)
    assert list(first["window_index"]) == [0, 1, 2, 3]
    assert set(first["method"]) == {"monte_carlo"} and set(first["status"]) == {"scored"}
    assert list(first["n_tokens"]) == [4] * 4  # words: the API has no tokenizer to serve
    by = first.set_index("window_index")
    # window 1 is reproduced on every sample: decided after the first look
    assert by.loc[1, "mc_hits"] == by.loc[1, "mc_samples"] == 10
    assert by.loc[1, "mc_decision"] == "extractable" and by.loc[1, "log_pz"] == 0.0
    # never reproduced: p_z estimated 0 (log -inf), bounded by the interval's upper end
    assert by.loc[0, "mc_hits"] == 0 and by.loc[0, "log_pz"] == -math.inf
    assert by.loc[0, "mc_hi"] < 0.5 and by.loc[0, "mc_decision"] == "not_extractable"
    # one in three samples: the sequential test cannot decide p_z >= 0.5 within 20 samples
    assert by.loc[2, "mc_samples"] == 20 and 6 <= by.loc[2, "mc_hits"] <= 7
    sent = server.total_requests
    assert sent == int(first["mc_samples"].sum())  # one request per sample, none repeated
    again = _run(tmp_path, server, "b.parquet", 20, capsys)
    assert server.total_requests == sent  # everything from the cache
    assert list(again["mc_hits"]) == list(first["mc_hits"])
    more = _run(tmp_path, server, "c.parquet", 40, capsys)
    by_more = more.set_index("window_index")
    # only the undecided window draws more, and only the samples it did not have
    assert server.total_requests - sent == by_more.loc[2, "mc_samples"] - 20
    assert list(by_more.loc[[0, 1, 3], "mc_samples"]) == [10, 10, 10]
    assert by_more.loc[2, "mc_samples"] > 20


def test_several_texts_one_table_in_words_a_short_text_named_and_the_figure(
        tmp_path, server, capsys):
    """Per text: largest p_z, median log p_z, mean log-prob per word, greedy windows, the
    longest extractable run and the share; a text shorter than one window is named with its
    reason (not an internal error); the unit is said; the figure draws the windows without a
    hit and labels its axis in words."""
    from copyprobe.extraction.figures import plot_extraction_map

    (tmp_path / "text.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "short.txt").write_text("w00 w01 w02", encoding="utf-8")
    (tmp_path / "api.yaml").write_text(
        f"backend: openai\nmodel_id: scripted\nbase_url: {server.base_url}\n"
        "api_key_optional: true\nmethod: monte_carlo\nrequest_timeout: 5\n")
    code = main(["extraction-map", "--model-config", str(tmp_path / "api.yaml"),
                 str(tmp_path / "text.txt"), str(tmp_path / "short.txt"),
                 "--out", str(tmp_path / "m.parquet"), "--prefix-tokens", "6",
                 "--suffix-tokens", "4", "--stride", "10", "--max-samples", "10",
                 "--cache-dir", str(tmp_path / "cache"),
                 "--figure", str(tmp_path / "m.png")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    out = printed.out
    assert "lengths in words (the server has no tokenizer" in out
    assert "short.txt: not scored, shorter than one window (3 words, " in out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
            if ln.startswith(("text.txt", "short.txt"))}
    # text.txt: 4 windows, window 1 always reproduced (p_z 1); one extractable window, run 1
    assert rows["text.txt"][1:3] == ["4", "1"]
    assert rows["text.txt"][-3:] == ["-", "1", "0.2500"]  # greedy: not for Monte Carlo
    assert rows["short.txt"][1:] == ["0", "-", "-", "-", "-", "-", "-"]
    assert "log-prob/word" in out and "extractable fraction of the windows" in out
    df = read_table(tmp_path / "m.parquet", WINDOWS)
    assert read_meta(tmp_path / "m.parquet")["unit"] == "words"  # the table says its unit
    fig = plot_extraction_map(df[df["doc_id"] == "text.txt"].assign(
        log_pz=-math.inf), tmp_path / "none.png", unit="words")
    assert fig.axes[0].get_xlabel() == "word offset of the window's suffix in the document"
    assert not [t for t in fig.axes[0].texts if "no scored window" in t.get_text()]
