"""The units' tokens: the ASCII fast path of the ``words`` unit gives exactly the tokens and
character ranges of :func:`normalize_words_with_spans`."""

from __future__ import annotations

import random

from copyprobe.matching.words import normalize_words_with_spans
from copyprobe.spans.encoding import encode_doc, encode_query, tokenize, words


def test_ascii_fast_path_equals_the_offset_map():
    rng = random.Random(0)
    alphabet = "aB9_' -.,\"\t\nzZ'"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        toks = tokenize(text, "words")
        assert (toks.tokens, toks.starts, toks.ends) == normalize_words_with_spans(text), text
        assert toks.tokens == words(text, "words")
    assert tokenize("Don't STOP_me now", "words").tokens == ["dont", "stop", "me", "now"]


def test_units_and_the_stored_bytes():
    assert words("Hello, World!", "whitespace") == ["Hello,", "World!"]
    toks = tokenize("  Hello,  World! ", "whitespace")
    assert (toks.starts, toks.ends) == ([2, 10], [8, 16])
    assert encode_doc(["a", "b"]) == encode_query(["a", "b"]) == b" a b "
    assert encode_query([]) == b""
