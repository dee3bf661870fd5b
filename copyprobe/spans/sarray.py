"""copyprobe's own suffix-array builder: infini-gram's ``table.0`` for a shard the engine's
indexer cannot build here (a ``u32`` shard: its ``make-part`` allocates 2^32 x 8 bytes, a
counting table over the whole id space, whatever the shard's size; 32 GiB a process).

Reference: docs/span-index.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from copyprobe.spans.layout import ptr_size
from copyprobe.spans.types import SpanIndexError

__all__ = ["BYTES_PER_TOKEN", "build_table", "suffix_array"]

#: the memory budget per token of a build (see the module docstring; measured peak below it)
BYTES_PER_TOKEN = 48
#: big-endian dtypes of the token widths: numeric order of a token = memcmp order of its bytes
_BIG_ENDIAN = {1: ">u1", 2: ">u2", 4: ">u4"}
#: tokens packed per initial key (``(2^(8w) + 1)^p < 2^63``)
_PACK = {1: 7, 2: 3, 4: 1}
#: entries written per chunk of table.0
_CHUNK = 1 << 22


def _first_keys(tokens: np.ndarray, width: int) -> np.ndarray:
    """Each position's first ``p`` tokens as one uint64 (0 past the end)."""
    n = len(tokens)
    base = np.uint64((1 << (8 * width)) + 1)
    key = np.zeros(n, dtype=np.uint64)
    for j in range(_PACK[width]):
        key *= base
        if j < n:
            key[:n - j] += tokens[j:].astype(np.uint64) + np.uint64(1)
    return key


def _heads(sorted_keys: np.ndarray) -> np.ndarray:
    """True where a run of equal keys starts."""
    head = np.empty(len(sorted_keys), dtype=bool)
    head[:1] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=head[1:])
    return head


def _run_starts(head: np.ndarray) -> np.ndarray:
    """For each element, the index of the start of its run."""
    return np.maximum.accumulate(np.where(head, np.arange(len(head)), 0))


def suffix_array(tokens: np.ndarray, width: int) -> np.ndarray:
    """The token positions of ``tokens``'s suffixes in memcmp order of their little-endian
    bytes. ``tokens``: the ids read big-endian (:data:`_BIG_ENDIAN`), so that comparing values
    compares the stored bytes."""
    n = len(tokens)
    if n >= (1 << 32) - 1:
        raise SpanIndexError(f"a shard of {n} tokens is too long for copyprobe's suffix-array "
                             "builder (at most 2^32 - 2): use more shards")
    idx_t = np.int32 if n < (1 << 31) else np.int64
    key = _first_keys(tokens, width)
    sa = np.argsort(key).astype(idx_t)
    key = key[sa]
    head = _heads(key)
    del key
    rank = np.empty(n, dtype=idx_t)
    rank[sa] = _run_starts(head)
    h = _PACK[width]
    n1 = np.uint64(n + 1)
    while True:
        # slots in groups of more than one suffix: a head followed by a non-head, and after
        sizes_gt1 = ~head  # a non-head slot is in a group of 2 or more, as is its group's head
        sizes_gt1[:-1] |= ~head[1:]
        slots = np.flatnonzero(sizes_gt1)
        del sizes_gt1
        if len(slots) == 0:
            return sa
        pos = sa[slots].astype(np.int64)
        key = rank[pos].astype(np.uint64)
        key *= n1
        nxt = pos + h
        inside = nxt < n
        second = np.zeros(len(pos), dtype=np.uint64)
        second[inside] = rank[nxt[inside]].astype(np.uint64) + np.uint64(1)
        del nxt, inside
        key += second
        del second
        order = np.argsort(key)
        pos = pos[order]
        key = key[order]
        del order
        sa[slots] = pos
        new_head = _heads(key)
        # a group's first slot stays a head; the pair's changes split the rest
        head[slots] = new_head
        rank[pos] = slots[_run_starts(new_head)]
        del pos, key, new_head, slots
        h *= 2


def build_table(tokenized: str | Path, table: str | Path, width: int, *,
                mem_gb: int) -> int:
    """Write ``table`` (the engine's ``table.0``) for the shard file ``tokenized``
    (``tokenized.0``) of tokens ``width`` bytes wide; returns the number of suffixes. Refuses
    (naming the need) a shard whose build would exceed ``mem_gb``."""
    tokenized, table = Path(tokenized), Path(table)
    n_bytes = tokenized.stat().st_size
    if n_bytes % width:
        raise SpanIndexError(f"{tokenized}: {n_bytes} bytes is not a whole number of "
                             f"{width}-byte tokens")
    n = n_bytes // width
    need = BYTES_PER_TOKEN * n
    if need > mem_gb * 1024**3:
        raise SpanIndexError(
            f"{tokenized}: copyprobe's suffix-array builder needs about {BYTES_PER_TOKEN} "
            f"bytes a token ({need / 1024**3:.1f} GiB for {n} tokens), more than mem_gb "
            f"{mem_gb}: raise mem_gb or use more shards")
    tokens = np.memmap(tokenized, dtype=_BIG_ENDIAN[width], mode="r") if n else np.empty(0)
    sa = suffix_array(np.asarray(tokens), width)
    del tokens
    ps = ptr_size(n_bytes)
    tmp = table.with_name(f".{table.name}.tmp")
    try:
        with open(tmp, "wb") as out:
            for a in range(0, n, _CHUNK):
                ptrs = sa[a:a + _CHUNK].astype("<u8")
                ptrs *= np.uint64(width)
                out.write(ptrs.view(np.uint8).reshape(-1, 8)[:, :ps].tobytes())
        tmp.replace(table)
    except BaseException:  # no stray file in the shard folder (opening would refuse it)
        tmp.unlink(missing_ok=True)
        raise
    return n
