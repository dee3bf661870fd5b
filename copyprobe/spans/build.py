"""Building a span index: copyprobe writes the documents' bytes itself, ``infini-gram`` builds
the suffix arrays.

Three steps (the Snakemake rules run them as separate jobs; :func:`build_index` runs all):

1. :func:`prepare_index`: read the corpora (:mod:`~copyprobe.spans.corpus`), encode every
   document in the unit (:mod:`~copyprobe.spans.encoding`; documents without a token are
   skipped and counted), sort them by ``(source, doc_id)`` and cut them into ``shards``
   contiguous shards of about equal bytes. Each shard directory
   (``shard-00000-of-00004/``) gets infini-gram's step-1 files, written here as the
   package's own tokenizer would (``tokenized.0``: ``0xFF`` + the bytes of each document;
   ``offset.0``: u64 offset of each ``0xFF``; ``metadata.0``: one JSON line per document;
   ``metaoff.0``: u64 offset of each line) and ``docs.parquet`` (:data:`DOCS_SCHEMA`, one row
   per document). ``prepare.json`` records the plan.
2. :func:`build_shard`: ``python -m infini_gram.indexing --token_dtype u8`` writes the suffix
   array ``table.0``. Its step 1 is skipped because the files exist (checked in its output),
   so ``transformers``, which its tokenizer imports, is never imported. Paths are absolute,
   the shard is reached through a neutral symlink (the indexer's ``replace("tokenized",
   "table")`` and the engine's substring classification read the whole path) and
   ``--ulimit`` is the hard limit of open files. infini-gram 2.6.0 writes a wrong table for a
   shard whose parallel parts are shorter than its 100 000-byte overlap (measured: 2.5 KB,
   50 KB and 150 KB shards at ``--cpus 2`` give duplicated or missing suffixes; at ``--cpus
   1`` every size is right), so the build uses fewer processes for small shards
   (:func:`sa_cpus`) and checks the table's size.
3. :func:`finalize_index`: checks every shard, records sha256 checksums and writes
   ``index.json`` (:data:`FORMAT`, written last: the file downstream steps depend on).
"""

from __future__ import annotations

import json
import mmap
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from copyprobe.spans.corpus import iter_located
from copyprobe.spans.encoding import (
    DEFAULT_UNIT,
    NORMALIZER_VERSION,
    StreamDigest,
    check_unit,
    encode_doc,
    words,
)
from copyprobe.spans.index import SpanIndex
from copyprobe.spans.layout import (
    DOC_SEP,
    DOCS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    PLAN,
    SA_OVERLAP,
    SHARD_BUILD,
    SHARD_FILES,
    STEP1_FILES,
    TOKEN_DTYPE,
    infini_gram_version,
    neutral_dir,
    ptr_size,
    sha256,
    shard_dir_name,
)
from copyprobe.spans.types import SpanIndexError

__all__ = ["DOCS_SCHEMA", "build_index", "build_shard", "finalize_index", "prepare_index",
           "sa_cpus"]

#: one row per document of a shard (``docs.parquet``), in the shard's order
DOCS_SCHEMA = pa.schema([
    ("shard", pa.int32()),
    ("local_ix", pa.int64()),
    ("doc_ix", pa.int64()),  # over the whole index: the documents of earlier shards first
    ("source", pa.string()),
    ("doc_id", pa.string()),
    ("title", pa.string()),
    ("url", pa.string()),
    ("n_words", pa.int32()),
    ("byte_start", pa.int64()),  # offset of the document's 0xFF in tokenized.0
])


def _atomic_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpanIndexError(f"{path}: no {what} (was the step before run?)") from None
    except (OSError, ValueError) as exc:
        raise SpanIndexError(f"{path}: unreadable {what} ({exc})") from None


@dataclass
class _Doc:
    source: str
    doc_id: str
    title: str
    url: str
    path: str
    number: int
    n_words: int
    at: int  # offset of the encoded bytes in the staging file
    size: int


