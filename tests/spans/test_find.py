"""The suffix-array span index against planted copies and against the brute-force oracle:
every span of at least L words found with its exact documents and positions, nothing shorter,
1 shard and 3 shards alike, word boundaries and unicode."""

from __future__ import annotations

import json
import random
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planting import L, pseudo_words  # noqa: E402

from copyprobe.matching.words import normalize_words  # noqa: E402
from copyprobe.spans.build import build_index  # noqa: E402
from copyprobe.spans.index import SpanIndex  # noqa: E402
from copyprobe.spans.reference import MemoryIndex  # noqa: E402
from copyprobe.spans.types import CorpusDoc  # noqa: E402


def _output(planted, names: list[str], seed: int = 3) -> tuple[str, dict[str, int]]:
    """Fresh words with the passages ``names`` spliced in; where each starts (in words)."""
    rng = random.Random(seed)
    fresh = pseudo_words(rng, 200, "q")
    words: list[str] = rng.sample(fresh, 5)
    starts = {}
    for name in names:
        starts[name] = len(words)
        words += planted.passages[name] + rng.sample(fresh, 4)
    return " ".join(words), starts


@pytest.mark.parametrize("which", ["planted_index", "planted_index3"])
def test_every_planted_span_is_found_with_its_documents(planted, which, request):
    index = request.getfixturevalue(which)
    names = ["exact", "short", "longer", "thrice"]
    text, starts = _output(planted, names)
    spans = index.find_spans(text, min_words=L, max_docs=5)
    found = {s.text: s for s in spans}
    assert len(spans) == 3  # the L-1 copy is never reported
    for name in ("exact", "longer", "thrice"):
        words = planted.passages[name]
        s = found[" ".join(words)]
        assert (s.word_start, s.word_end) == (starts[name], starts[name] + len(words))
        assert text.split()[s.word_start:s.word_end] == words
        assert text[s.char_start:s.char_end] == " ".join(words)
        where = planted.where[name]
        assert s.count == len(where)
        assert s.n_docs == len({(src, d) for src, d, _ in where}) and s.n_docs_exact
        first = {}
        for src, d, pos in where:
            first.setdefault((src, d), pos)
        assert [(h.source, h.doc_id, h.word_start) for h in s.docs] == \
            [(src, d, pos) for (src, d), pos in first.items()]
    assert found[" ".join(planted.passages["longer"])].n_docs == 2
    thrice = found[" ".join(planted.passages["thrice"])]
    assert thrice.count == 3 and thrice.n_docs == 1
    # occurrences: every one, with its position
    assert index.occurrences(planted.passages["thrice"]) == \
        [(thrice.docs[0].doc_ix, p) for _, _, p in planted.where["thrice"]]
    # the K cap lists the first documents in index order, n_docs stays exact
    capped = index.find_spans(text, min_words=L, max_docs=1)
    longer = next(s for s in capped if s.text == " ".join(planted.passages["longer"]))
    assert len(longer.docs) == 1 and longer.n_docs == 2
    assert longer.docs[0].doc_id == planted.where["longer"][0][1]
    # nothing of L-1 words: at min_words L-1 the short copy appears
    short = index.find_spans(text, min_words=L - 1)
    assert " ".join(planted.passages["short"]) in {s.text for s in short}


def test_docs_carry_the_corpus_metadata(planted_index, planted):
    (s,) = planted_index.find_spans(" ".join(planted.passages["exact"]), min_words=L)
    (hit,) = s.docs
    doc = next(d for d in planted.docs if d.doc_id == hit.doc_id)
    assert (hit.source, hit.title, hit.url) == (doc.source, doc.title, doc.url)
    assert hit.as_dict()["url"] == doc.url


