import json

import pytest

from copyprobe.prompt import Prompt
from copyprobe.msr.prompts import TooShort, build_prompt, segment


def test_segment_equal_parts_last_takes_remainder():
    words = [f"w{i}" for i in range(20)]
    parts = segment(" ".join(words), 6)
    # 20 // 6 = 3 words per part; the last part takes 3 + 2 remaining words
    assert [len(p.split()) for p in parts] == [3, 3, 3, 3, 3, 5]
    assert parts[0] == "w0 w1 w2"
    assert parts[-1] == "w15 w16 w17 w18 w19"
    assert " ".join(parts) == " ".join(words)


def test_segment_collapses_whitespace_and_truncates():
    text = "a  b\n\nc\td e f g h i j"
    assert segment(text, 2, num_words=4) == ["a b", "c d"]


def test_segment_cuts_at_first_marker():
    text = "alpha beta gamma delta References one two References three"
    assert segment(text, 2, cut_at="References") == ["alpha beta", "gamma delta"]
    # without a marker the whole text is used
    assert segment("a b c d", 2, cut_at="References") == ["a b", "c d"]


def test_segment_rejects_odd_n_and_short_text():
    with pytest.raises(ValueError, match="even"):
        segment("a b c d e f", 3)
    with pytest.raises(TooShort, match="5 words"):
        segment("a b c d e", 6)
    with pytest.raises(TooShort):
        segment("a b c d e f g h", 4, min_segment_words=3)


def test_chat_prompt_shape():
    parts = ["p1", "p2", "p3", "p4", "p5", "p6"]
    prompt, reference = build_prompt(parts, "chat", "SYS")
    roles = [m["role"] for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in prompt.messages[1:]] == ["p1", "p2", "p3", "p4", "p5"]
    assert reference == "p6"
    assert Prompt.from_json(prompt.to_json()) == prompt


def test_chat_prompt_without_system_and_completion_prompt():
    prompt, ref = build_prompt(["a b", "c", "d e"], "chat", "")
    assert [m["role"] for m in prompt.messages] == ["user", "assistant"]
    comp, ref2 = build_prompt(["a b", "c", "d", "e f"], "completion", "ignored")
    assert comp.text == "a b c d" and ref2 == "e f"
    assert json.loads(comp.to_json()) == {"prompt": "a b c d"}
