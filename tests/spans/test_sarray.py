"""copyprobe's suffix-array builder (:mod:`copyprobe.spans.sarray`): the order of brute-force
sorting on random and repetitive token strings of every width, and byte for byte the table
infini-gram's indexer wrote for the same u8 shards (one process, and the 3-shard index built
at ``--cpus 2``). The u16 comparison and the u32 index (which only this builder can build
here) are in test_tokens.py, beside their tokenizers."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.spans.build import build_shard, resolve_builder
from copyprobe.spans.sarray import _BIG_ENDIAN, build_table, suffix_array
from copyprobe.spans.types import SpanIndexError

_LE = {1: "<u1", 2: "<u2", 4: "<u4"}


def _brute(data: bytes, width: int) -> list[int]:
    return sorted(range(len(data) // width), key=lambda i: data[i * width:])


@pytest.mark.parametrize("width", [1, 2, 4])
def test_order_is_memcmp_order_of_the_stored_bytes(width):
    rng = np.random.default_rng(width)
    cases = [np.zeros(1, dtype=np.uint64), np.zeros(37, dtype=np.uint64),  # one long repeat
             np.tile([3, 1, 4, 1, 5], 21).astype(np.uint64)]
    for _ in range(60):
        alpha = int(rng.choice([2, 3, 300 if width > 1 else 256]))
        cases.append(rng.integers(0, alpha, int(rng.integers(1, 80))).astype(np.uint64))
    for ids in cases:
        if width > 1:  # ids whose low byte decides apart from their value
            ids = ids * 257 + 3
        data = ids.astype(_LE[width]).tobytes()
        got = suffix_array(np.frombuffer(data, _BIG_ENDIAN[width]), width)
        assert got.tolist() == _brute(data, width), ids.tolist()


def test_tables_equal_the_engines_on_u8_shards(planted_index, planted_index3, tmp_path):
    shards = [*planted_index.shards, *planted_index3.shards]
    assert len(shards) == 4
    for k, sh in enumerate(shards):
        mine = tmp_path / f"table-{k}"
        assert build_table(sh.path / "tokenized.0", mine, 1, mem_gb=1) == sh.n_ranks
        assert mine.read_bytes() == (sh.path / "table.0").read_bytes(), sh.path


def test_builder_choice_and_the_memory_budget(planted_index, tmp_path):
    assert [resolve_builder("auto", d) for d in ("u8", "u16", "u32")] == [
        "engine", "engine", "copyprobe"]
    with pytest.raises(SpanIndexError, match="unknown suffix-array builder 'sais'"):
        resolve_builder("sais", "u8")
    sh = planted_index.shards[0]
    with pytest.raises(SpanIndexError, match=rf"^{sh.path / 'tokenized.0'}: copyprobe's "
                                             r"suffix-array builder needs about 48 bytes"):
        build_table(sh.path / "tokenized.0", tmp_path / "t", 1, mem_gb=0)
    # build_shard with the copyprobe builder: the same table, recorded as its build
    import shutil

    copy = tmp_path / "index"
    shutil.copytree(planted_index.path, copy)
    shard = copy / sh.path.name
    info = build_shard(shard, builder="copyprobe")
    assert (info["builder"], info["token_dtype"], info["cpus"]) == ("copyprobe", "u8", 1)
    assert (shard / "table.0").read_bytes() == (sh.path / "table.0").read_bytes()


def test_without_infini_gram_an_index_builds_and_is_searched_by_the_maps(
        planted, planted_corpus, planted_index, tmp_path, monkeypatch):
    import sys

    from copyprobe.extras import MissingExtra
    from copyprobe.spans.build import build_index
    from copyprobe.spans.index import SpanIndex
    from copyprobe.spans.layout import engine_installed

    for module in ("infini_gram", "infini_gram.engine", "infini_gram.indexing"):
        monkeypatch.setitem(sys.modules, module, None)  # as without the spans extra
    assert not engine_installed() and resolve_builder("auto", "u8") == "copyprobe"
    out = tmp_path / "light"
    build_index([planted_corpus], out, shards=1)
    (sh,) = planted_index.shards
    assert (out / sh.path.name / "table.0").read_bytes() == (sh.path / "table.0").read_bytes()
    text = " ".join(["lead", *planted.passages["longer"], "tail"])
    with SpanIndex.open(out, unit="words") as light:
        assert light._engine is None
        assert light.find_spans(text, min_words=10) == planted_index.find_spans(text, min_words=10)
    with pytest.raises(MissingExtra, match="spans"):
        SpanIndex.open(out, search="engine")
    with pytest.raises(MissingExtra, match="spans"):
        SpanIndex.open(out, check_engine=True)
