"""The output-side guard: incremental words, the streaming window matcher, block and truncate,
the guard spec's ``output``/``input`` keys, the guarded backend's finish reasons, and the
proxy's SSE relay.

The protected materials are a small :class:`~copyprobe.spans.reference.MemoryIndex` (the
brute-force oracle, the same protocol as the suffix-array index) over documents of seeded
pseudo-words, so no window of the background text occurs by chance; answers plant a passage
of a protected document at a known word offset.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from copyprobe.guard import pipeline
from copyprobe.guard.backend import GUARD_DECISIONS, guard_decisions
from copyprobe.guard.output import OUTPUT_BLOCK_TEXT, OutputGuard, output_reason
from copyprobe.guard.pipeline import Guard, GuardConfigError, GuardSpec
from copyprobe.guard.relay import StreamRelay, check_completion
from copyprobe.prompt import Prompt
from copyprobe.spans.encoding import tokenize
from copyprobe.spans.reference import MemoryIndex
from copyprobe.spans.stream import StreamTokens, WindowMatcher
from copyprobe.spans.types import CorpusDoc

L = 6
_rng = random.Random(19)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou")
                   for _ in range(rng.randint(2, 4)))


def _words(n: int, rng: random.Random = _rng) -> list[str]:
    return [_word(rng) for _ in range(n)]


DOC_A = _words(60)
DOC_B = _words(60)
DOCS = [CorpusDoc("lyrics", "song-a", " ".join(DOC_A), title="Song A"),
        CorpusDoc("lyrics", "song-b", " ".join(DOC_B), title="Song B")]
INDEX = MemoryIndex(DOCS)
#: an answer: chatter, 15 words of song A (words 10..25), chatter
BEFORE = "Sure, here it is!\n\n" + " ".join(_words(8)) + ", "
PASSAGE = " ".join(w.capitalize() if i % 5 == 0 else w for i, w in enumerate(DOC_A[10:25]))
ANSWER = BEFORE + PASSAGE + ". " + " ".join(_words(10)) + "."
SPAN_START = len(BEFORE)


def _run(stream: Any, pieces: list[str]) -> tuple[list[str], Any]:
    released, finding = [], None
    for p in pieces:
        r, finding = stream.feed(p)
        released.append(r)
        if finding is not None:
            break
    if finding is None:
        r, finding = stream.finish()
        released.append(r)
    return released, finding


def _chunks(text: str, rng: random.Random, top: int = 9) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, top)
        out.append(text[i:i + n])
        i += n
    return out


# -- incremental words ------------------------------------------------------------------------

ALPHABET = list("abc xyz") + ["Don't", "ﬁ", "e\u0301", "Straße", "  ", "\n", "\u00a0", ",", "—",
                               "'", "2nd_act", "東京", "🙂", "\t"]


@pytest.mark.parametrize("unit", ["words", "whitespace"])
def test_streamed_tokens_equal_the_whole_texts_tokens(unit: str):
    rng = random.Random(7)
    for _ in range(150):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        whole = tokenize(text, unit)
        s = StreamTokens(lambda t: tokenize(t, unit))
        for piece in _chunks(text, rng, 5):
            s.feed(piece)
            assert s.tokens == whole.tokens[:len(s)]  # never a token that changes later
        s.finish()
        assert (s.tokens, s.starts, s.ends) == (whole.tokens, whole.starts, whole.ends), text


def test_a_partial_word_waits_for_a_separator_or_the_end():
    s = StreamTokens(lambda t: tokenize(t, "words"))
    assert s.feed("Hello wor") == 1 and s.tokens == ["hello"]
    assert s.feed("ld") == 0
    assert s.feed(", again ") == 2 and s.tokens == ["hello", "world", "again"]
    assert s.feed("end") == 0 and s.finish() == 1 and s.tokens[-1] == "end"
    with pytest.raises(ValueError, match="finished"):
        s.feed("more")


# -- the window matcher and the output guard ---------------------------------------------------

def _expected_span_words() -> list[str]:
    return tokenize(PASSAGE, "words").tokens[:L]


def test_check_finds_the_whole_span_with_its_document():
    g = OutputGuard(INDEX, min_words=L, action="truncate")
    f = g.check(ANSWER)
    assert f.action == "truncate" and f.finish_reason == "guard_truncate"
    assert f.text == BEFORE and f.span.char_start == SPAN_START
    assert f.span.n_words == 15 and f.span.text == " ".join(DOC_A[10:25])
    assert [(d.doc_id, d.word_start) for d in f.span.docs] == [("song-a", 10)]
    assert f.as_record()["output_doc_ids"] == ["song-a"] and f.check_s > 0
    block = OutputGuard(INDEX, min_words=L).check(ANSWER)
    assert block.action == "block" and block.finish_reason == "guard_block"
    assert block.text == OUTPUT_BLOCK_TEXT.format(reason=output_reason(block.span))
    assert 'protected material ("Song A")' in block.text
    clean = OutputGuard(INDEX, min_words=16).check(ANSWER)  # the passage is 15 words
    assert (clean.action, clean.text, clean.span, clean.finish_reason) == \
        ("pass", ANSWER, None, None)


def test_every_split_point_of_the_passage_is_caught_and_truncated_exactly():
    g = OutputGuard(INDEX, min_words=L, action="truncate")
    for k in range(len(ANSWER) + 1):
        released, f = _run(g.stream(), [ANSWER[:k], ANSWER[k:]])
        assert f.action == "truncate", k
        assert "".join(released) == BEFORE == f.text, k
        assert f.span.word_start == len(tokenize(BEFORE, "words")) and f.span.n_words == L
        assert f.span.text == " ".join(_expected_span_words())
        assert [d.doc_id for d in f.span.docs] == ["song-a"]


def test_random_chunk_sizes_never_release_a_protected_word():
    rng = random.Random(3)
    protected = set(DOC_A[10:25])
    for action in ("truncate", "block"):
        g = OutputGuard(INDEX, min_words=L, action=action)
        for _ in range(60):
            stream = g.stream()
            released = []
            for piece in _chunks(ANSWER, rng):
                r, f = stream.feed(piece)
                released.append(r)
                # what is out so far is a prefix of the text before the span
                assert BEFORE.startswith("".join(released))
                if f is not None:
                    break
            assert f is not None and f.action == action
            assert stream.feed("more") == ("", f) and stream.finish() == ("", f)
            sent = "".join(released)
            assert not protected & set(tokenize(sent, "words").tokens)
            if action == "truncate":
                assert sent == BEFORE == f.text
            else:  # block: the message replaces the rest
                assert BEFORE.startswith(sent) and f.text.startswith("I can't provide")


def test_a_clean_answer_is_released_whole_with_a_bounded_hold_back():
    text = BEFORE + " ".join(DOC_A[10:10 + L - 1]) + " " + " ".join(_words(20))
    g = OutputGuard(INDEX, min_words=L)
    stream = g.stream()
    released = []
    for piece in _chunks(text, random.Random(5), 4):
        r, f = stream.feed(piece)
        assert f is None
        released.append(r)
        held = tokenize(text[len("".join(released)):len(stream.text)], "words").tokens
        assert len(held) <= L  # L - 1 complete words and a partial one
    r, f = stream.finish()
    assert f.action == "pass" and "".join(released) + r == text == f.text
    assert f.check_s > 0 and f.as_record()["output_span_words"] is None


def test_a_span_at_the_very_end_is_caught_at_finish():
    text = "Here: " + " ".join(DOC_B[:L])  # no separator after the last word
    released, f = _run(OutputGuard(INDEX, min_words=L, action="truncate").stream(), [text])
    assert f.action == "truncate" and "".join(released) == "Here: "
    assert [d.doc_id for d in f.span.docs] == ["song-b"]


def test_the_matcher_extends_the_span_over_held_words():
    m = WindowMatcher(INDEX, L)
    hit = m.feed(" ".join(DOC_A[:20]) + " zzq")
    assert hit is not None and (hit.word_start, hit.word_end) == (0, L)
    assert m.extend().n_words == 20 and m.safe_end() == 0


def test_the_output_guard_rejects_bad_settings():
    with pytest.raises(ValueError, match="action"):
        OutputGuard(INDEX, action="redact")
    with pytest.raises(ValueError, match="min_words"):
        OutputGuard(INDEX, min_words=0)


# -- the guard spec ---------------------------------------------------------------------------

#: the identity of a guard before the output check (copyprobe 2026-11): these keys only
OLD_KEYS = {"policy", "style", "notice", "status", "risk", "on_error", "query",
            "reminder_text", "block_text"}


def test_guards_without_output_keep_their_digest():
    for block in ({}, {"policy": "block", "risk": False}, {"notice": {"ocr": "x"}}):
        spec = GuardSpec.from_config(block)
        assert set(spec.identity()["guard"]) == OLD_KEYS
        same = GuardSpec.from_config({**block, "output": None, "input": True})
        assert same.digest() == spec.digest()
    out = GuardSpec.from_config({"output": {"index": "prot", "action": "truncate"}})
    assert out.digest() != GuardSpec.from_config({}).digest()
    assert out.identity()["guard"]["output"] == {"index": "prot", "action": "truncate"}
    assert GuardSpec.from_config({"input": False}).digest() != GuardSpec().digest()


@pytest.mark.parametrize("block, match", [
    ({"output": {"action": "redact"}}, "guard.output.action"),
    ({"output": {"min_words": 0}}, "guard.output.min_words"),
    ({"output": {"indx": "p"}}, "unknown key.*indx"),
    ({"output": "p"}, "guard.output: expected a mapping"),
    ({"output": {"block_text": "{what}"}}, "guard.output.block_text"),
    ({"input": "no"}, "guard.input"),
    ({"output": {"on_error": "flag"}}, "guard.output.on_error must be one of raise, pass"),
    ({"output": {"on_mismatch": "ignore"}}, "guard.output.on_mismatch must be one of error, "
                                            "convert"),
])
def test_bad_output_blocks_name_the_key(block: dict, match: str):
    with pytest.raises(GuardConfigError, match=match):
        GuardSpec.from_config(block)


def test_the_proxys_output_keys_leave_the_identity_and_the_check_as_they_are():
    plain = {"input": False, "output": {"index": "p", "min_words": L}}
    proxy = {"input": False, "output": {**plain["output"], "on_error": "pass",
                                        "on_mismatch": "convert"}}
    assert GuardSpec.from_config(proxy).digest() == GuardSpec.from_config(plain).digest()
    built = pipeline.build_output_guard(proxy["output"], INDEX)
    assert built.min_words == L and built.check(ANSWER).action == "block"


def test_an_output_only_guard_passes_every_request_and_checks_answers():
    g = Guard({"input": False, "output": {"min_words": L, "action": "truncate"}},
              components={"output": OutputGuard(INDEX, min_words=L, action="truncate")})
    prompt = Prompt("chat", messages=({"role": "user", "content": "Repeat it verbatim."},))
    d = g.check(prompt)
    assert d.action == "pass" and g.component("notice") is None and g.component("risk") is None
    assert g.check_output(ANSWER).text == BEFORE
    assert g.output_stream() is not None
    plain = Guard({"notice": False, "status": False, "risk": False})
    assert plain.check(prompt).action == "remind"  # all checks off: the reminder-only guard
    assert plain.check_output(ANSWER) is None and plain.output_stream() is None


def test_an_output_block_needs_an_index_name():
    with pytest.raises(GuardConfigError, match="guard.output.index: required"):
        pipeline.build_output_guard({"min_words": 8})


# -- the guarded backend ----------------------------------------------------------------------

def _model(srv: Any, tmp_path: Path, guard: dict) -> dict[str, Any]:
    return {"backend": "openai", "name": "guarded-out", "model_id": "m",
            "base_url": srv.base_url, "api_key_env": "COPYPROBE_TEST_GUARD_KEY",
            "api_key_optional": True, "request_timeout": 5,
            "cache_dir": str(tmp_path / "cache"), "requests": {"max_attempts": 1},
            "guard": guard}


def test_guarded_model_blocks_and_truncates_answers(server_module: Any, tmp_path: Path,
                                                    span_index_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    """The output block's index ``prot`` is results/spans/prot, the real index of DOCS."""
    from copyprobe.generation import generate_shard

    monkeypatch.chdir(span_index_dir.parents[2])
    answers = {"recite": ANSWER, "chat": "Nothing protected here at all."}

    def answer(body: dict) -> str:
        return answers[body["messages"][-1]["content"]]

    rows = {k: Prompt("chat", messages=({"role": "user", "content": k},)) for k in answers}
    prompts = pd.DataFrame({"request_id": list(rows), "status": "ready",
                            "prompt_format": "chat",
                            "prompt": [p.to_json() for p in rows.values()], "reference": None})
    with server_module("scripted_chat").ScriptedChatServer(answer) as srv:
        for action, reason, text in (("truncate", "guard_truncate", BEFORE),
                                     ("block", "guard_block", None)):
            guard = {"input": False, "output": {"index": "prot", "min_words": L,
                                                "action": action}}
            gens, summary = generate_shard(prompts, _model(srv, tmp_path, guard),
                                           {"path": None})
            by = gens.set_index("request_id")
            assert summary.failed == 0
            assert by.loc["recite", "finish_reason"] == reason
            if text is not None:
                assert by.loc["recite", "text"] == text
            else:
                assert by.loc["recite", "text"].startswith("I can't provide this answer")
            assert by.loc["chat", "text"] == answers["chat"]
            assert by.loc["chat", "finish_reason"] == "stop"
            side = guard_decisions(prompts, _model(srv, tmp_path, guard),
                                   compute_missing=False).set_index("request_id")
            assert list(side.reset_index().columns) == GUARD_DECISIONS.columns
            assert side.loc["recite", "output_action"] == action
            assert side.loc["recite", "output_span_words"] == 15
            assert list(side.loc["recite", "output_doc_ids"]) == ["song-a"]
            assert side.loc["chat", "output_action"] == "pass"
            assert side.loc["recite", "action"] == "pass" and side["output_s"].notna().all()
            assert "check_s" not in json.loads(side.loc["recite", "decision"])["output"]