def _stage(corpora: Iterable[str | Path], unit: str, staging: Path) -> tuple[list[_Doc], int]:
    """Encode every document into ``staging`` (in read order); the documents sorted by
    ``(source, doc_id)`` and the number skipped for having no token."""
    docs: list[_Doc] = []
    skipped = 0
    at = 0
    with open(staging, "wb") as out:
        for path, number, doc in iter_located(corpora):
            toks = words(doc.text, unit)
            if not toks:
                skipped += 1
                continue
            data = encode_doc(toks)
            out.write(data)
            docs.append(_Doc(doc.source, doc.doc_id, doc.title, doc.url, str(path), number,
                             len(toks), at, len(data)))
            at += len(data)
    docs.sort(key=lambda d: (d.source, d.doc_id))
    return docs, skipped


def _cuts(sizes: list[int], shards: int) -> list[int]:
    """Start index of each of ``shards`` contiguous runs of about equal total size, each
    non-empty, plus ``len(sizes)``."""
    n = len(sizes)
    cum = np.cumsum(np.asarray(sizes, dtype=np.int64))
    total = int(cum[-1])
    cuts = [0]
    for k in range(1, shards):
        c = int(np.searchsorted(cum, total * k / shards, side="left")) + 1
        cuts.append(min(max(c, cuts[-1] + 1), n - (shards - k)))
    return [*cuts, n]


def _digest(docs: list[_Doc], unit: str, data: mmap.mmap | bytes) -> str:
    h = StreamDigest(unit)
    for d in docs:
        h.update(d.source, d.doc_id, d.title, d.url, data[d.at:d.at + d.size])
    return h.hexdigest()


def _write_shard(folder: Path, k: int, first_ix: int, docs: list[_Doc],
                 data: mmap.mmap | bytes) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():  # a previous build's files (a stale table.0 would be kept)
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    offsets = np.empty(len(docs), dtype=np.uint64)
    metaoffs = np.empty(len(docs), dtype=np.uint64)
    pos = mpos = 0
    with open(folder / "tokenized.0", "wb") as ds, open(folder / "metadata.0", "wb") as mt:
        for i, d in enumerate(docs):
            offsets[i] = pos
            ds.write(DOC_SEP)
            ds.write(data[d.at:d.at + d.size])
            pos += 1 + d.size
            line = (json.dumps({"path": d.path, "linenum": d.number,
                                "metadata": {"doc_id": d.doc_id, "source": d.source,
                                             "title": d.title, "url": d.url}},
                               ensure_ascii=False) + "\n").encode("utf-8")
            metaoffs[i] = mpos
            mt.write(line)
            mpos += len(line)
    offsets.tofile(folder / "offset.0")
    metaoffs.tofile(folder / "metaoff.0")
    table = pa.table({
        "shard": pa.array([k] * len(docs), pa.int32()),
        "local_ix": pa.array(np.arange(len(docs), dtype=np.int64)),
        "doc_ix": pa.array(np.arange(first_ix, first_ix + len(docs), dtype=np.int64)),
        "source": [d.source for d in docs],
        "doc_id": [d.doc_id for d in docs],
        "title": [d.title for d in docs],
        "url": [d.url for d in docs],
        "n_words": pa.array([d.n_words for d in docs], pa.int32()),
        "byte_start": pa.array(offsets.astype(np.int64)),
    }, schema=DOCS_SCHEMA)
    pq.write_table(table, folder / DOCS)
    return {"dir": folder.name, "n_docs": len(docs), "bytes": pos, "first_doc_ix": first_ix,
            "ptr_size": ptr_size(pos)}


def _plan(unit: str, corpora: list[str], docs: list[_Doc], skipped: int, digest: str,
          shards: list[dict]) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "unit": unit,
            "normalizer_version": NORMALIZER_VERSION, "token_dtype": TOKEN_DTYPE,
            "digest": digest, "corpora": corpora, "n_docs": len(docs),
            "skipped_docs": skipped, "bytes": sum(s["bytes"] for s in shards),
            "shards": shards}


def _check_args(unit: str, shards: int) -> None:
    check_unit(unit)
    if not isinstance(shards, int) or shards < 1:
        raise SpanIndexError(f"shards must be a positive integer, got {shards!r}")


