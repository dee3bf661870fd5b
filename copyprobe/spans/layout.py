"""What a built span index looks like on disk: the manifest's format, a shard's files, the
suffix array's entry width, and the one infini-gram pitfall about paths.

An index folder holds ``index.json`` (the manifest, written last), ``prepare.json`` (the
plan of the build's first step) and one folder per shard, ``shard-00000-of-00004/``, holding
exactly :data:`SHARD_FILES`. infini-gram's engine sorts a shard's files into kinds by
substrings of their *whole* path (:data:`ENGINE_KEYWORDS`, with its asserts compiled out): an
index under ``/data/tables/`` is misread (measured: a segmentation fault). So the engine and
the indexer are only ever given :func:`neutral_dir` symlinks.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import math
import tempfile
from pathlib import Path

from copyprobe.spans.types import SpanIndexError

#: the manifest's format name and version (a reader refuses others)
FORMAT = "copyprobe-span-index"
FORMAT_VERSION = 1
TOKEN_DTYPE = "u8"
DOC_SEP = b"\xff"
#: infini-gram's overlap between the parts of a parallel suffix-array build (indexing.py HACK)
SA_OVERLAP = 100_000
#: who builds a shard's suffix array (:func:`copyprobe.spans.build.resolve_builder`)
BUILDERS = ("auto", "engine", "copyprobe")
MANIFEST = "index.json"
PLAN = "prepare.json"
SHARD_BUILD = "build.json"
DOCS = "docs.parquet"
#: the shard files infini-gram's own tokenizer would write (copyprobe writes them)
STEP1_FILES = ("tokenized.0", "offset.0", "metadata.0", "metaoff.0")
#: every file of a built shard (anything else in its folder is refused when opening)
SHARD_FILES = (*STEP1_FILES, "table.0", DOCS, SHARD_BUILD)
#: the substrings infini-gram's engine sorts a shard's files by, matched in the whole path
ENGINE_KEYWORDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")


def shard_dir_name(k: int, n: int) -> str:
    return f"shard-{k:05d}-of-{n:05d}"


def ptr_size(n_bytes: int) -> int:
    """Bytes per suffix-array entry of a shard of ``n_bytes`` (infini-gram's ``ratio``)."""
    return max(1, math.ceil(math.log2(n_bytes) / 8)) if n_bytes > 1 else 1


def engine_installed() -> bool:
    """Whether infini-gram (the spans extra) can be imported here (found, not imported)."""
    return importlib.util.find_spec("infini_gram") is not None


def infini_gram_version() -> str | None:
    try:
        return importlib.metadata.version("infini-gram")
    except importlib.metadata.PackageNotFoundError:
        return None


def neutral_dir() -> Path:
    """A fresh temporary folder whose path holds none of :data:`ENGINE_KEYWORDS`."""
    for _ in range(20):
        d = Path(tempfile.mkdtemp(prefix="copyprobe-spans-"))
        if not any(k in str(d) for k in ENGINE_KEYWORDS):
            return d
        d.rmdir()
    raise SpanIndexError(f"{tempfile.gettempdir()}: the temporary folder's path holds one of "
                         f"{', '.join(ENGINE_KEYWORDS)}, which infini-gram reads as a file "
                         "kind; set TMPDIR to another folder")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()