def test_edges_output_start_end_whole_copy_and_short_outputs(planted_index, planted):
    doc = planted.docs[0]
    words = normalize_words(doc.text)
    # an output copied whole: one span, the whole document
    (s,) = planted_index.find_spans(doc.text, min_words=L)
    assert (s.word_start, s.word_end, s.count) == (0, len(words), 1)
    assert s.docs[0].word_start == 0
    # a span at the output's start and one at its end, the document's end
    text = " ".join(words[:L]) + " qqzz qqyy " + " ".join(words[-L - 2:])
    spans = planted_index.find_spans(text, min_words=L)
    assert [(x.word_start, x.word_end) for x in spans] == [(0, L), (L + 2, 2 * L + 4)]
    assert spans[1].docs[0].word_start == len(words) - L - 2
    assert planted_index.find_spans("", min_words=L) == []
    assert planted_index.find_spans(" ".join(words[:L - 1]), min_words=L) == []
    assert planted_index.count([]) == 0
    with pytest.raises(ValueError, match="min_words"):
        planted_index.find_spans("x", min_words=0)


def test_word_boundary_a_partial_word_is_not_a_match(tmp_path):
    corpus = tmp_path / "c.jsonl"
    # a one-word document first (the opening probe counts its words)
    corpus.write_text('{"text": "solo"}\n'
                      '{"text": "the cat sat on the mat by the door"}\n', encoding="utf-8")
    build_index([corpus], tmp_path / "idx")
    with SpanIndex.open(tmp_path / "idx") as index:
        (s,) = index.find_spans("xcat sat on the mat", min_words=3)
        assert (s.word_start, s.text, s.docs[0].word_start) == (1, "sat on the mat", 2)
        # "mat by the doo" stops before the partial last word; "solo" is a one-word document
        (s,) = index.find_spans("mat by the doo", min_words=2)
        assert s.text == "mat by the"
        assert index.count(["solo"]) == 1 and index.count(["sol"]) == 0
        assert index.count(["door"]) == 1 and index.count(["the"]) == 3
        assert index.find_spans("solo", min_words=1)[0].docs[0].doc_ix == 0


