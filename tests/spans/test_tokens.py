"""Span indexes in a model's tokens (unit ``tokens``): the packaged SmolLM2 GGUF's vocabulary
(llama.cpp, vocab_only; u16) and Hugging Face tokenizer.json files made here (a u16 one, and
one whose words have ids above 70,000, a u32 index that copyprobe's suffix-array builder
builds, infini-gram's indexer refusing it below its 32 GiB a process).

Checked against a brute-force oracle on token ids (every span, its count, documents and token
positions), the memory-map search against the engine's, the suffix array's byte order, the
tokenizer's identity (another tokenizer is an error naming both), the CLI, and the streaming
guard's refusal."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planting import make_planted, write_parquet  # noqa: E402

from copyprobe import cli  # noqa: E402
from copyprobe.spans.build import build_index, build_shard  # noqa: E402
from copyprobe.spans.index import SpanIndex  # noqa: E402
from copyprobe.spans.reference import maximal_runs  # noqa: E402
from copyprobe.spans.sarray import build_table  # noqa: E402
from copyprobe.spans.tokenizer import load_tokenizer  # noqa: E402
from copyprobe.spans.types import SpanIndexError  # noqa: E402

L = 10  # minimum span in tokens


@pytest.fixture(scope="module")
def gguf(smollm2_file) -> Path:
    return smollm2_file.path


@pytest.fixture(scope="module")
def planted():
    return make_planted(seed=11)


@pytest.fixture(scope="module")
def corpus(planted, tmp_path_factory) -> Path:
    return write_parquet(planted.docs, tmp_path_factory.mktemp("tok-corpus") / "c.parquet")


@pytest.fixture(scope="module")
def token_index(corpus, gguf, tmp_path_factory):
    out = tmp_path_factory.mktemp("tok-index") / "smol"
    manifest = build_index([corpus], out, unit="tokens", tokenizer=gguf, shards=2)
    with SpanIndex.open(out, tokenizer=gguf) as index:
        yield index, manifest


def _word_level(planted, size: int, path: Path, words_from: int = 2) -> Path:
    """A word-level tokenizer.json of at least ``size`` ids: the planted words from id
    ``words_from`` on (fillers before them), fillers after them up to ``size``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    words = sorted({w for d in planted.docs for w in d.text.lower().replace(".", " ").split()})
    vocab = {"[UNK]": 0, ".": 1}
    for k in range(words_from - len(vocab)):
        vocab[f"filler{k}"] = len(vocab)
    for w in words:
        vocab[w] = len(vocab)
    for k in range(size - len(vocab)):
        vocab[f"filler{words_from + k}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def hf_json(planted, tmp_path_factory) -> Path:
    return _word_level(planted, 30_000, tmp_path_factory.mktemp("hf") / "tokenizer.json")


class Oracle:
    """Brute force over the documents' token ids (index order: sorted by source, doc_id):
    ``bytes.find`` over every document's ids as int32, at whole ids only."""

    def __init__(self, docs, tokenizer):
        self.docs = sorted(docs, key=lambda d: (d.source, d.doc_id))
        self.ids = [np.asarray(tokenizer.encode(d.text), dtype="<i4").tobytes()
                    for d in self.docs]

    def occurrences(self, q: list[int]) -> list[tuple[int, int]]:
        needle = np.asarray(q, dtype="<i4").tobytes()
        out = []
        for ix, hay in enumerate(self.ids):
            at = hay.find(needle)
            while at != -1:
                if at % 4 == 0:
                    out.append((ix, at // 4))
                at = hay.find(needle, at + 1)
        return out

    def spans(self, ids: list[int], min_len: int) -> list[tuple]:
        out = []
        for i, j in maximal_runs(len(ids), min_len,
                                 lambda a, b: bool(self.occurrences(ids[a:b]))):
            occ = self.occurrences(ids[i:j])
            first: dict[int, int] = {}
            for ix, p in occ:
                first.setdefault(ix, p)
            docs = [(self.docs[ix].doc_id, p) for ix, p in sorted(first.items())[:5]]
            out.append((i, j, len(occ), len(first), docs))
        return out


def _queries(planted, n: int = 12, seed: int = 3) -> list[str]:
    """Texts spliced from 2-3 slices of the documents (cut anywhere, mid-word too) and new
    words between them."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(2, 3)):
            d = rng.choice(planted.docs).text
            a = rng.randrange(0, len(d) - 200)
            parts.append(d[a:a + rng.randint(40, 200)])
            parts.append(" ".join(rng.choice(["zebra", "quokka", "Lorem", "ipsum!"])
                                  for _ in range(rng.randint(1, 4))))
        out.append(" ".join(parts))
    return out


def _found(index, text: str) -> list[tuple]:
    return [(s.word_start, s.word_end, s.count, s.n_docs, [(d.doc_id, d.word_start)
                                                          for d in s.docs])
            for s in index.find_spans(text, min_words=L)]


def test_suffix_array_is_byte_ordered_and_manifest_records_the_tokenizer(token_index, gguf):
    index, manifest = token_index
    tok = load_tokenizer(gguf)
    assert manifest["unit"] == "tokens" and manifest["token_dtype"] == "u16"
    assert manifest["tokenizer"] == {"kind": "gguf", "path": str(gguf), "sha256":
                                     tok.sha256, "vocab_size": 49152, "token_dtype": "u16"}
    sh = index.shards[0]
    assert sh.n_ranks == sh.n_bytes // 2 and sh.raw_tok[:2] == b"\xff\xff"
    ptrs = sh.ptrs(0, sh.n_ranks).astype(np.int64)
    assert (ptrs % 2 == 0).all() and len(set(ptrs.tolist())) == sh.n_ranks
    raw = bytes(sh.raw_tok)
    suffixes = [raw[p:p + 24] for p in ptrs.tolist()]
    assert suffixes == sorted(suffixes)  # memcmp of little-endian ids, not id order
    ids = np.frombuffer(raw, dtype="<u2")
    by_value = [tuple(ids[p // 2:p // 2 + 12]) for p in ptrs.tolist()]
    assert by_value != sorted(by_value)


def test_spans_match_the_brute_force_oracle(token_index, planted, gguf):
    index, _ = token_index
    oracle = Oracle(planted.docs, load_tokenizer(gguf))
    n_spans = 0
    for text in _queries(planted):
        toks = index.tokenize(text)
        want = oracle.spans(toks.ids, L)
        got = _found(index, text)
        assert got == want, text
        n_spans += len(got)
        for s in index.find_spans(text, min_words=L):  # char offsets from the pieces
            assert text[s.char_start:s.char_end].strip() == s.text.strip()
    assert n_spans >= 12


def test_planted_copy_is_found_at_its_token_position(token_index, planted, gguf):
    index, _ = token_index
    tok = load_tokenizer(gguf)
    doc = next(d for d in planted.docs if d.doc_id == "doc01")
    text = "Nothing like it: " + doc.text[500:800] + " and so on."
    (span, *_) = [s for s in index.find_spans(text, min_words=L) if s.n_words > 40]
    assert [d.doc_id for d in span.docs] == ["doc01"]
    # the token position is that of the span's first piece in the document's tokens
    doc_ids = tok.encode(doc.text)
    q = index.tokenize(text).ids[span.word_start:span.word_end]
    pos = span.docs[0].word_start
    assert doc_ids[pos:pos + len(q)] == q


def test_mmap_and_engine_search_agree(token_index, planted, gguf):
    index, _ = token_index
    with SpanIndex.open(index.path, search="engine") as engine:
        for text in _queries(planted, n=3, seed=5):
            assert index.find_spans(text, min_words=L) == engine.find_spans(text, min_words=L)
            ids = index.tokenize(text).ids
            for a in range(0, len(ids) - 3, 7):
                assert index.count(ids[a:a + 3]) == engine.count(ids[a:a + 3])


def test_index_from_a_tokenizer_json(corpus, planted, hf_json, gguf, tmp_path):
    out = tmp_path / "hf"
    m = build_index([corpus], out, unit="tokens", tokenizer=hf_json)
    assert (m["token_dtype"], m["tokenizer"]["kind"], m["tokenizer"]["vocab_size"]) == (
        "u16", "hf", 30_000)
    oracle = Oracle(planted.docs, load_tokenizer(hf_json))
    with SpanIndex.open(out) as mm, SpanIndex.open(out, search="engine") as eng:
        for text in _queries(planted, n=4, seed=9):
            want = oracle.spans(mm.tokenize(text).ids, L)
            assert _found(mm, text) == want == _found(eng, text)
        # text pieces are not ids: refused
        with pytest.raises(SpanIndexError, match="token ids"):
            mm.count(["pabc", "pdef"])
    # another tokenizer than the index's: an error naming both files
    with pytest.raises(SpanIndexError) as err:
        SpanIndex.open(out, tokenizer=gguf)
    assert str(hf_json) in str(err.value) and "SmolLM2" in str(err.value)


def test_copyprobe_tables_equal_the_engines_on_u16_shards(token_index, tmp_path):
    index, _ = token_index
    assert len(index.shards) == 2
    for k, sh in enumerate(index.shards):
        mine = tmp_path / f"table-{k}"
        assert build_table(sh.path / "tokenized.0", mine, 2, mem_gb=1) == sh.n_ranks
        assert mine.read_bytes() == (sh.path / "table.0").read_bytes(), sh.path


@pytest.fixture(scope="module")
def u32_index(corpus, planted, tmp_path_factory):
    """An index of a 70,000-id word-level tokenizer (u32), built by copyprobe's builder
    (``auto``): infini-gram's indexer needs 32 GiB a process for it."""
    base = tmp_path_factory.mktemp("u32")
    big = _word_level(planted, 0, base / "big" / "tokenizer.json", words_from=70_000)
    manifest = build_index([corpus], base / "u32", unit="tokens", tokenizer=big, shards=2)
    return base / "u32", big, manifest


def test_a_u32_index_finds_what_the_oracle_finds(u32_index, planted):
    out, big, manifest = u32_index
    tok = load_tokenizer(big)
    assert tok.dtype == manifest["token_dtype"] == "u32"
    for s in manifest["shards"]:
        build = json.loads((out / s["dir"] / "build.json").read_text())
        assert (build["builder"], build["token_dtype"]) == ("copyprobe", "u32")
    oracle = Oracle(planted.docs, tok)
    n_spans = 0
    with SpanIndex.open(out) as mm, SpanIndex.open(out, search="engine") as eng:
        assert mm.shards[0].raw_tok[:4] == b"\xff" * 4
        for text in _queries(planted, n=6, seed=13):
            ids = mm.tokenize(text).ids
            want = oracle.spans(ids, L)
            assert _found(mm, text) == want == _found(eng, text), text
            n_spans += len(want)
            for a in range(0, len(ids) - 3, 5):
                assert mm.count(ids[a:a + 3]) == eng.count(ids[a:a + 3]) == len(
                    oracle.occurrences(ids[a:a + 3]))
        filler = tok.encode("filler69000")  # an id of no document
        assert mm.count(filler) == eng.count(filler) == 0
    # every word of the documents has an id above 65535 (only "." and [UNK] are below)
    doc_ids = np.concatenate([tok.encode(d.text) for d in planted.docs])
    assert (doc_ids[doc_ids > 1] >= 70_000).all() and (doc_ids >= 70_000).mean() > 0.8
    assert n_spans >= 6


def test_a_u32_shard_is_refused_by_the_engines_builder_below_its_memory(u32_index,
                                                                        tmp_path):
    import shutil

    out, _, _ = u32_index
    copy = tmp_path / "u32"
    shutil.copytree(out, copy)
    shard = next(copy.glob("shard-*"))
    with pytest.raises(SpanIndexError, match=r"a u32 shard .* needs mem_gb >= 34.*builder "
                                             r"'copyprobe'"):
        build_shard(shard, mem_gb=2, builder="engine")


def test_units_and_tokenizers_must_fit(corpus, gguf, tmp_path):
    with pytest.raises(SpanIndexError, match="needs a tokenizer"):
        build_index([corpus], tmp_path / "a", unit="tokens")
    with pytest.raises(SpanIndexError, match="only the unit 'tokens' takes one"):
        build_index([corpus], tmp_path / "b", unit="words", tokenizer=gguf)
    with pytest.raises(SpanIndexError, match="not a tokenizer"):
        load_tokenizer(corpus)


def test_streaming_guard_refuses_a_token_index(token_index, planted):
    from copyprobe.guard.output import OutputGuard

    index, _ = token_index
    guard = OutputGuard(index, min_words=L)
    doc = planted.docs[3].text
    assert guard.check("Here: " + doc[100:400]).action == "block"  # whole answers work
    with pytest.raises(SpanIndexError, match="streaming output check cannot use an index in "
                                             "unit 'tokens'"):
        guard.stream()


def test_cli_build_and_find_with_tokenizer(corpus, planted, gguf, hf_json, tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli.main(["index", "build", str(corpus), "--out", str(out), "--unit", "tokens",
                     "--tokenizer", str(gguf)]) == 0
    built = json.loads(capsys.readouterr().out)
    assert (built["unit"], built["token_dtype"], built["tokenizer"]["kind"]) == (
        "tokens", "u16", "gguf")
    text = "So: " + planted.docs[2].text[50:300]
    assert cli.main(["index", "find", str(out), text, "--min-words", str(L),
                     "--tokenizer", str(gguf)]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["index"]["tokenizer"]["sha256"] == built["tokenizer"]["sha256"]
    assert [d["doc_id"] for d in found["spans"][0]["docs"]] == ["doc02"]
    assert found["words"] == len(load_tokenizer(gguf).encode(text))
    assert cli.main(["index", "find", str(out), text, "--tokenizer", str(hf_json)]) == 1
    err = capsys.readouterr().err
    assert "the index was built with the tokenizer" in err and str(hf_json) in err
    assert len(err.strip().splitlines()) == 1


def test_attribution_counts_tokens(token_index, planted):
    import pandas as pd

    from copyprobe.spans.attribution import attribute

    index, _ = token_index
    text = "In short: " + planted.docs[5].text[200:500] + " That is all."
    gens = pd.DataFrame([{"request_id": "r1", "model": "m", "sample_index": 0, "status": "ok",
                          "text": text}])
    spans, summary = attribute(gens, index, min_words=L, max_docs=3, name="smol", source="s")
    (row,) = summary.to_dict("records")
    assert row["generation_words"] == len(index.tokenize(text))  # tokens, not words
    assert row["top_doc"].endswith("doc05") and 0.5 < row["coverage"] < 1
    assert spans["n_words"].tolist() == [s.n_words for s in index.find_spans(text, min_words=L)]