# -- the proxy's relay ------------------------------------------------------------------------

def _sse(text: str, size: int, n: int = 1) -> bytes:
    events = []
    for c in range(n):
        events.append({"id": "x", "object": "chat.completion.chunk", "choices": [
            {"index": c, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
    for i in range(0, len(text), size):
        for c in range(n):
            events.append({"id": "x", "choices": [{"index": c, "delta": {
                "content": text[i:i + size]}, "finish_reason": None}]})
    for c in range(n):
        events.append({"id": "x", "choices": [{"index": c, "delta": {},
                                               "finish_reason": "stop"}]})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + \
        b"data: [DONE]\n\n"


def _parse(out: bytes) -> tuple[dict[int, str], list[dict], bool]:
    text: dict[int, str] = {}
    finals, done = [], False
    for event in out.split(b"\n\n"):
        if not event.strip():
            continue
        assert event.startswith(b"data: ")
        if event == b"data: [DONE]":
            done = True
            continue
        obj = json.loads(event[6:])
        for ch in obj["choices"]:
            text[ch["index"]] = text.get(ch["index"], "") + (ch["delta"].get("content") or "")
            if ch["finish_reason"] == "content_filter":
                finals.append(obj)
    return text, finals, done


def test_the_relay_catches_a_span_split_anywhere_in_the_transport():
    raw = _sse(ANSWER, 4)
    rng = random.Random(11)
    g = OutputGuard(INDEX, min_words=L, action="truncate")
    for _ in range(40):
        relay, out = StreamRelay(g), b""
        i = 0
        while i < len(raw) and not relay.done:
            n = rng.randint(1, 40)
            out += b"".join(relay.feed(raw[i:i + n]))
            i += n
        out += b"".join(relay.finish())
        text, finals, done = _parse(out)
        assert relay.done and done and i < len(raw)  # the upstream's rest is not read
        assert text[0] == BEFORE and len(finals) == 1
        info = finals[0]["copyguard"]
        assert info["action"] == "truncate" and info["words"] == L and info["count"] == 1
        assert info["docs"] == [{"source": "lyrics", "doc_id": "song-a", "title": "Song A"}]


def test_deltas_arriving_together_are_checked_one_by_one_and_sent_as_one_event():
    raw = _sse(ANSWER, 4)
    events = [e + b"\n\n" for e in raw.split(b"\n\n") if e]
    for action in ("truncate", "block"):
        apart, together = (StreamRelay(OutputGuard(INDEX, min_words=L, action=action))
                           for _ in range(2))
        a = b"".join(b"".join(apart.feed(e)) for e in events) + b"".join(apart.finish())
        b = b"".join(together.feed(raw)) + b"".join(together.finish())
        (text_a, finals_a, done_a), (text_b, finals_b, done_b) = _parse(a), _parse(b)
        assert text_a == text_b and done_a and done_b
        assert text_b[0].startswith(BEFORE[:10])  # the clean text before the span is sent
        info_a, info_b = finals_a[0]["copyguard"], finals_b[0]["copyguard"]
        assert {**info_a, "check_s": 0} == {**info_b, "check_s": 0}
        assert 3 * b.count(b"data: ") < a.count(b"data: ")


def test_a_delta_shaped_like_the_last_one_is_still_read_whole():
    """The relay reads a delta written like the last plain one (the same bytes around one
    JSON string) without parsing it; bytes between the two that are not one string are
    parsed as the event they are."""
    relay = StreamRelay(OutputGuard(INDEX, min_words=L))
    head = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":'
    tail = b'},"finish_reason":null}]}\n\n'
    out = relay.feed(head + b'"Hello there, "' + tail)
    out += relay.feed(head + b'"my \\"friend\\", "' + tail)
    out += relay.feed(head + b'"and you", "refusal": "no"' + tail)
    raw = b"".join(out + relay.finish())
    assert _parse(raw)[0] == {0: 'Hello there, my "friend", and you'}
    assert b'"refusal":"no"' in raw


def test_the_relay_passes_clean_streams_and_checks_each_choice():
    clean = "Nothing protected here, " + " ".join(_words(30)) + "."
    relay = StreamRelay(OutputGuard(INDEX, min_words=L))
    text, finals, done = _parse(b"".join(relay.feed(_sse(clean, 3))) + b"".join(relay.finish()))
    assert text == {0: clean} and not finals and done

    # n = 2: choice 1 recites and is blocked alone; choice 0 goes on to its end
    two = _sse(clean, 5, n=2)
    lines = [json.loads(e[6:]) for e in two.split(b"\n\n") if e.startswith(b"data: {")]
    for e in lines:
        ch = e["choices"][0]
        if ch["index"] == 1 and ch["delta"].get("content"):
            ch["delta"]["content"] = ""
    recite = [{"id": "x", "choices": [{"index": 1, "delta": {"content": ANSWER[i:i + 5]},
                                       "finish_reason": None}]} for i in range(0, len(ANSWER), 5)]
    events = lines[:2] + recite + lines[2:]
    raw = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + \
        b"data: [DONE]\n\n"
    relay = StreamRelay(OutputGuard(INDEX, min_words=L), n=2)
    text, finals, done = _parse(b"".join(relay.feed(raw)) + b"".join(relay.finish()))
    assert text[0] == clean and done
    assert [f["copyguard"]["choice"] for f in finals] == [1]
    assert text[1].startswith(BEFORE[:10]) and text[1].endswith(finals[0]["choices"][0]
                                                                ["delta"]["content"])
    assert relay.findings[0].action == "pass" and relay.findings[1].action == "block"


def test_tool_call_deltas_pass_unchecked():
    event = {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": " ".join(DOC_A[:20])}}]}, "finish_reason": None}]}
    relay = StreamRelay(OutputGuard(INDEX, min_words=L))
    out = b"".join(relay.feed(b"data: " + json.dumps(event).encode() + b"\n\n"))
    assert json.loads(out[6:])["choices"][0]["delta"] == event["choices"][0]["delta"]


def test_non_streaming_answers_are_rewritten_per_choice():
    obj = {"choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                        "finish_reason": "stop"},
                       {"index": 1, "message": {"role": "assistant", "content": "fine"},
                        "finish_reason": "stop"}]}
    out, findings = check_completion(obj, OutputGuard(INDEX, min_words=L, action="truncate"))
    assert [f.action for f in findings] == ["truncate", "pass"]
    assert out["choices"][0]["message"]["content"] == BEFORE
    assert out["choices"][0]["finish_reason"] == "content_filter"
    assert out["copyguard"]["span_text"] == " ".join(DOC_A[10:25])
    assert out["choices"][1] == {"index": 1, "message": {"role": "assistant",
                                                         "content": "fine"},
                                 "finish_reason": "stop"}


# -- the proxy in front of a streaming upstream -------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _loopback(tmp_path_factory: pytest.TempPathFactory, answer: str, *args: str) -> Any:
    import subprocess
    import sys

    path = tmp_path_factory.mktemp("upstream") / "answer.txt"
    path.write_text(answer, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "loopback_server.py"),
                             "--latency", "0", "--answer-file", str(path),
                             "--chunk-chars", "4", *args], stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def reciting_upstream(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """benchmarks/loopback_server.py (its own process, 127.0.0.1) answering every request with
    ANSWER, streamed in deltas of 4 characters."""
    yield from _loopback(tmp_path_factory, ANSWER)


CLEAN = "Nothing protected here, " + " ".join(_words(30)) + "."


@pytest.fixture(scope="module")
def late_ending_upstream(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The loopback server streaming CLEAN, whose chunked body ends 0.3 s after its
    ``[DONE]``."""
    yield from _loopback(tmp_path_factory, CLEAN, "--tail-delay", "0.3")


@pytest.fixture
def output_proxy(reciting_upstream: str, tmp_path: Path) -> Any:
    import threading

    from copyprobe.guard.serve import ProxySettings, make_server

    made = []

    def make(action: str, upstream: str = reciting_upstream) -> str:
        block = {"input": False, "output": {"min_words": L, "action": action}}
        settings = ProxySettings(upstream=upstream, guard=block, port=0,
                                 cache_dir=str(tmp_path / "guard"))
        guard = Guard(block, components={"output": OutputGuard(INDEX, min_words=L,
                                                               action=action)}).build()
        server = make_server(settings, guard)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        made.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield make
    for s in made:
        s.shutdown()
        s.server_close()


def _post(url: str, body: dict) -> tuple[int, Any, bytes]:
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.headers, r.read()  # headers: case-insensitive
    finally:
        conn.close()


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "Sing song A."}]}


def test_proxy_stream_reciting_a_protected_passage_ends_with_content_filter(output_proxy: Any):
    url = output_proxy("truncate")
    status, headers, raw = _post(url, {**REQUEST, "stream": True})
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    text, finals, done = _parse(raw)
    assert text == {0: BEFORE} and done and raw.endswith(b"data: [DONE]\n\n")
    (final,) = finals
    info = final["copyguard"]
    assert (info["action"], info["words"], info["count"]) == ("truncate", L, 1)
    assert info["span_text"] == " ".join(_expected_span_words())
    assert info["docs"] == [{"source": "lyrics", "doc_id": "song-a", "title": "Song A"}]
    assert info["message"].startswith("I can't provide this answer")
    # no word of the passage reaches the client as content, and past its first L words
    # (named in copyguard.span_text) none at all
    assert not set(DOC_A[10:25]) & set(tokenize(text[0], "words").tokens)
    assert not set(DOC_A[10 + L:25]) - set(DOC_A[10:10 + L]) & set(
        tokenize(raw.decode(), "words").tokens)

    # block, read with the openai client: the stream ends with the block message
    import openai

    client = openai.OpenAI(base_url=f"{output_proxy('block')}/v1", api_key="k", max_retries=0,
                           timeout=10)
    chunks = list(client.chat.completions.create(stream=True, **REQUEST))
    assert chunks[-1].choices[0].finish_reason == "content_filter"
    said = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert BEFORE.startswith(said[:len(said) - len(chunks[-1].choices[0].delta.content)])
    assert chunks[-1].choices[0].delta.content.startswith("I can't provide this answer")


def test_a_passed_stream_is_read_to_its_end_before_its_connection_is_reused(
        output_proxy: Any, late_ending_upstream: str):
    # the relay ends the client's stream at the upstream's [DONE]; the proxy then reads the
    # upstream's body to its end, so the pooled connection is clean for the next request
    # (it used to be pooled with the terminator unread: the next answer began "0\r\n" and
    # was a 502, or, under load, the still-open response gave ResponseNotReady)
    url = output_proxy("truncate", late_ending_upstream)
    for _ in range(2):
        status, _, raw = _post(url, {**REQUEST, "stream": True})
        assert status == 200, raw
        assert _parse(raw)[0] == {0: CLEAN} and raw.endswith(b"data: [DONE]\n\n")


def test_proxy_non_streaming_block(output_proxy: Any):
    status, headers, raw = _post(output_proxy("block"), REQUEST)
    assert status == 200 and headers["X-CopyGuard-Action"] == "pass"
    obj = json.loads(raw)
    choice = obj["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert choice["message"]["content"].startswith("I can't provide this answer")
    assert obj["copyguard"]["action"] == "block" and obj["copyguard"]["words"] == 15
    assert obj["copyguard"]["docs"][0]["doc_id"] == "song-a"
    status, _, raw = _post(output_proxy("truncate"), REQUEST)
    assert json.loads(raw)["choices"][0]["message"]["content"] == BEFORE


class CountingIndex:
    """INDEX, counting its count() calls; ``collide`` makes a filter that holds every
    window (as if every hash collided)."""

    def __init__(self) -> None:
        self.calls = 0
        self.docs = INDEX.docs

    def __getattr__(self, name: str) -> Any:
        return getattr(INDEX, name)

    def count(self, tokens: Any) -> int:
        self.calls += 1
        return INDEX.count(tokens)


def test_the_prefilter_changes_the_cost_not_the_answer():
    rng = random.Random(23)
    texts = [ANSWER, BEFORE + " ".join(_words(40)), "Here: " + " ".join(DOC_B[:L])]
    for text in texts:
        pieces = _chunks(text, rng)
        results = {}
        for pre in (False, True):
            idx = CountingIndex()
            g = OutputGuard(idx, min_words=L, action="truncate", prefilter=pre)
            assert (g.window_filter is not None) == pre
            released, f = _run(g.stream(), pieces)
            results[pre] = ("".join(released), f.action, f.span, idx.calls)
        assert results[True][:3] == results[False][:3]
        assert results[True][3] <= 1 < results[False][3]  # one confirming count on a hit

    # a hash in the filter is only a candidate: the index decides
    from copyprobe.spans.stream import WindowFilter

    g = OutputGuard(INDEX, min_words=L, prefilter=False)
    everything = WindowFilter([tokenize(ANSWER, "words").tokens], g.length)
    g.window_filter = everything
    released, f = _run(g.stream(), [ANSWER[:40], ANSWER[40:]])
    assert f.span.word_start == len(tokenize(BEFORE, "words"))
    assert OutputGuard(INDEX, min_words=L).window_filter is not None  # small: on by default


# -- on a real span index -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def span_index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The protected documents built into a suffix-array index (infini-gram), once."""
    from copyprobe.spans.build import build_index

    root = tmp_path_factory.mktemp("spans")
    src = root / "protected.jsonl"
    src.write_text("".join(json.dumps({"source": d.source, "doc_id": d.doc_id, "title": d.title,
                                       "text": d.text}) + "\n" for d in DOCS), encoding="utf-8")
    out = root / "results" / "spans" / "prot"
    build_index([src], out)
    return out


def test_on_a_span_index_the_guard_and_the_proxy_decide_as_on_the_oracle(
        span_index_dir: Path, reciting_upstream: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    import threading

    from copyprobe.guard.serve import ProxySettings, make_server
    from copyprobe.spans.index import SpanIndex

    with SpanIndex.open(span_index_dir) as index:
        for pre in (False, True):
            g = OutputGuard(index, min_words=L, action="truncate", prefilter=pre)
            oracle = OutputGuard(INDEX, min_words=L, action="truncate")
            got = g.check(ANSWER)
            assert got == replace_s(oracle.check(ANSWER), got)
            rng = random.Random(pre)
            for _ in range(10):
                pieces = _chunks(ANSWER, rng)
                got, f = _run(g.stream(), pieces)
                want, o = _run(oracle.stream(), pieces)
                assert got == want and f.span == o.span and f.text == BEFORE

    # the block's index name is results/spans/<name>, opened from the working directory
    monkeypatch.chdir(span_index_dir.parents[2])
    built = pipeline.build_output_guard({"index": "prot", "min_words": L})
    assert built.check(ANSWER).action == "block"
    built.index.close()

    # the proxy opens the index named by --span-index
    block = {"input": False, "output": {"min_words": L, "action": "truncate"}}
    server = make_server(ProxySettings(upstream=reciting_upstream, guard=block, port=0,
                                       cache_dir=str(tmp_path / "g"),
                                       span_index=str(span_index_dir)))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        text, finals, done = _parse(_post(url, {**REQUEST, "stream": True})[2])
        assert text == {0: BEFORE} and done
        assert finals[0]["copyguard"]["docs"][0]["doc_id"] == "song-a"
        assert json.loads(_post(url, REQUEST)[2])["choices"][0]["message"]["content"] == BEFORE
    finally:
        server.shutdown()
        server.server_close()


def test_a_guarded_models_cache_identity_covers_the_protected_index(
        span_index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Its answers change with the protected documents: the index's content digest is in the
    backend identity (so in every cache key), and an index not built is an error naming it."""
    from copyprobe.generation.runner import backend_identity
    from copyprobe.spans.build import build_index
    from copyprobe.spans.index import index_digest

    spec = {"name": "m", "backend": "openai", "model_id": "m", "base_url": "http://127.0.0.1:9",
            "guard": {"input": False, "output": {"index": "prot", "min_words": L}}}
    monkeypatch.chdir(span_index_dir.parents[2])
    ident = backend_identity(spec, None)
    assert ident["guard"]["output_index_digest"] == index_digest(span_index_dir)
    # the same name over other documents: another identity
    other = tmp_path / "results" / "spans" / "prot"
    src = tmp_path / "other.jsonl"
    src.write_text(json.dumps({"doc_id": "x", "text": DOCS[0].text + " and one more"}) + "\n",
                   encoding="utf-8")
    build_index([src], other)
    monkeypatch.chdir(tmp_path)
    assert backend_identity(spec, None)["guard"] != ident["guard"]
    monkeypatch.chdir(tmp_path / "results")
    with pytest.raises(ValueError, match=r"results/spans/prot/index.json"):
        backend_identity(spec, None)


def replace_s(finding: Any, like: Any) -> Any:
    """``finding`` with ``like``'s timing and document numbers (doc_ix is the index's own)."""
    from dataclasses import replace

    span = replace(finding.span, docs=tuple(replace(d, doc_ix=e.doc_ix) for d, e in
                                            zip(finding.span.docs, like.span.docs,
                                                strict=True)))
    return replace(finding, span=span, check_s=like.check_s)