class _Staged:
    """The corpora encoded into a staging file of ``out_dir`` (removed on exit)."""

    def __init__(self, corpora: Iterable[str | Path], out_dir: Path, unit: str):
        self.corpora = [str(c) for c in corpora]
        self.path = out_dir / ".staging.bin"
        self.docs, self.skipped = _stage(self.corpora, unit, self.path)
        self.unit = unit
        self._fh = open(self.path, "rb")
        self.data: mmap.mmap | bytes = (mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
                                        if self.path.stat().st_size else b"")
        self.digest = _digest(self.docs, unit, self.data)

    def __enter__(self) -> _Staged:
        return self

    def __exit__(self, *exc: object) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self._fh.close()
        self.path.unlink(missing_ok=True)

    def write(self, out_dir: Path, shards: int) -> dict:
        if len(self.docs) < shards:
            raise SpanIndexError(
                f"{', '.join(self.corpora)}: {len(self.docs)} document(s) with words cannot "
                f"fill {shards} shards; use at most {max(1, len(self.docs))}")
        names = {shard_dir_name(k, shards) for k in range(shards)}
        for old in out_dir.glob("shard-*"):  # shards of an earlier plan
            if old.is_dir() and old.name not in names:
                shutil.rmtree(old)
        cuts = _cuts([d.size + 1 for d in self.docs], shards)
        info = [_write_shard(out_dir / shard_dir_name(k, shards), k, cuts[k],
                             self.docs[cuts[k]:cuts[k + 1]], self.data)
                for k in range(shards)]
        plan = _plan(self.unit, self.corpora, self.docs, self.skipped, self.digest, info)
        _atomic_json(out_dir / PLAN, plan)
        return plan


def prepare_index(corpora: Iterable[str | Path], out_dir: str | Path, *,
                  unit: str = DEFAULT_UNIT, shards: int = 1) -> dict:
    """Step 1: every shard's step-1 files and ``docs.parquet``, and ``prepare.json`` (the
    plan, returned). Removes an earlier ``index.json`` first (the index is rebuilt)."""
    _check_args(unit, shards)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    with _Staged(corpora, out, unit) as staged:
        return staged.write(out, shards)


def sa_cpus(n_bytes: int, cpus: int, mem_gb: int) -> int:
    """The processes to build a shard of ``n_bytes`` with: at most ``cpus``, and few enough
    that every parallel part is longer than twice infini-gram's overlap (2.6.0 writes a wrong
    suffix array otherwise; see the module docstring)."""
    mem_bytes = mem_gb * 1024**3
    batches = 1
    while batches * (mem_bytes // 12) < n_bytes:  # indexing.py's batches for u8
        batches *= 2
    c = max(1, cpus)
    while c > 1 and n_bytes // (batches * c) <= 2 * SA_OVERLAP:
        c -= 1
    return c


def _nofile_limit() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 1_048_576 if hard == resource.RLIM_INFINITY else int(hard)


def build_shard(shard_dir: str | Path, *, cpus: int = 1, mem_gb: int = 2) -> dict:
    """Step 2: the suffix array ``table.0`` of one prepared shard, by infini-gram's indexer
    (a subprocess); writes and returns ``build.json`` (seconds, processes used)."""
    from copyprobe.extras import require

    require("spans", "infini_gram", needed_for="building a span index")
    shard = Path(shard_dir).resolve()
    for name in STEP1_FILES:
        if not (shard / name).is_file():
            raise SpanIndexError(f"{shard / name}: missing (run prepare_index first)")
    n_bytes = (shard / "tokenized.0").stat().st_size
    if n_bytes == 0:
        raise SpanIndexError(f"{shard / 'tokenized.0'}: empty shard")
    for stale in ("table.0", SHARD_BUILD):
        (shard / stale).unlink(missing_ok=True)
    mem = max(1, int(mem_gb))
    used = sa_cpus(n_bytes, int(cpus), mem)
    link_dir = neutral_dir()
    temp = shard.parent / f".sa-temp-{shard.name}"
    try:
        (link_dir / "shard").symlink_to(shard, target_is_directory=True)
        (link_dir / "nothing").mkdir()
        cmd = [sys.executable, "-m", "infini_gram.indexing",
               "--data_dir", str(link_dir / "nothing"), "--save_dir", str(link_dir / "shard"),
               "--temp_dir", str(temp), "--token_dtype", TOKEN_DTYPE, "--shards", "1",
               "--workers", "1", "--worker_id", "0", "--cpus", str(used), "--mem", str(mem),
               "--ulimit", str(_nofile_limit())]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              cwd=link_dir)
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(link_dir, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)
    out = proc.stdout + proc.stderr
    tail = " | ".join(out.strip().splitlines()[-6:])
    if proc.returncode != 0 or "Something went wrong" in out:
        raise SpanIndexError(f"{shard}: infini-gram's indexer failed (exit status "
                             f"{proc.returncode}): {tail}")
    if "Step 1 (tokenize): Skipped" not in out:
        raise SpanIndexError(f"{shard}: infini-gram's indexer did not skip its own "
                             f"tokenizer (the step-1 files were not seen): {tail}")
    table = shard / "table.0"
    want = ptr_size(n_bytes) * n_bytes
    if not table.is_file() or table.stat().st_size != want:
        got = table.stat().st_size if table.is_file() else "no file"
        raise SpanIndexError(f"{table}: the indexer wrote {got} bytes, expected {want} "
                             f"({n_bytes} suffixes of {ptr_size(n_bytes)} bytes)")
    info = {"seconds": round(seconds, 3), "cpus": used, "cpus_asked": int(cpus),
            "mem_gb": mem, "bytes": n_bytes, "ptr_size": ptr_size(n_bytes),
            "infini_gram_version": infini_gram_version()}
    _atomic_json(shard / SHARD_BUILD, info)
    return info


