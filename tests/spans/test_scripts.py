"""Scripts written without spaces between words (Chinese, Japanese, Thai): each character is
a word of the byte units, so a verbatim copy of such text is found by the span index and
caught by the output guard.

The texts are real: translations of GLib's messages (tests/spans/data/README.md), indexed
with the suffix-array index; answers copy a passage of one of them into other text.
"""

from __future__ import annotations

import json
import random
import sys
import unicodedata
from pathlib import Path

import pytest

from copyprobe.guard.output import OutputGuard
from copyprobe.matching.words import SEGMENTED, joins_previous, normalize_words, word_match
from copyprobe.spans.build import build_index
from copyprobe.spans.encoding import settled, tokenize, words
from copyprobe.spans.index import SpanIndex
from copyprobe.spans.stream import SpanLength, StreamTokens

DATA = Path(__file__).resolve().parent / "data" / "glib20_translations.jsonl"
DOCS = {d["doc_id"]: d for d in map(json.loads, DATA.read_text(encoding="utf-8").splitlines())}
MIN = 12
#: not copied from anywhere (written for these tests): what a model says around a copy
CHATTER_ZH = "这是我的回答。下面先说一点背景，再引用说明中的原文，最后给出我自己的总结和建议："
CHATTER_EN = "Here is what the manual says, quoted for you: "


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = tmp_path_factory.mktemp("scripts") / "idx"
    build_index([DATA], out, unit="words")
    with SpanIndex.open(out) as ix:
        yield ix


def _passage(doc_id: str, text: str) -> str:
    """``text``, checked to be a passage of document ``doc_id`` (the passages are literal, so
    that the tests do not depend on the tokenizer they test)."""
    assert text in DOCS[doc_id]["text"]
    return text


def test_each_character_of_these_scripts_is_a_word():
    assert normalize_words("Python是一种语言，2023年发布。") == [
        "python", "是", "一", "种", "语", "言", "2023", "年", "发", "布"]
    assert normalize_words("ｶﾞイド") == ["ガ", "イ", "ド"]  # NFKC widens and composes first
    assert normalize_words("ไม่มี") == ["ไ", "ม่", "มี"]  # Thai: a letter with its marks
    assert normalize_words("한국어 문장") == ["한국어", "문장"]  # Hangul keeps its words
    assert words("你好，世界。 Hi!", "whitespace") == ["你", "好", "，", "世", "界", "。", "Hi!"]
    toks = tokenize("gio info 如传统 ls", "words")
    assert (toks.tokens, toks.starts) == (["gio", "info", "如", "传", "统", "ls"],
                                          [0, 4, 9, 10, 11, 13])


def test_a_segmented_character_composes_with_nothing_before_it():
    """What :func:`settled` relies on: under NFKC no segmented character that starts a word
    is the second of a composition, nor a mark (Thai SARA AM's NFKC starts with one: it is
    not a place to cut)."""
    second = set()
    for cp in range(sys.maxunicode + 1):
        d = unicodedata.decomposition(chr(cp)).split()
        if len(d) == 2 and not d[0].startswith("<"):
            second.add(chr(int(d[1], 16)))
    for lo, hi in SEGMENTED:
        for cp in range(lo, hi + 1):
            if settled("a" + chr(cp)) == 1:  # a place to cut, before it
                first = unicodedata.normalize("NFKC", chr(cp))[0]
                assert first not in second and not unicodedata.combining(first), hex(cp)
                assert not joins_previous(first), hex(cp)
    assert settled("ทำ") == 0 and settled("中文") == 1 and settled("ab ") == 3


