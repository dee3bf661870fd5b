"""The planted corpus's span indexes, built once per session (each build is a real
infini-gram subprocess of about half a second), and its brute-force oracle."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planting import Planted, make_planted, write_parquet  # noqa: E402

from copyprobe.spans.build import build_index  # noqa: E402
from copyprobe.spans.index import SpanIndex  # noqa: E402
from copyprobe.spans.reference import MemoryIndex  # noqa: E402


@pytest.fixture(scope="session")
def planted() -> Planted:
    return make_planted()


@pytest.fixture(scope="session")
def planted_corpus(planted, tmp_path_factory) -> Path:
    return write_parquet(planted.docs, tmp_path_factory.mktemp("corpus") / "planted.parquet")


@pytest.fixture(scope="session")
def planted_index(planted_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "planted"
    build_index([planted_corpus], out, shards=1)
    with SpanIndex.open(out, unit="words") as index:
        yield index


@pytest.fixture(scope="session")
def planted_index3(planted_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "planted3"
    build_index([planted_corpus], out, shards=3, cpus=2)
    with SpanIndex.open(out) as index:
        yield index


@pytest.fixture(scope="session")
def planted_memory(planted) -> MemoryIndex:
    return MemoryIndex(planted.docs)