def finalize_index(out_dir: str | Path, *, checksums: bool = True) -> dict:
    """Step 3: check every shard of the plan, record its files' sha256 (``checksums``) and
    write ``index.json`` (the manifest, returned); the index is then opened once to prove it
    answers (:meth:`~copyprobe.spans.index.SpanIndex.open` validates it)."""
    out = Path(out_dir).resolve()
    plan = _read_json(out / PLAN, "span-index plan (prepare.json)")
    shards = []
    for s in plan["shards"]:
        folder = out / s["dir"]
        build = _read_json(folder / SHARD_BUILD, "shard build record (build_shard not run?)")
        entry = {**s, "build_s": build.get("seconds"), "build_cpus": build.get("cpus")}
        if checksums:
            entry["sha256"] = {name: sha256(folder / name) for name in SHARD_FILES
                               if name != SHARD_BUILD and (folder / name).is_file()}
        shards.append(entry)
    manifest = {**plan, "shards": shards, "infini_gram_version": infini_gram_version()}
    tmp = out / f".{MANIFEST}.tmp"
    _atomic_json(tmp, manifest)
    try:  # validate before publishing: index.json appears only for an index that opens
        SpanIndex.open(out, manifest_path=tmp).close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, out / MANIFEST)
    return manifest


def _unchanged(out: Path, unit: str, shards: int, digest: str) -> dict | None:
    """The existing manifest when it was built from the same documents the same way."""
    try:
        old = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = (old.get("format") == FORMAT and old.get("format_version") == FORMAT_VERSION
            and old.get("unit") == unit and old.get("normalizer_version") == NORMALIZER_VERSION
            and old.get("digest") == digest and len(old.get("shards", [])) == shards
            and old.get("infini_gram_version") == infini_gram_version())
    return old if same else None


def build_index(corpora: Iterable[str | Path], out_dir: str | Path, *,
                unit: str = DEFAULT_UNIT, shards: int = 1, cpus: int = 1,
                mem_gb: int = 2) -> dict:
    """Build the span index of ``corpora`` in ``out_dir`` (all three steps, shards one after
    the other) and return its manifest. When ``out_dir`` already holds an index of the same
    documents (same digest), unit and shard count that opens, nothing is rebuilt: the
    manifest is returned with ``"reused": True``."""
    _check_args(unit, shards)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with _Staged(corpora, out, unit) as staged:
        old = _unchanged(out, unit, shards, staged.digest)
        if old is not None:
            try:
                SpanIndex.open(out, unit=unit).close()
                return {**old, "reused": True}
            except SpanIndexError:
                pass  # damaged: rebuild
        (out / MANIFEST).unlink(missing_ok=True)
        plan = staged.write(out, shards)
    for s in plan["shards"]:
        build_shard(out / s["dir"], cpus=cpus, mem_gb=mem_gb)
    return {**finalize_index(out), "reused": False}
