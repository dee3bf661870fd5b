"""Building a span index: copyprobe writes the documents' bytes itself, ``infini-gram`` builds
the suffix arrays.

Reference: docs/span-index.md.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import hashlib
import json
import logging
import os
import resource
import secrets
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

from copyprobe.spans.checksums import ALGORITHM, BLOCK_BYTES, file_sums
from copyprobe.progress import Progress
from copyprobe.spans.corpus import corpus_files, iter_located, location
from copyprobe.spans.encoding import DEFAULT_UNIT, NORMALIZER_VERSION
from copyprobe.spans.index import SpanIndex
from copyprobe.spans.layout import (
    BUILDERS,
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
    engine_installed,
    infini_gram_version,
    neutral_dir,
    ptr_size,
    shard_dir_name,
)
from copyprobe.spans.sarray import build_table
from copyprobe.spans.tokenizer import SpanTokenizer
from copyprobe.spans.types import SpanIndexError
from copyprobe.spans.units import ByteCodec, make_codec

log = logging.getLogger(__name__)

__all__ = ["BUILDERS", "DOCS_SCHEMA", "build_index", "build_shard", "finalize_index",
           "prepare_index", "publish", "resolve_builder", "sa_cpus"]

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


@dataclass(slots=True)
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


#: documents without a word named in the build's warning (the rest are counted)
_NAMED = 5


def _stage(corpora: Iterable[str | Path], codec: ByteCodec, staging: Path
           ) -> tuple[list[_Doc], int, int]:
    """Encode every document into ``staging`` (in read order); the documents sorted by
    ``(source, doc_id)``, the number skipped for having no token (named in a warning) and
    the number whose words repeat an earlier document's exactly. Shows the reading's
    progress (MB of the corpus files)."""
    docs: list[_Doc] = []
    skipped: list[str] = []
    at = 0
    seen: set[bytes] = set()
    repeats = 0
    total = sum(f.stat().st_size for f in corpus_files(corpora))
    progress = Progress(max(1, -(-total // 1_000_000)), "index build: corpora read (MB)")
    read = [0]

    def on_read(n: int) -> None:
        read[0] += n
        progress.update(min(read[0] // 1_000_000, progress.total) - progress.done)

    with open(staging, "wb") as out:
        for path, number, doc in iter_located(corpora, on_read):
            enc = codec.doc(doc.text)
            if enc is None:
                skipped.append(location(path, number, doc)
                               + (" (empty text)" if not doc.text.strip() else ""))
                continue
            data, n_units = enc
            key = hashlib.blake2b(data, digest_size=16).digest()
            repeats += key in seen
            seen.add(key)
            out.write(data)
            docs.append(_Doc(doc.source, doc.doc_id, doc.title, doc.url, str(path), number,
                             n_units, at, len(data)))
            at += len(data)
    progress.update(progress.total - progress.done)  # all read (the sizes were rounded)
    progress.close(f"{len(docs)} documents, {at / 1e6:.1f} MB encoded")
    docs.sort(key=lambda d: (d.source, d.doc_id))
    if skipped:
        more = f" and {len(skipped) - _NAMED} more" if len(skipped) > _NAMED else ""
        log.warning("%d document(s) hold no word in unit %r and are skipped: %s%s",
                    len(skipped), codec.unit, "; ".join(skipped[:_NAMED]), more)
    if repeats:
        log.warning("%d document(s) repeat an earlier one's words exactly: infini-gram's "
                    "suffix-array merge slows down on long repeats (it compares up to %d "
                    "bytes); deduplicate the corpus if the build is slow", repeats, SA_OVERLAP)
    return docs, len(skipped), repeats


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


class _Reader:
    """A staging file's documents by position (``os.pread``: no memory map, whose pages would
    count in the process's memory, up to the whole encoded corpus)."""

    def __init__(self, path: Path):
        self._fd = os.open(path, os.O_RDONLY)

    def __call__(self, d: _Doc) -> bytes:
        data = os.pread(self._fd, d.size, d.at)
        if len(data) != d.size:
            raise SpanIndexError(f"staging file: read {len(data)} of {d.size} bytes at "
                                 f"{d.at} (was it changed during the build?)")
        return data

    def close(self) -> None:
        os.close(self._fd)


