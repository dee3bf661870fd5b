"""Checksums of a span index's files: a CRC-32 per block of every file, recorded by the build
in the manifest and compared when an index is opened (a changed byte in any file is found
before the first answer), and each file's sha256 (the full check of ``copyprobe index
verify``). Blocks are hashed by a thread pool: zlib releases the GIL. Choice and cost
measured in docs/span-index.md#verification (benchmarks/span_index.py ``--verify-only``).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from copyprobe.spans.types import SpanIndexError

__all__ = ["ALGORITHM", "BLOCK_BYTES", "block_sums", "check_blocks", "check_sha256",
           "file_sums"]

#: the per-block checksum (the manifest's ``checksums.algorithm``)
ALGORITHM = "crc32"
#: bytes per checksummed block (the manifest's ``checksums.block_bytes``)
BLOCK_BYTES = 1 << 22


def _blocks(data, block: int) -> Iterator[tuple[int, memoryview]]:
    view = memoryview(data)
    for k in range(max(1, -(-len(view) // block))):
        yield k, view[k * block:(k + 1) * block]


def _pool(jobs: int | None) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=jobs or min(8, os.cpu_count() or 1))


def block_sums(data, block: int = BLOCK_BYTES) -> list[int]:
    """The CRC-32 of each ``block``-byte block of ``data`` (a buffer: bytes, a memory map);
    an empty buffer has one block, the empty one."""
    return [zlib.crc32(v) for _, v in _blocks(data, block)]


def file_sums(paths: list[Path], block: int = BLOCK_BYTES, *, jobs: int | None = None
              ) -> list[tuple[str, list[int]]]:
    """The sha256 and the block CRC-32s of each file of ``paths`` (read once each)."""
    def one(path: Path) -> tuple[str, list[int]]:
        h, sums = hashlib.sha256(), []
        with open(path, "rb") as fh:
            while (chunk := fh.read(block)) or not sums:  # an empty file: one empty block
                h.update(chunk)
                sums.append(zlib.crc32(chunk))
        return h.hexdigest(), sums

    with _pool(jobs) as pool:
        return list(pool.map(one, paths))


def check_blocks(files: Mapping[str, object], recorded: Mapping[str, list[int]],
                 block: int, *, jobs: int | None = None) -> None:
    """Compare the CRC-32 of every block of ``files`` (label -> buffer) with ``recorded``
    (label -> the build's sums). Raises :class:`SpanIndexError` naming each file and block
    that differs (the first 5), or a file the manifest records no sums for."""
    tasks, sizes = [], {}
    for label, data in files.items():
        want = recorded.get(label)
        if want is None:
            raise SpanIndexError(f"{label}: no checksums recorded for it in the manifest")
        sizes[label] = len(data)
        n = max(1, -(-len(data) // block))
        if len(want) != n:
            raise SpanIndexError(f"{label}: {n} blocks of {block} bytes, the manifest records "
                                 f"{len(want)} (from another build)")
        tasks += [(label, k, v, want[k]) for k, v in _blocks(data, block)]
    with _pool(jobs) as pool:
        sums = list(pool.map(lambda t: zlib.crc32(t[2]), tasks))
    bad = [(label, k) for (label, k, _, want), got in zip(tasks, sums, strict=True)
           if got != want]
    for t in tasks:
        t[2].release()
    if bad:
        label, k = bad[0]
        more = "; ".join(f"{lb} block {kk}" for lb, kk in bad[1:5])
        more += f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        end = min((k + 1) * block, sizes[label]) - 1
        raise SpanIndexError(
            f"{label}: block {k} (bytes {k * block}-{end}) differs from the manifest's "
            f"{ALGORITHM}: the file changed after the build (or comes from another)"
            + (f"; also {more}" if more else ""))


def sha256(data) -> str:
    h = hashlib.sha256()
    for _, v in _blocks(data, 1 << 24):
        h.update(v)
        v.release()
    return h.hexdigest()


def check_sha256(files: Mapping[str, object], recorded: Mapping[str, str], *,
                 jobs: int | None = None) -> None:
    """Compare the sha256 of every file (label -> buffer) with ``recorded``; raises
    :class:`SpanIndexError` naming the first that differs or has none recorded."""
    missing = [label for label in files if label not in recorded]
    if missing:
        raise SpanIndexError(f"{missing[0]}: no sha256 recorded for it in the manifest")
    with _pool(jobs) as pool:
        got = dict(zip(files, pool.map(sha256, files.values()), strict=True))
    for label, digest in got.items():
        if digest != recorded[label]:
            raise SpanIndexError(f"{label}: sha256 differs from the manifest (the file changed "
                                 "after the build, or comes from another)")
