"""The probe forms: the paper's instruction, and MSR's faux conversation (built by MSR's own
prompt code, so the two studies ask the same of the same document), perturbed on user turns
only."""

from __future__ import annotations

import pytest

from copyprobe.longform.engine import Settings, probe
from copyprobe.msr.prompts import build_prompt, segment

WORDS = [f"w{i}" for i in range(40)]


def test_the_msr_form_is_msrs_faux_conversation_and_bon_perturbs_only_user_turns():
    s = Settings(probe_form="msr", opening_words=30, target_words=10, msr_segments=4,
                 system_message="You are a helpful assistant.")
    plain, target = probe(WORDS, s, 0)
    faux, reference = build_prompt(segment(" ".join(WORDS), 4), "chat", s.system_message)
    assert plain == faux and target == reference
    noisy, _ = probe(WORDS, s, 1)
    pairs = list(zip(plain.messages, noisy.messages, strict=True))
    assert all(a == b for a, b in pairs if a["role"] != "user")
    assert any(a != b for a, b in pairs if a["role"] == "user")


def test_the_instruction_and_completion_forms():
    chat, target = probe(WORDS, Settings(opening_words=5, target_words=3), 0)
    assert chat.messages[-1]["content"].endswith("verbatim:\n\nw0 w1 w2 w3 w4")
    assert target == "w5 w6 w7"
    plain, _ = probe(WORDS, Settings(probe_form="completion", opening_words=5), 0)
    assert plain.format == "completion" and plain.text == "w0 w1 w2 w3 w4"


def test_the_probe_score_is_the_longest_common_word_substring_over_the_continuation():
    from copyprobe.longform.engine import probe_score

    target = "a b c d e f g h i j"
    assert probe_score("x a b c d e f y", target) == 0.6  # a..f: 6 of 10
    assert probe_score("a b c X e f g h i j", target) == 0.6  # e..j: the longest of two runs
    assert probe_score("", target) == 0.0 and probe_score("nothing alike", target) == 0.0


def test_many_documents_go_out_together_and_measure_as_one_at_a_time():
    """Three documents side by side: each wave is one batch with every unfinished document's
    next request, and each document measures what it measures alone."""
    from copyprobe.longform.engine import drive, extract, steps
    from copyprobe.longform.nvrecall import Params, Pass

    books = {d: " ".join(f"{d}{i}" for i in range(60)) for d in ("a", "b", "c")}
    s = Settings(opening_words=10, target_words=10, max_turns=2,
                 nv_recall=Params(passes=(Pass(2, 1, 20),)))

    def model(prompt, request_id):  # knows each book: the next 20 words after what it saw
        doc = request_id.split(":")[1]
        said = len(" ".join(m["content"] for m in prompt.messages[1:]
                            if m["role"] == "assistant").split())
        start = 10 + said
        return {"status": "ok", "text": " ".join(books[doc].split()[start:start + 20]),
                "prompt_tokens": 30, "completion_tokens": 20, "cost_usd": None,
                "from_cache": False}

    batches = []

    def answer(requests):
        batches.append(len(requests))
        return [model(*r) for r in requests]

    together = drive([steps(books[d], s, doc_id=d, model="m") for d in books], answer)
    assert batches == [3, 3, 3]  # the probes, turn 1, turn 2: all three documents each time
    alone = [extract(books[d], s, model, doc_id=d, model="m") for d in books]
    assert [o.summary for o in together] == [o.summary for o in alone]
    assert {o.summary["stopped"] for o in together} == {"max_turns"}
    # after the 10 opening words the answers write words 10..59 of 60: one block
    assert together[0].summary["nv_recall"] == pytest.approx(50 / 60)
    zero = extract(books["a"], Settings(opening_words=10, target_words=10, max_turns=0),
                   model, doc_id="a", model="m")
    assert (zero.summary["turns"], zero.summary["stopped"], zero.summary["calls"]) == (
        0, "max_turns", 1)


@pytest.mark.parametrize(("turn_text", "max_tokens", "stopped", "turns"), [
    (lambda said: said[0], None, "repeated", 1),       # the probe's answer again
    (lambda said: "b30 b31 b32 THE END of it", None, "stopped", 1),  # the stop phrase
    (lambda said: "  ", None, "stopped", 1),            # an empty answer
    (lambda said: f"b{30 + 10 * len(said)} b{31 + 10 * len(said)}", 40, "max_tokens", 1),
])
def test_each_stopping_rule(turn_text, max_tokens, stopped, turns):
    from copyprobe.longform.engine import extract

    book = " ".join(f"b{i}" for i in range(100))
    said: list[str] = []

    def model(prompt, request_id):
        text = (" ".join(f"b{i}" for i in range(10, 30)) if ":probe:" in request_id
                else turn_text(said))
        said.append(text)
        return {"status": "ok", "text": text, "prompt_tokens": 30, "completion_tokens": 20,
                "cost_usd": None, "from_cache": False}

    s = Settings(opening_words=10, target_words=10, max_turns=5, max_tokens=max_tokens)
    out = extract(book, s, model, doc_id="d", model="m")
    assert (out.summary["stopped"], out.summary["turns"]) == (stopped, turns)
    if stopped == "stopped" and "END" in said[-1]:  # the text before the phrase counts
        assert out.summary["output_words"] == 20 + 3