def _digest(docs: list[_Doc], codec: ByteCodec, read: _Reader) -> str:
    h = codec.digest()
    for d in docs:
        h.update(d.source, d.doc_id, d.title, d.url, read(d))
    return h.hexdigest()


def _write_shard(folder: Path, k: int, first_ix: int, docs: list[_Doc],
                 read: _Reader, sep: bytes = DOC_SEP) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():  # a previous build's files (a stale table.0 would be kept)
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    offsets = np.empty(len(docs), dtype=np.uint64)
    metaoffs = np.empty(len(docs), dtype=np.uint64)
    pos = mpos = 0
    with open(folder / "tokenized.0", "wb") as ds, open(folder / "metadata.0", "wb") as mt:
        for i, d in enumerate(docs):
            offsets[i] = pos
            ds.write(sep)
            ds.write(read(d))
            pos += len(sep) + d.size
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


def _plan(codec: ByteCodec, corpora: list[str], docs: list[_Doc], skipped: int,
          repeats: int, digest: str, shards: list[dict]) -> dict:
    plan = {"format": FORMAT, "format_version": FORMAT_VERSION, "unit": codec.unit,
            "normalizer_version": NORMALIZER_VERSION, "token_dtype": codec.dtype,
            "digest": digest, "corpora": corpora, "n_docs": len(docs),
            "skipped_docs": skipped, "repeated_docs": repeats,
            "bytes": sum(s["bytes"] for s in shards), "shards": shards}
    if codec.identity() is not None:
        plan["tokenizer"] = codec.identity()
    return plan


def _check_args(unit: str, shards: int,
                tokenizer: str | Path | SpanTokenizer | None = None) -> ByteCodec:
    codec = make_codec(unit, tokenizer)
    if not isinstance(shards, int) or shards < 1:
        raise SpanIndexError(f"shards must be a positive integer, got {shards!r}")
    return codec


class _Staged:
    """The corpora encoded into a staging file of ``out_dir`` (removed on exit)."""

    def __init__(self, corpora: Iterable[str | Path], out_dir: Path, codec: ByteCodec):
        self.corpora = [str(c) for c in corpora]
        self.path = out_dir / ".staging.bin"
        try:
            self.docs, self.skipped, self.repeats = _stage(self.corpora, codec, self.path)
        except BaseException:  # a bad corpus: leave nothing behind
            self.path.unlink(missing_ok=True)
            raise
        self.codec = codec
        self.read = _Reader(self.path)
        try:
            self.digest = _digest(self.docs, codec, self.read)
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self) -> _Staged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.read.close()
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
        sep = self.codec.doc_sep
        cuts = _cuts([d.size + len(sep) for d in self.docs], shards)
        info = [_write_shard(out_dir / shard_dir_name(k, shards), k, cuts[k],
                             self.docs[cuts[k]:cuts[k + 1]], self.read, sep)
                for k in range(shards)]
        plan = _plan(self.codec, self.corpora, self.docs, self.skipped, self.repeats,
                     self.digest, info)
        _atomic_json(out_dir / PLAN, plan)
        return plan


def prepare_index(corpora: Iterable[str | Path], out_dir: str | Path, *,
                  unit: str = DEFAULT_UNIT, shards: int = 1,
                  tokenizer: str | Path | SpanTokenizer | None = None) -> dict:
    """Step 1: every shard's step-1 files and ``docs.parquet``, and ``prepare.json`` (the
    plan, returned). Removes an earlier ``index.json`` first (the index is rebuilt).
    ``tokenizer``: the unit ``tokens``'s tokenizer file (:mod:`~copyprobe.spans.tokenizer`)."""
    codec = _check_args(unit, shards, tokenizer)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    with _Staged(corpora, out, codec) as staged:
        return staged.write(out, shards)