def _random_outputs(docs: list[CorpusDoc], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    fresh = pseudo_words(rng, 50, "z")
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.7:
                w = normalize_words(rng.choice(docs).text)
                a = rng.randrange(len(w))
                parts += w[a:a + rng.randint(1, 25)]
            parts += rng.sample(fresh, rng.randint(0, 3))
        out.append(" ".join(parts))
    return out


@pytest.fixture(scope="module")
def repetitive(tmp_path_factory):
    """A small-vocabulary corpus (many accidental repeats) as 1 and 3 shards + the oracle."""
    rng = random.Random(11)
    vocab = pseudo_words(rng, 60, "w")
    docs = [CorpusDoc("s" + str(k % 3), f"d{k}",
                      " ".join(rng.choices(vocab, k=rng.randint(1, 250)))) for k in range(30)]
    docs.append(CorpusDoc("s0", "empty", "!!! ..."))  # no word: skipped
    corpus = tmp_path_factory.mktemp("rep") / "rep.jsonl"
    corpus.write_text("".join(json.dumps(d.__dict__) + "\n" for d in docs), encoding="utf-8")
    base = tmp_path_factory.mktemp("repidx")
    m1 = build_index([corpus], base / "one")
    build_index([corpus], base / "three", shards=3)
    assert m1["skipped_docs"] == 1 and m1["n_docs"] == 30
    # 3 shards searched by the engine's own find, 1 by the memory maps' binary search
    with SpanIndex.open(base / "one") as one, \
            SpanIndex.open(base / "three", search="engine") as three:
        yield docs, one, three, MemoryIndex(docs)


def test_the_oracle_agrees_on_random_spliced_outputs_1_and_3_shards(repetitive):
    docs, one, three, oracle = repetitive
    assert one.digest == three.digest == oracle.digest
    assert one.n_docs == three.n_docs == oracle.n_docs == 30
    assert len(three.manifest["shards"]) == 3
    outputs = _random_outputs(docs[:-1], 200, seed=5)
    reported = 0
    for k, text in enumerate(outputs):
        min_words = 3 + k % 6
        want = oracle.find_spans(text, min_words=min_words, max_docs=3)
        assert one.find_spans(text, min_words=min_words, max_docs=3) == want, text
        assert three.find_spans(text, min_words=min_words, max_docs=3) == want, text
        reported += len(want)
    assert reported > 200  # the comparison covered many spans
    for text in outputs[:40]:
        toks = normalize_words(text)[:4]
        assert one.count(toks) == three.count(toks) == oracle.count(toks)
        assert one.occurrences(toks) == three.occurrences(toks) == oracle.occurrences(toks)


def test_a_frequent_span_past_scan_cap_is_a_lower_bound(repetitive):
    docs, _, three, oracle = repetitive
    word = normalize_words(docs[0].text)[0]
    (s,) = three.find_spans(word, min_words=1, scan_cap=2)
    assert s.count == oracle.count([word]) > 2
    assert not s.n_docs_exact and 1 <= s.n_docs <= 2


UNICODE = [
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο στην όχθη",
    "यह एक हिंदी वाक्य है जिसमें मात्राएँ और संयुक्ताक्षर हैं क्षत्रिय",
    "東京 は 日本 の 首都 です 大阪 は 西 に あります 京都 も",
    "Party 🎉 time 🚀 with émojis and cafe\u0301 nai\u0308ve combining marks here",
    "The ﬁnal ﬂight of the ﬁreﬂy was Ｆｕｌｌ width and ² superscripts",
]


def test_unicode_round_trips_through_the_index(tmp_path):
    corpus = tmp_path / "u.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "doc_id": str(i)}, ensure_ascii=False)
                              + "\n" for i, t in enumerate(UNICODE)), encoding="utf-8")
    build_index([corpus], tmp_path / "idx")
    oracle = MemoryIndex([CorpusDoc("u", str(i), t) for i, t in enumerate(UNICODE)])
    with SpanIndex.open(tmp_path / "idx") as index:
        for i, original in enumerate(UNICODE):
            # the query: other case, NFD, the ligatures written out, wrapped in fresh words
            variant = unicodedata.normalize("NFD", original.upper())
            text = f"Zzfresh qqnew {variant} yyend."
            spans = index.find_spans(text, min_words=3)
            assert spans == oracle.find_spans(text, min_words=3)
            (s,) = spans
            assert normalize_words(text[s.char_start:s.char_end]) == s.text.split()
            assert s.text.split() == normalize_words(original)
            assert s.docs[0].doc_id == str(i) and s.docs[0].word_start == 0
            # the index's own bytes of the document equal the normalised words
            sh = index.shards[0]
            start = int(sh.offsets[s.docs[0].doc_ix]) + 1
            stored = sh.tok[start:start + len(s.text.encode()) + 2].tobytes()
            assert stored == b" " + s.text.encode() + b" "


@pytest.mark.parametrize("ptr_size", [1, 2, 3, 4, 5, 8])
def test_the_byte_map_search_reads_every_table_width(ptr_size, tmp_path):
    """Shards over 16 MB have 4-byte entries (read as a typed view), odd widths are read
    byte by byte: both give the suffix array's order. A shard of random bytes with its table
    written at ``ptr_size`` bytes per entry, searched like an index's."""
    from copyprobe.spans.index import _Shard

    rng = random.Random(ptr_size)
    data = bytes([0xFF]) + bytes(rng.choice(b" abc") for _ in range(200))
    sa = sorted(range(len(data)), key=lambda p: data[p:])
    maps = {"tokenized.0": data,
            "table.0": b"".join(p.to_bytes(ptr_size, "little") for p in sa),
            "offset.0": (0).to_bytes(8, "little")}  # what _ShardFiles maps
    sh = _Shard(SimpleNamespace(path=tmp_path, maps=maps, docs=None), ptr_size, 0, 1)
    assert (sh.ptr_view is not None) == (ptr_size in (1, 2, 4, 8))
    assert sh.ptrs(0, len(sa)).tolist() == sa
    for q in (b" a", b"ab", b"cab ", b"zzz", b" ", b"\xff", b"bb a"):
        lo, hi = sh.search(q)
        assert hi - lo == sum(data.startswith(q, p) for p in range(len(data)))
        assert all(data[p:].startswith(q) for p in sa[lo:hi])
        assert sh.lcp(lo - 1, q) <= len(q) and sh.lcp(len(sa), q) == 0