@pytest.mark.parametrize("unit", ["words", "whitespace"])
def test_streamed_tokens_of_these_scripts_equal_the_whole(unit):
    rng = random.Random(3)
    pieces = ["a", "B", " ", "\u3000", "'", "é", "\u0301", "東", "京", "の", "ｶ", "ﾞ", "ก",
              "ิ", "น", "ำ", "ทำ", "\u0e48", "ខ", "្", "ក", "、", "。", "㍿", "\u3099", "한",
              "-", "ア"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        whole = tokenize(text, unit)
        assert whole.tokens == words(text, unit)
        stream = StreamTokens(lambda t: tokenize(t, unit))
        i = 0
        while i < len(text):
            j = i + rng.randint(1, 4)
            stream.feed(text[i:j])
            i = j
        stream.finish()
        if any(a.isspace() and joins_previous(b) for a, b in zip(text, text[1:])):
            continue  # a mark after whitespace: ranges differ as before (tokens do not)
        assert (stream.tokens, stream.starts, stream.ends) == (
            whole.tokens, whole.starts, whole.ends), repr(text)


@pytest.mark.parametrize("doc_id,text", [
    ("zh_CN-01", "源和详细信息\n如果指定了段，则仅列出此段中的资源\n如果指定了文件，则"),
    ("ja-01", "ァイルをコンパイルして、スキーマキャッシュを生成します。\nスキーマ"),
    ("th-02", "ะที่กำลังมองหา '>' หรือ '/' ที่จะมาปิดแท็กตั้งต้นขอ")], ids=["zh", "ja", "th"])
def test_a_verbatim_copy_is_found_and_attributed(index, doc_id, text):
    """A Chinese, a Japanese and a Thai passage of 30 characters (with the marks on Thai
    letters) copied into an answer: found, with its document."""
    passage = _passage(doc_id, text)
    answer = CHATTER_EN + passage + "\n" + CHATTER_ZH
    spans = index.find_spans(answer, min_words=MIN)
    assert len(spans) == 1, [s.text for s in spans]
    s = spans[0]
    assert s.n_words >= 30 and s.docs[0].doc_id == doc_id and s.n_docs == 1
    at = len(CHATTER_EN)
    assert s.char_start <= at and s.char_end >= at + len(passage)


def test_mixed_script_text_keeps_latin_words_and_splits_han(index):
    passage = _passage("zh_CN-00", "info 如传统 ls 程序那样工作，但使用 GIO 位")
    spans = index.find_spans("So: " + passage + ". Done.", min_words=MIN)
    assert [(s.n_words, s.docs[0].doc_id) for s in spans] == [(16, "zh_CN-00")]
    assert spans[0].text.split()[:6] == ["info", "如", "传", "统", "ls", "程"]


def test_a_copy_shorter_than_the_minimum_is_not_flagged(index):
    doc_id = "zh_CN-10"  # a passage of it occurs in no other document
    for text, found in (("份资源规格编译为资源文", False), ("份资源规格编译为资源文件", True)):
        answer = CHATTER_ZH + _passage(doc_id, text) + "。谢谢。"
        spans = index.find_spans(answer, min_words=MIN)
        assert bool(spans) is found, text
        if found:
            assert spans[0].n_words == MIN and spans[0].docs[0].doc_id == doc_id


def test_the_output_guard_blocks_a_copied_chinese_passage(index):
    passage = _passage("zh_CN-04", "注意：对于 --restore 开关，如果回收站中的文件的原始路径已经存")
    answer = CHATTER_ZH + passage + "希望对你有帮助。"
    at = len(CHATTER_ZH)
    guard = OutputGuard(index, min_words=MIN, action="block")
    found = guard.check(answer)
    assert found.action == "block" and found.span.docs[0].doc_id == "zh_CN-04"
    assert found.span.char_start == at and found.text != answer
    assert guard.check(CHATTER_ZH).action == "pass"
    # streamed in 3-character deltas: text before the copy is released as it comes (the
    # characters settle without spaces), no character of the copy is
    for action in ("block", "truncate"):
        stream = OutputGuard(index, min_words=MIN, action=action).stream()
        released, early, finding = "", "", None
        for i in range(0, len(answer), 3):
            r, finding = stream.feed(answer[i:i + 3])
            released += r
            if i < at - MIN:
                early = released
            if finding is not None:
                break
        if finding is None:
            r, finding = stream.finish()
            released += r
        assert finding.action == action and finding.span.docs[0].doc_id == "zh_CN-04"
        assert len(early) >= at - 2 * MIN  # held back: fewer than min_words characters
        assert answer[:at].startswith(released)  # nothing of the copy
        if action == "truncate":
            assert released == answer[:at]


def test_word_mode_matching_counts_characters():
    """MSR's word mode shares the tokenizer: a copied Chinese passage is a long match."""
    ref = DOCS["zh_CN-06"]["text"]
    copied = _passage("zh_CN-06", "应该以“>”或“/”结束元素“%s”的起始标记，或紧跟该元素")
    m = word_match(ref, CHATTER_ZH + copied)
    assert m.longest == 20 and m.survives[12]


# -- what min_words counts per script (guard.output.chars_per_word) --------------------------

def test_the_span_length_counts_characters_as_fractions_of_a_word():
    length = SpanLength.of(12, {"han": 1.0, "kana": 1.7, "thai": 2.7})
    assert length.minima == {None: 12, "han": 12, "kana": 20, "thai": 32}
    assert not length.uniform and length.min_units == 12
    assert length.reaches(["ス"] * 20) and not length.reaches(["ス"] * 19)
    assert length.reaches(["中"] * 12) and not length.reaches(["ไ"] * 31)
    assert length.reaches(["ス"] * 10 + ["中"] * 6) and not length.reaches(["ス"] * 10 + ["中"] * 5)
    assert length.reaches(["word"] * 6 + ["中"] * 6)
    assert list(length.windows(["a"] * 13)) == [(0, 12), (1, 13)]
    assert list(length.windows(["ス"] * 21)) == [(0, 20), (1, 21)]
    assert list(length.windows(["ス"] * 10 + ["a"] * 7)) == [(0, 16), (1, 17)]
    assert SpanLength.of(12).uniform and list(SpanLength.of(2).windows("abc")) == [(0, 2), (1, 3)]
    with pytest.raises(ValueError, match="unknown script group 'hangul'"):
        SpanLength.of(12, {"hangul": 2})
    with pytest.raises(ValueError, match="chars_per_word.kana must be a positive number"):
        SpanLength.of(12, {"kana": 0})


def test_a_japanese_stock_phrase_is_not_a_copy_by_default(index):
    """15 characters of Japanese (13 kana, 2 kanji) are 0.71 of 12 words: the default passes
    them, counting characters as words blocks them; 30 characters are blocked either way."""
    short = _passage("ja-01", "スキーマキャッシュを生成します")
    answer = "回答です。" + short + "。"
    assert OutputGuard(index).check(answer).action == "pass"
    strict = OutputGuard(index, chars_per_word={"kana": 1})
    assert strict.check(answer).action == "block"
    long = _passage("ja-01", "ァイルをコンパイルして、スキーマキャッシュを生成します。\nスキーマ")
    found = OutputGuard(index).check("回答です。" + long)
    assert found.action == "block" and found.span.docs[0].doc_id == "ja-01"


_TOKENS = {"han": "東京都市中国語文字", "kana": "あいうえおカキクケコ", "thai": "กขคงจฉ",
           "latin": ["alpha", "beta", "gamma", "delta", "omega", "sigma"]}


def _mixed(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        group = rng.choice(["han", "kana", "kana", "thai", "latin"])
        tok = rng.choice(_TOKENS[group])
        out.append(f" {tok} " if group == "latin" else tok)
    return "".join(out)


def test_streams_decide_as_whole_answers_with_weighted_scripts():
    """Random answers of mixed scripts copying a random stretch of a protected document:
    streamed in random pieces, the guard acts as on the whole answer, at the same place, and
    never releases a character of the span the whole answer is acted on for."""
    from copyprobe.spans.reference import MemoryIndex
    from copyprobe.spans.types import CorpusDoc

    rng = random.Random(7)
    docs = [CorpusDoc("s", f"d{k}", _mixed(rng, 120)) for k in range(3)]
    ix = MemoryIndex(docs)
    for trial in range(150):
        doc = rng.choice(docs).text
        a = rng.randrange(len(doc) - 40)
        answer = _mixed(rng, 8) + doc[a:a + rng.randint(5, 40)] + _mixed(rng, 8)
        prefilter = trial % 2 == 0
        for action in ("block", "truncate"):
            guard = OutputGuard(ix, min_words=6, action=action, prefilter=prefilter)
            whole = guard.check(answer)
            stream, released, finding, i = guard.stream(), "", None, 0
            while finding is None and i < len(answer):
                j = i + rng.randint(1, 5)
                r, finding = stream.feed(answer[i:j])
                released += r
                i = j
            if finding is None:
                r, finding = stream.finish()
                released += r
            assert finding.action == whole.action, (trial, answer)
            if whole.span is not None:
                assert finding.span.char_start == whole.span.char_start, (trial, answer)
                assert len(released) <= whole.span.char_start
                if action == "truncate":
                    assert released == whole.text
            else:
                assert released == answer


def test_the_guard_config_checks_chars_per_word():
    from copyprobe.guard.pipeline import GuardConfigError, GuardSpec

    ok = {"input": False, "output": {"index": "x", "chars_per_word": {"kana": 2}}}
    assert GuardSpec.from_config(ok).output["chars_per_word"] == {"kana": 2}
    for bad, match in (({"hangul": 2}, "unknown script group 'hangul'"),
                       ({"thai": -1}, "thai must be a positive number"),
                       ([2], "expected a mapping")):
        with pytest.raises(GuardConfigError, match=rf"guard.output.chars_per_word: .*{match}"):
            GuardSpec.from_config({"input": False,
                                   "output": {"index": "x", "chars_per_word": bad}})