def sa_cpus(n_bytes: int, cpus: int, mem_gb: int, width: int = 1) -> int:
    """The processes to build a shard of ``n_bytes`` with: at most ``cpus``, and few enough
    that every parallel part is longer than twice infini-gram's overlap (2.6.0 writes a wrong
    suffix array otherwise; see the module docstring)."""
    mem_bytes = mem_gb * 1024**3
    batches = 1
    while batches * (mem_bytes // (12 if width == 1 else 8)) < n_bytes:  # indexing.py's
        batches *= 2
    c = max(1, cpus)
    while c > 1 and n_bytes // (batches * c) <= 2 * SA_OVERLAP:
        c -= 1
    return c


def _nofile_limit() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 1_048_576 if hard == resource.RLIM_INFINITY else int(hard)


#: GiB each suffix-array process of a u32 shard needs: infini-gram 2.6.0's ``make-part``
#: allocates 2^32 x 8 bytes (a table over the whole u32 alphabet) whatever the shard's size
#: (measured: "memory allocation of 34359738368 bytes failed" on a 70 KB shard)
U32_GB_PER_CPU = 34


def _shard_dtype(shard: Path) -> str:
    """The token type of a prepared shard: its plan's (``prepare.json`` beside it)."""
    return str(_read_json(shard.parent / PLAN, "span-index plan (prepare.json)")["token_dtype"])


def resolve_builder(builder: str, dtype: str) -> str:
    """The suffix-array builder a shard of token type ``dtype`` gets: ``auto`` is
    infini-gram's indexer for u8 and u16 (faster: benchmarks/span_index.py) and copyprobe's
    (:mod:`~copyprobe.spans.sarray`) for u32, which the indexer cannot build below 32 GiB a
    process, and for every type where infini-gram is not installed (the same bytes);
    ``engine`` and ``copyprobe`` are taken as given."""
    if builder not in BUILDERS:
        raise SpanIndexError(f"unknown suffix-array builder {builder!r}; known: "
                             f"{', '.join(BUILDERS)}")
    if builder == "auto":
        return "copyprobe" if dtype == "u32" or not engine_installed() else "engine"
    return builder


def build_shard(shard_dir: str | Path, *, cpus: int = 1, mem_gb: int = 2,
                builder: str = "auto") -> dict:
    """Step 2: the suffix array ``table.0`` of one prepared shard, in the token type of the
    plan (``prepare.json`` beside the shard), by ``builder`` (:func:`resolve_builder`:
    infini-gram's indexer, a subprocess, or copyprobe's numpy builder; both write the same
    bytes); writes and returns ``build.json`` (seconds, processes used, builder)."""
    shard = Path(shard_dir).resolve()
    for name in STEP1_FILES:
        if not (shard / name).is_file():
            raise SpanIndexError(f"{shard / name}: missing (run prepare_index first)")
    n_bytes = (shard / "tokenized.0").stat().st_size
    dtype = _shard_dtype(shard)
    width = {"u8": 1, "u16": 2, "u32": 4}[dtype]
    if n_bytes == 0:
        raise SpanIndexError(f"{shard / 'tokenized.0'}: empty shard")
    for stale in ("table.0", SHARD_BUILD):
        (shard / stale).unlink(missing_ok=True)
    mem = max(1, int(mem_gb))
    if resolve_builder(builder, dtype) == "copyprobe":
        t0 = time.perf_counter()
        build_table(shard / "tokenized.0", shard / "table.0", width, mem_gb=mem)
        return _record_build(shard, n_bytes, width, {
            "seconds": round(time.perf_counter() - t0, 3), "cpus": 1, "cpus_asked": int(cpus),
            "mem_gb": mem, "builder": "copyprobe"})
    from copyprobe.extras import require

    require("spans", "infini_gram", needed_for="building a span index with its engine")
    used = sa_cpus(n_bytes, int(cpus), mem, width)
    if dtype == "u32" and mem < U32_GB_PER_CPU * used:
        raise SpanIndexError(
            f"{shard}: a u32 shard (a vocabulary of 65535 ids or more) needs mem_gb >= "
            f"{U32_GB_PER_CPU} per process ({U32_GB_PER_CPU * used} for {used}), got {mem}: "
            "infini-gram 2.6.0's indexer allocates 32 GiB per process for the u32 alphabet; "
            "builder 'copyprobe' (or 'auto') builds it without")
    link_dir = neutral_dir()
    temp = shard.parent / f".sa-temp-{shard.name}"
    try:
        (link_dir / "shard").symlink_to(shard, target_is_directory=True)
        (link_dir / "nothing").mkdir()
        cmd = [sys.executable, "-m", "infini_gram.indexing",
               "--data_dir", str(link_dir / "nothing"), "--save_dir", str(link_dir / "shard"),
               "--temp_dir", str(temp), "--token_dtype", dtype, "--shards", "1",
               "--workers", "1", "--worker_id", "0", "--cpus", str(used), "--mem", str(mem),
               "--ulimit", str(_nofile_limit())]
        t0 = time.perf_counter()
        lines = []
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", cwd=link_dir) as proc:
            for line in proc.stdout:  # its steps, logged as they come (a long build's progress)
                lines.append(line)
                if "Step" in line:
                    log.info("%s: infini-gram's indexer: %s", shard.name, line.strip())
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(link_dir, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)
    out = "".join(lines)
    tail = " | ".join(out.strip().splitlines()[-6:])
    if proc.returncode != 0 or "Something went wrong" in out:
        raise SpanIndexError(f"{shard}: infini-gram's indexer failed (exit status "
                             f"{proc.returncode}): {tail}")
    if "Step 1 (tokenize): Skipped" not in out:
        raise SpanIndexError(f"{shard}: infini-gram's indexer did not skip its own "
                             f"tokenizer (the step-1 files were not seen): {tail}")
    return _record_build(shard, n_bytes, width, {
        "seconds": round(seconds, 3), "cpus": used, "cpus_asked": int(cpus), "mem_gb": mem,
        "builder": "engine"})


def _record_build(shard: Path, n_bytes: int, width: int, info: dict) -> dict:
    """Check ``table.0``'s size and write ``build.json`` (``info`` and the shard's figures)."""
    table = shard / "table.0"
    want = ptr_size(n_bytes) * n_bytes // width
    if not table.is_file() or table.stat().st_size != want:
        got = table.stat().st_size if table.is_file() else "no file"
        raise SpanIndexError(f"{table}: the {info['builder']} builder wrote {got} bytes, "
                             f"expected {want} ({n_bytes // width} suffixes of "
                             f"{ptr_size(n_bytes)} bytes)")
    info = {**info, "bytes": n_bytes, "ptr_size": ptr_size(n_bytes),
            "token_dtype": {1: "u8", 2: "u16", 4: "u32"}[width],
            "infini_gram_version": infini_gram_version()}
    _atomic_json(shard / SHARD_BUILD, info)
    return info


def finalize_index(out_dir: str | Path, *, checksums: bool = True) -> dict:
    """Step 3: check every shard of the plan, record its files' checksums (``checksums``:
    each file's sha256 and the CRC-32 of each of its blocks, which opening compares) and
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
            names = [n for n in SHARD_FILES if (folder / n).is_file()]
            sums = dict(zip(names, file_sums([folder / n for n in names], BLOCK_BYTES),
                            strict=True))
            entry["sha256"] = {n: sha for n, (sha, _) in sums.items() if n != SHARD_BUILD}
            entry[ALGORITHM] = {n: blocks for n, (_, blocks) in sums.items()}
        shards.append(entry)
    manifest = {**plan, "shards": shards, "infini_gram_version": infini_gram_version()}
    if checksums:
        manifest["checksums"] = {"algorithm": ALGORITHM, "block_bytes": BLOCK_BYTES}
    tmp = out / f".{MANIFEST}.tmp"
    _atomic_json(tmp, manifest)
    try:  # validate before publishing: index.json appears only for an index that opens
        SpanIndex.open(out, manifest_path=tmp, verify="sizes").close()  # sums just taken
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
                mem_gb: int = 2, tokenizer: str | Path | SpanTokenizer | None = None,
                builder: str = "auto") -> dict:
    """Build the span index of ``corpora`` in ``out_dir`` (all three steps, shards one after
    the other) and return its manifest. The build is written in a folder beside ``out_dir``
    and swapped in whole once it opens (:func:`publish`): a reader of ``out_dir`` sees the old
    index or the new one, never a mix, and an interrupted build leaves the old one. When
    ``out_dir`` already holds an index of the same documents (same digest), unit and shard
    count that opens, nothing is rebuilt: the manifest is returned with ``"reused": True``.
    ``tokenizer``: the unit ``tokens``'s tokenizer file (the digest covers its sha256).
    ``builder``: the suffix arrays' (:func:`resolve_builder`)."""
    codec = _check_args(unit, shards, tokenizer)
    resolve_builder(builder, codec.dtype)  # an unknown builder fails before any work
    if not isinstance(cpus, int) or cpus < 1 or not isinstance(mem_gb, int) or mem_gb < 1:
        raise SpanIndexError(f"cpus and mem_gb must be positive integers, got {cpus!r} and "
                             f"{mem_gb!r}")
    out = Path(out_dir).resolve()
    _check_out(out)
    work = _work_dir(out)
    try:
        with _Staged(corpora, work, codec) as staged:
            old = _unchanged(out, unit, shards, staged.digest)
            if old is not None:
                try:
                    SpanIndex.open(out, unit=unit, tokenizer=codec.tokenizer).close()
                    return {**old, "reused": True}
                except SpanIndexError as exc:
                    log.warning("%s: the index of these documents does not open (%s): "
                                "rebuilding it", out, exc)
            plan = staged.write(work, shards)
        progress = Progress(len(plan["shards"]), "index build: suffix arrays (shards)")
        for k, s in enumerate(plan["shards"]):
            log.info("index build: the suffix array of shard %d of %d (%.1f MB)", k + 1,
                     len(plan["shards"]), s["bytes"] / 1e6)
            build_shard(work / s["dir"], cpus=cpus, mem_gb=mem_gb, builder=builder)
            progress.update()
        progress.close()
        log.info("index build: checksums and validation (%.1f MB of files)",
                 sum(f.stat().st_size for f in work.rglob("*") if f.is_file()) / 1e6)
        manifest = finalize_index(work)
        publish(work, out)
    finally:  # the build's folder, or after the swap the old index
        shutil.rmtree(work, ignore_errors=True)
    return {**manifest, "reused": False}


#: what an index folder holds (anything else in ``out_dir`` makes build_index refuse it:
#: the build replaces the whole folder)
_INDEX_NAMES = (MANIFEST, PLAN, f".{MANIFEST}.tmp", ".staging.bin")


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise SpanIndexError(f"{out}: not a folder (the span index is a folder)")
    if not out.is_dir():
        return
    for p in sorted(out.iterdir()):
        if not (p.name in _INDEX_NAMES or p.name.startswith(("shard-", ".sa-temp-"))):
            raise SpanIndexError(f"{out}: holds {p.name}, which is not part of a span index; "
                                 "a build replaces the whole folder: give an empty or new "
                                 "folder")


def _work_dir(out: Path) -> Path:
    """A new folder beside ``out`` for its build, ``.NAME.build-PID-XXXX`` (the folders of
    builds whose process is gone, interrupted, are removed first)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{out.name}.build-"
    for d in out.parent.glob(f"{glob.escape(prefix)}*"):
        pid = d.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
    while True:
        work = out.parent / f"{prefix}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            work.mkdir()  # the umask's mode, as the index folder's own (mkdtemp's is 0700)
            return work
        except FileExistsError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


#: renameat2's flag that swaps two paths (Linux 3.15+, glibc 2.28+)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``);
    False where the C library or the file system has no such call."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                   ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def publish(new: Path, out: Path) -> None:
    """Make the finished index folder ``new`` the folder ``out`` (same file system); the
    old index is then at ``new`` (the caller removes it). A reader opening ``out`` sees one
    or the other whole: ``renameat2(RENAME_EXCHANGE)`` swaps them in one step; where it is
    missing (not Linux, some file systems) ``out`` is moved aside and ``new`` renamed to it,
    and a reader opening it between the two renames finds no index (never a mixed one)."""
    if not out.exists():
        os.rename(new, out)
        return
    if _exchange(new, out):
        return
    log.warning("%s: no atomic swap of folders here (renameat2 RENAME_EXCHANGE): the index "
                "is replaced by two renames, between which it is missing", out)
    aside = new.with_name(new.name + "-old")
    os.rename(out, aside)
    try:
        os.rename(new, out)
    except BaseException:
        os.rename(aside, out)
        raise
    os.rename(aside, new)
