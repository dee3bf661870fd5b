"""Opening a built span index: validation, the infini-gram engine, and the memory maps.

:meth:`SpanIndex.open` takes a snapshot: every file is opened relative to one descriptor of
the folder, checked (the manifest; each shard's files, exactly
:data:`~copyprobe.spans.layout.SHARD_FILES`, their sizes, the leading separator, the rows of
``docs.parquet``; the CRC-32 of every block against the manifest's, :data:`VERIFY`) and
memory-mapped, the document table read, the engine given the descriptors of the files it
maps (``/proc/self/fd``); nothing is read by path afterwards. infini-gram 2.6.0 is compiled
without its C++ asserts, so a bad or vanishing file would otherwise be read out of bounds. A
probe query through the maps (and the engine) ends the checks. Details and costs:
docs/span-index.md (Layout, Verification).
"""

from __future__ import annotations

import bisect
import json
import logging
import mmap
import os
import shutil
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from copyprobe.spans import checksums, layout
from copyprobe.spans.encoding import BYTE_UNITS, NORMALIZER_VERSION, check_unit
from copyprobe.spans.find import find_spans
from copyprobe.spans.tokenizer import SpanTokenizer, load_tokenizer, token_dtype
from copyprobe.spans.types import DocHit, Span, SpanIndexError, Tokens
from copyprobe.spans.units import ByteCodec, make_codec

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_VERIFY", "SEARCHES", "VERIFY", "SpanIndex", "index_digest",
           "parse_manifest", "read_manifest"]

#: how :meth:`SpanIndex.segments` finds a query's ranks
SEARCHES = ("mmap", "engine")
#: how much :meth:`SpanIndex.open` checks of the files' contents: their sizes only, the
#: CRC-32 of every block, or also every file's sha256 (docs/span-index.md#verification)
VERIFY = ("sizes", "blocks", "full")
DEFAULT_VERIFY = "blocks"
#: times :meth:`SpanIndex.open` tries a folder that a rebuild replaces while it is opened
OPEN_ATTEMPTS = 5
#: the shard files the searches read (the engine opens its own)
_SEARCHED = ("tokenized.0", "table.0", "offset.0", layout.DOCS)
#: the shard files infini-gram's engine opens
_ENGINE_FILES = tuple(n for n in layout.SHARD_FILES
                      if any(k in n for k in layout.ENGINE_KEYWORDS))
#: where Linux names a process's open descriptors (opening one reopens its very file)
_FD_DIR = Path("/proc/self/fd")


class _Keys:
    """Rank ``r`` -> the first ``width`` bytes of the suffix at rank ``r``: a sequence
    :mod:`bisect` searches (its loop runs in C, one ``__getitem__`` per step)."""

    __slots__ = ("_tok", "_table", "_ptrs", "_ps", "_n", "_width")

    def __init__(self, shard: _Shard, width: int):
        self._tok, self._table, self._ps = shard.raw_tok, shard.raw_table, shard.ptr_size
        self._ptrs = shard.ptr_view  # the table as integers, where the width has a format
        self._n, self._width = shard.n_ranks, width

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, r: int) -> bytes:
        if self._ptrs is not None:
            p = self._ptrs[r]
        else:
            ps = self._ps
            p = int.from_bytes(self._table[r * ps:r * ps + ps], "little")
        return self._tok[p:p + self._width]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo], a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Shard:
    """One shard: its files memory-mapped (as bytes for the searches, as numpy arrays for
    the bulk reads) and its document table."""

    def __init__(self, files: _ShardFiles, ptr_size: int, first_doc_ix: int, n_docs: int,
                 width: int = 1):
        self.path, self.ptr_size, self.width = files.path, ptr_size, width
        self.first_doc_ix, self.n_docs = first_doc_ix, n_docs
        self.raw_tok = files.maps["tokenized.0"]
        self.raw_table = files.maps["table.0"]
        #: uint8 views of tokenized.0 and table.0, the documents' offsets (uint64)
        self.tok = np.frombuffer(self.raw_tok, dtype=np.uint8)
        self.table = np.frombuffer(self.raw_table, dtype=np.uint8)
        self.offsets = np.frombuffer(files.maps["offset.0"], dtype=np.uint64)
        self.n_bytes = len(self.raw_tok)
        #: suffixes in the table: one per token (a byte in u8, 2 or 4 bytes in u16 / u32)
        self.n_ranks = self.n_bytes // width
        #: table.0 read as unsigned integers where its width is a C type's (1, 2, 4 or 8
        #: bytes; little-endian, as the engine requires), else None (3, 5, 6, 7 bytes)
        fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}.get(ptr_size)
        self.ptr_view = (memoryview(self.raw_table).cast(fmt)
                         if fmt and memoryview(b"").cast(fmt).itemsize == ptr_size else None)
        #: the document table (source, doc_id, title, url), read when the index was opened
        self.docs = files.docs

    def ptrs(self, lo: int, hi: int) -> np.ndarray:
        """The pointers (byte offsets in ``tok``) of ranks ``lo .. hi-1``."""
        raw = self.table[lo * self.ptr_size:hi * self.ptr_size].reshape(-1, self.ptr_size)
        out = np.zeros(hi - lo, dtype=np.uint64)
        for k in range(self.ptr_size):
            out |= raw[:, k].astype(np.uint64) << np.uint64(8 * k)
        return out

    def search(self, query: bytes) -> tuple[int, int]:
        """``(lo, hi)``: the ranks of the suffixes starting with ``query`` (a binary search
        of the memory maps, no engine call; ``lo == hi`` on a miss, the insertion rank)."""
        keys = _Keys(self, len(query))
        lo = bisect.bisect_left(keys, query)
        if lo == self.n_ranks or keys[lo] != query:
            return lo, lo
        return lo, bisect.bisect_right(keys, query, lo)

    def lcp(self, rank: int, query: bytes) -> int:
        """Bytes ``query`` shares with the suffix at ``rank`` (0 outside the shard)."""
        if not 0 <= rank < self.n_ranks:
            return 0
        return _common_prefix(_Keys(self, len(query))[rank], query)


def _map(fd: int) -> mmap.mmap | bytes:
    if os.fstat(fd).st_size == 0:  # mmap refuses an empty file
        return b""
    return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)


class _ShardFiles:
    """One shard's files, opened relative to the index folder's descriptor and memory-mapped
    (a map keeps its file's inode: a rebuild swapped in or a deleted folder changes nothing
    for an open index). With ``engine``, the descriptors of the files infini-gram reads
    (:data:`_ENGINE_FILES`) stay open until :meth:`close`, so that the engine maps these very
    files (:meth:`engine_links`) even if a rebuild deletes them meanwhile."""

    def __init__(self, root_fd: int, root: Path, s: dict, mpath: Path, width: int,
                 mapped: tuple[str, ...], engine: bool = False):
        self.path = root / s["dir"]
        try:
            self.fd = os.open(s["dir"], os.O_RDONLY | os.O_DIRECTORY, dir_fd=root_fd)
        except (FileNotFoundError, NotADirectoryError):
            raise SpanIndexError(f"{self.path}: missing shard folder (listed in {mpath})"
                                 ) from None
        self.maps: dict[str, mmap.mmap | bytes] = {}
        #: the open descriptors of the engine's files (closed by :meth:`close`)
        self.fds: dict[str, int] = {}
        try:
            _check_names(self.path, os.listdir(self.fd))
            held = _ENGINE_FILES if engine else ()
            for name in dict.fromkeys((*held, *mapped)):
                fd = os.open(name, os.O_RDONLY, dir_fd=self.fd)
                if name in held:
                    self.fds[name] = fd
                try:
                    if name in mapped:
                        self.maps[name] = _map(fd)
                finally:
                    if name not in held:
                        os.close(fd)
            _check_sizes(self.path, self.fd, s, width, self.maps)
        except BaseException:
            self.close()
            raise
        self.docs = None

    def read(self, width: int, n_docs: int) -> None:
        """Check the leading separator and read the document table (after the checksums:
        a damaged file is named by its block first)."""
        if self.maps["tokenized.0"][:width] != layout.DOC_SEP * width:
            raise SpanIndexError(f"{self.path / 'tokenized.0'}: does not start with a "
                                 f"document separator ({'FF' * width})")
        self.docs = _doc_table(self.path / layout.DOCS, self.maps[layout.DOCS], n_docs)

    def engine_links(self) -> dict[str, Path]:
        """What the engine opens, by file name: each held descriptor under ``/proc/self/fd``
        (that very inode, even once unlinked), else the file's path in the shard folder
        (where ``/proc`` is missing: :meth:`SpanIndex.open` then checks the folder after)."""
        if self.fds and _FD_DIR.is_dir():
            return {name: _FD_DIR / str(fd) for name, fd in self.fds.items()}
        return {name: self.path / name for name in _ENGINE_FILES}

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _doc_table(path: Path, data, n_docs: int):
    """The columns a hit needs of ``docs.parquet`` (read from its map), checked to hold one
    row per document."""
    try:
        f = pq.ParquetFile(pa.BufferReader(pa.py_buffer(data)))
        rows = f.metadata.num_rows
    except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
        raise SpanIndexError(f"{path}: unreadable ({exc})") from None
    if rows != n_docs:
        raise SpanIndexError(f"{path}: {rows} rows, expected {n_docs}")
    try:
        return f.read(columns=["source", "doc_id", "title", "url"])
    except Exception as exc:
        raise SpanIndexError(f"{path}: unreadable ({exc})") from None


def _open_engine(shards: Sequence[dict[str, Path]], codec: Any) -> Any:
    """infini-gram's engine over the shards' files (``name -> target`` per shard, given to
    it as symlinks in a neutral folder: it finds its files by listing a folder)."""
    from copyprobe.extras import require

    require("spans", "infini_gram", needed_for="a span index searched by its engine")
    from infini_gram.engine import InfiniGramEngine

    link_dir, folders = _links(shards)
    try:
        return InfiniGramEngine(index_dir=folders, token_dtype=codec.dtype,
                                vocab_size=codec.vocab_size, eos_token_id=codec.eos_id,
                                version=4, load_to_ram=False, ds_prefetch_depth=0,
                                sa_prefetch_depth=0, od_prefetch_depth=0)
    finally:  # the engine has mapped its files and closed them: links are not needed
        shutil.rmtree(link_dir, ignore_errors=True)


def _links(shards: Sequence[dict[str, Path]]) -> tuple[Path, list[str]]:
    """A neutral temporary folder holding one folder per shard, of one symlink per file."""
    root = layout.neutral_dir()
    out = []
    for k, files in enumerate(shards):
        folder = root / f"s{k:05d}"
        folder.mkdir()
        for name, target in files.items():
            (folder / name).symlink_to(target)
        out.append(str(folder))
    return root, out


class SpanIndex:
    """A built span index (:mod:`~copyprobe.spans.build`), a
    :class:`~copyprobe.spans.types.SpanLookup`: :meth:`count`, :meth:`occurrences` and
    :meth:`find_spans` give the same answers as :class:`~copyprobe.spans.reference.MemoryIndex`
    over the same documents. Open it with :meth:`open`; :meth:`close` releases the maps
    (also as a context manager). Queries may run from several threads (nothing is shared
    but the read-only maps; the ``mmap`` search runs under the GIL, the engine's releases
    it)."""

    def __init__(self, path: Path, manifest: dict, engine, shards: list[_Shard],
                 search: str = "mmap", codec: ByteCodec | None = None):
        if search not in SEARCHES:
            raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
        self._search = search
        self.path = path
        self.manifest = manifest
        self._engine = engine
        self._shards = shards
        self._unit = manifest["unit"]
        #: how the unit is stored and searched (:mod:`~copyprobe.spans.units`)
        self.codec = codec or make_codec(self._unit)
        #: what :meth:`open` verified: ``verify`` (the mode), ``checked`` (crc32 blocks,
        #: sha256), ``files``, ``bytes``, ``seconds``
        self.verified: dict[str, Any] = {"verify": "sizes", "checked": []}

    # -- opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, *, unit: str | None = None,
             verify: str | bool = DEFAULT_VERIFY, search: str = "mmap",
             manifest_path: str | Path | None = None,
             tokenizer: str | Path | SpanTokenizer | None = None,
             check_engine: bool | None = None) -> SpanIndex:
        """Validate and open the index in ``path`` (a folder with ``index.json``): a snapshot.

        Every file it reads is opened here, relative to one descriptor of the folder, and
        memory-mapped; nothing is read by path afterwards, so a rebuild swapped into the
        folder (or its deletion) changes nothing for the open index, and a folder replaced
        while it is being opened is opened again (never two builds mixed).
        ``unit``: the unit the caller tokenizes in (the configured one); an index built in
        another is an error. ``verify`` (:data:`VERIFY`): ``"blocks"`` (the default) compares
        the CRC-32 of every block of every file with the manifest's, ``"full"`` also every
        file's sha256 (True is ``"full"``), ``"sizes"`` (False) checks the sizes only.
        ``search``: how :meth:`segments` searches (``mmap`` or ``engine``; the same answers).
        ``manifest_path``: read the manifest from there instead (the build's last step
        validates before it publishes ``index.json``). ``tokenizer`` (unit ``tokens``): the
        configured tokenizer file; one whose identity differs from the manifest's is an
        error naming both (without it, the file the manifest names is loaded and checked).
        ``check_engine``: also open infini-gram's engine and check that it reads the files
        as the memory maps do (None: when infini-gram is installed; ``search="engine"``
        always opens it). The mmap search itself needs only numpy, so an index built
        elsewhere is searched without the spans extra."""
        if search not in SEARCHES:
            raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
        mode = _verify_mode(verify)
        use_engine = search == "engine" or (layout.engine_installed() if check_engine is None
                                            else check_engine)
        root = Path(path).resolve()
        for attempt in range(1, OPEN_ATTEMPTS + 1):
            try:
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            except (FileNotFoundError, NotADirectoryError):
                if attempt < OPEN_ATTEMPTS and manifest_path is None:
                    time.sleep(0.05 * attempt)  # between the two renames of a fallback swap
                    continue
                raise SpanIndexError(f"{root / layout.MANIFEST}: no span-index manifest (not "
                                     "built, or not finished)") from None
            try:
                return cls._open_at(root, fd, unit=unit, verify=mode, search=search,
                                    manifest_path=manifest_path, tokenizer=tokenizer,
                                    use_engine=use_engine)
            except (SpanIndexError, OSError):
                if attempt < OPEN_ATTEMPTS and _replaced(root, fd):
                    log.info("%s: replaced while being opened (a rebuild); opening it again",
                             root)
                    continue
                raise
            finally:
                os.close(fd)
        raise AssertionError("unreachable")  # pragma: no cover

    @classmethod
    def _open_at(cls, root: Path, fd: int, *, unit: str | None, verify: str, search: str,
                 manifest_path: str | Path | None,
                 tokenizer: str | Path | SpanTokenizer | None, use_engine: bool) -> SpanIndex:
        """:meth:`open` of the folder ``root`` whose descriptor is ``fd``."""
        if manifest_path:
            mpath = Path(manifest_path)
            manifest = read_manifest(mpath, unit)
        else:
            mpath = root / layout.MANIFEST
            manifest = parse_manifest(_read_at(fd, layout.MANIFEST, mpath), mpath, unit)
        codec = _codec(manifest, mpath, tokenizer)
        mapped = layout.SHARD_FILES if verify != "sizes" else _SEARCHED
        with ExitStack() as stack:
            files = []
            for s in manifest["shards"]:
                f = _ShardFiles(fd, root, s, mpath, codec.width, mapped, use_engine)
                stack.callback(f.close)
                files.append(f)
            t0 = time.perf_counter()
            checked = _verify(files, manifest, mpath, verify)
            verified = {**checked, "seconds": round(time.perf_counter() - t0, 6)}
            for f, s in zip(files, manifest["shards"], strict=True):
                f.read(codec.width, int(s["n_docs"]))
            engine = None
            if use_engine:
                links = [f.engine_links() for f in files]
                engine = _open_engine(links, codec)
                by_path = any(t.parent != _FD_DIR for lk in links for t in lk.values())
                if by_path and _replaced(root, fd):
                    raise SpanIndexError(f"{root}: replaced while its engine was opened")
        shards = [_Shard(f, layout.ptr_size(s["bytes"]), s["first_doc_ix"], s["n_docs"],
                         codec.width)
                  for f, s in zip(files, manifest["shards"], strict=True)]
        index = cls(root, manifest, engine, shards, search, codec)
        index.verified = verified
        by_maps = index._check_maps()
        if engine is not None:
            index._check_engine(mpath, by_maps)
        return index

    def _probe(self) -> bytes:
        first = self._shards[0]
        return self.codec.probe(first.raw_tok[first.width:min(first.n_bytes, 4096)])

    def _check_maps(self) -> int:
        """The first document's first words, found by the memory maps (at least once)."""
        by_maps = sum(hi - lo for lo, hi in (sh.search(self._probe()) for sh in self._shards))
        if by_maps < 1:
            raise SpanIndexError(f"{self._shards[0].path}: the first document's first words "
                                 "are found 0 times by the byte maps (a damaged table.0?)")
        return by_maps

    def _check_engine(self, mpath: Path, by_maps: int) -> None:
        eng = self._engine.engine
        if eng.get_num_shards() != len(self._shards):
            raise SpanIndexError(f"{self.path}: the engine opened {eng.get_num_shards()} "
                                 f"shards, the manifest {mpath} lists {len(self._shards)}")
        for s, sh in enumerate(self._shards):
            if eng.get_tok_cnt(s=s) != sh.n_ranks:
                raise SpanIndexError(f"{sh.path}: the engine reads {eng.get_tok_cnt(s=s)} "
                                     f"tokens, the manifest's bytes make {sh.n_ranks}")
        total = self._engine.get_total_doc_cnt()
        if total != self.n_docs:
            raise SpanIndexError(f"{self.path}: the engine counts {total} documents, the "
                                 f"manifest {mpath} {self.n_docs}")
        by_engine = self._engine.count(input_ids=self.codec.ids(self._probe()))
        if "error" in by_engine:
            raise SpanIndexError(f"{self.path}: infini-gram: {by_engine['error']}")
        if by_engine["count"] != by_maps:
            raise SpanIndexError(f"{self._shards[0].path}: the first document's first words "
                                 f"are found {by_maps} times by the byte maps, "
                                 f"{by_engine['count']} by the engine (a damaged table.0?)")

    # -- SpanLookup ---------------------------------------------------------------------
    @property
    def unit(self) -> str:
        return self._unit

    @property
    def n_docs(self) -> int:
        return int(self.manifest["n_docs"])

    @property
    def digest(self) -> str:
        return str(self.manifest["digest"])

    @property
    def shards(self) -> list[_Shard]:
        self._require_open()
        return self._shards

    def tokenize(self, text: str) -> Tokens:
        return self.codec.tokenize(text)

    def segments(self, query: bytes) -> list[tuple[int, int]]:
        """``(lo, hi)`` rank range of ``query`` in each shard; on a miss ``lo == hi`` is the
        rank it would be inserted at. ``search="mmap"``: a binary search of the memory maps
        per shard; ``"engine"``: the engine's raw ``find`` (``query`` is bytes, so every id
        is below 256 and the Python validator's per-byte loop is skipped)."""
        self._require_open()
        if self._search == "mmap":
            return [sh.search(query) for sh in self._shards]
        res = self._engine.engine.find(input_ids=self.codec.ids(query))
        segs = [(int(lo), int(hi)) for lo, hi in res.segment_by_shard]
        if len(segs) != len(self._shards):
            raise SpanIndexError(f"{self.path}: the engine answered for {len(segs)} shards, "
                                 f"not {len(self._shards)}")
        return segs

    def _count_bytes(self, query: bytes) -> int:
        return sum(hi - lo for lo, hi in self.segments(query))

    def count(self, tokens: Sequence[str] | Sequence[int]) -> int:
        """Occurrences of a unit sequence (words; token ids in the unit ``tokens``)."""
        q = self.codec.query(tokens)
        if not q:
            return 0
        if self._search == "engine":
            self._require_open()
            res = self._engine.count(input_ids=self.codec.ids(q))
            if "error" in res:
                raise SpanIndexError(f"{self.path}: infini-gram: {res['error']}")
            return int(res["count"])
        return self._count_bytes(q)

    def occurrences(self, tokens: Sequence[str] | Sequence[int], limit: int | None = None
                    ) -> list[tuple[int, int]]:
        """``(doc_ix, word_start)`` of every occurrence of the unit sequence (at most
        ``limit``, read shard by shard in rank order), sorted in index order."""
        q = self.codec.query(tokens)
        if not q:
            return []
        hits = self.hits(self.segments(q), limit)
        return [(int(d), self.word_position(int(d), int(p))) for d, p in zip(*hits,
                                                                             strict=True)]

    def hits(self, segments: list[tuple[int, int]], limit: int | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
        """``(doc_ix, global pointer)`` arrays of the occurrences in ``segments`` (at most
        ``limit``, taken shard by shard in rank order), sorted by document then position.
        A global pointer is ``(shard << 48) | byte offset in the shard``: unique, and
        ordered as the documents are."""
        docs, ptrs = [], []
        left = limit
        for s, (lo, hi) in enumerate(segments):
            if hi <= lo:
                continue
            if left is not None:
                hi = min(hi, lo + left)
                left -= hi - lo
            sh = self._shards[s]
            p = np.sort(sh.ptrs(lo, hi))
            local = np.searchsorted(sh.offsets, p, side="right").astype(np.int64) - 1
            docs.append(local + sh.first_doc_ix)
            ptrs.append((np.uint64(s) << np.uint64(48)) | p)
            if left is not None and left <= 0:
                break
        if not docs:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        return np.concatenate(docs), np.concatenate(ptrs)

    def _shard_of(self, doc_ix: int) -> _Shard:
        for sh in self._shards:
            if doc_ix < sh.first_doc_ix + sh.n_docs:
                return sh
        raise SpanIndexError(f"{self.path}: no document {doc_ix}")

    def word_position(self, doc_ix: int, gptr: int) -> int:
        """The word index, in document ``doc_ix``, of the occurrence at global pointer
        ``gptr`` (see :meth:`hits`)."""
        sh = self._shards[gptr >> 48]
        p = gptr & ((1 << 48) - 1)
        start = int(sh.offsets[doc_ix - sh.first_doc_ix]) + sh.width
        if self.codec.width > 1:
            return (p - start) // sh.width
        return self.codec.position(sh.raw_tok[start:p])

    def doc_hit(self, doc_ix: int, word_start: int) -> DocHit:
        sh = self._shard_of(doc_ix)
        row = sh.docs.slice(doc_ix - sh.first_doc_ix, 1).to_pylist()[0]
        return DocHit(doc_ix, row["source"], row["doc_id"], row["title"] or "",
                      row["url"] or "", word_start)

    def find_spans(self, text: str, *, min_words: int, max_docs: int = 5,
                   scan_cap: int = 10_000) -> list[Span]:
        return find_spans(self, text, min_words=min_words, max_docs=max_docs,
                          scan_cap=scan_cap)

    # -- lifetime -----------------------------------------------------------------------
    def _require_open(self) -> None:
        if not self._shards:
            raise SpanIndexError(f"{self.path}: the span index is closed")

    def close(self) -> None:
        """Release the engine and the memory maps (a closed index refuses queries)."""
        self._engine = None
        self._shards = []

    def __enter__(self) -> SpanIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"SpanIndex({str(self.path)!r}, unit={self._unit!r}, n_docs={self.n_docs}, "
                f"shards={len(self.manifest['shards'])})")


def index_digest(path: str | Path) -> str:
    """The content digest of the built index in folder ``path`` (its documents, their
    metadata and the unit), from its manifest alone: what a cache key of results derived from
    the index takes (an error naming the file where there is no valid manifest)."""
    return str(read_manifest(Path(path) / layout.MANIFEST, None)["digest"])


def read_manifest(path: Path, unit: str | None = None) -> dict:
    """The manifest at ``path``, checked (format, version, unit, normaliser, dtype); the
    shards' files are checked by :meth:`SpanIndex.open`."""
    if not path.is_file():
        raise SpanIndexError(f"{path}: no span-index manifest (not built, or not finished)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpanIndexError(f"{path}: unreadable span-index manifest ({exc})") from None
    return parse_manifest(raw, path, unit)


def parse_manifest(raw: bytes, path: Path, unit: str | None = None) -> dict:
    """The manifest ``raw`` (read from ``path``), checked as :func:`read_manifest` does."""
    try:
        m = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise SpanIndexError(f"{path}: unreadable span-index manifest ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != layout.FORMAT:
        raise SpanIndexError(f"{path}: not a copyprobe span-index manifest")
    if m.get("format_version") != layout.FORMAT_VERSION:
        raise SpanIndexError(f"{path}: span-index format version {m.get('format_version')!r}; "
                             f"this copyprobe reads {layout.FORMAT_VERSION} (rebuild it)")
    for key in ("unit", "normalizer_version", "token_dtype", "digest", "n_docs", "shards"):
        if key not in m:
            raise SpanIndexError(f"{path}: the manifest has no {key!r}")
    check_unit(m["unit"])
    if unit is not None and check_unit(unit) != m["unit"]:
        raise SpanIndexError(f"{path}: the index was built in unit {m['unit']!r}, not the "
                             f"configured {unit!r} (rebuild it or configure its unit)")
    if m["unit"] not in BYTE_UNITS and not isinstance(m.get("tokenizer"), dict):
        raise SpanIndexError(f"{path}: an index in unit {m['unit']!r} records no tokenizer")
    if m["normalizer_version"] != NORMALIZER_VERSION:
        raise SpanIndexError(f"{path}: the index was built with normaliser version "
                             f"{m['normalizer_version']}, this copyprobe tokenizes with "
                             f"{NORMALIZER_VERSION} (rebuild it)")
    want = (layout.TOKEN_DTYPE if m["unit"] in BYTE_UNITS
            else token_dtype(int((m.get("tokenizer") or {}).get("vocab_size", 0))))
    if m["token_dtype"] != want:
        raise SpanIndexError(f"{path}: token_dtype {m['token_dtype']!r}, expected {want!r} "
                             f"for unit {m['unit']!r}")
    if not m["shards"]:
        raise SpanIndexError(f"{path}: the manifest lists no shard")
    return m


def _codec(manifest: dict, mpath: Path, tokenizer: str | Path | SpanTokenizer | None
           ) -> ByteCodec:
    """The manifest's codec; in unit ``tokens`` with the given tokenizer (else the file the
    manifest names), whose identity must be the manifest's."""
    if manifest["unit"] in BYTE_UNITS:
        if tokenizer is not None:
            raise SpanIndexError(f"{mpath}: a tokenizer was given, but the index is in unit "
                                 f"{manifest['unit']!r} (byte level)")
        return make_codec(manifest["unit"])
    rec = manifest["tokenizer"]
    if tokenizer is None:
        tok = load_tokenizer(rec["path"])
    else:
        tok = tokenizer if isinstance(tokenizer, SpanTokenizer) else load_tokenizer(tokenizer)
    mine = tok.identity()
    if any(mine[k] != rec.get(k) for k in ("kind", "sha256", "vocab_size")):
        raise SpanIndexError(
            f"{mpath}: the index was built with the tokenizer {rec.get('path')} ({rec.get('kind')}"
            f", sha256 {str(rec.get('sha256'))[:12]}, vocabulary {rec.get('vocab_size')}), not "
            f"with {tok.path} ({mine['kind']}, sha256 {mine['sha256'][:12]}, vocabulary "
            f"{mine['vocab_size']}); rebuild the index or configure its tokenizer")
    return make_codec("tokens", tok)


def _read_at(fd: int, name: str, path: Path) -> bytes:
    try:
        f = os.open(name, os.O_RDONLY, dir_fd=fd)
    except FileNotFoundError:
        raise SpanIndexError(f"{path}: no span-index manifest (not built, or not finished)"
                             ) from None
    with os.fdopen(f, "rb") as fh:
        return fh.read()


def _replaced(root: Path, fd: int) -> bool:
    """Whether the path ``root`` no longer names the folder open as ``fd`` (a rebuild swapped
    in, the folder deleted)."""
    try:
        now = os.stat(root)
    except OSError:
        return True
    mine = os.fstat(fd)
    return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)


def _verify_mode(verify: str | bool) -> str:
    if verify is True or verify is False:
        return "full" if verify else "sizes"
    if verify not in VERIFY:
        raise ValueError(f"verify must be one of {', '.join(VERIFY)}, got {verify!r}")
    return verify


def _check_names(folder: Path, names: list[str]) -> None:
    for name in layout.SHARD_FILES:
        if name not in names:
            raise SpanIndexError(f"{folder / name}: missing")
    extra = sorted(set(names) - set(layout.SHARD_FILES))
    if extra:
        kinds = [e for e in extra if any(k in e for k in layout.ENGINE_KEYWORDS)]
        why = (" (infini-gram would read it as one of its own files)" if kinds else "")
        raise SpanIndexError(f"{folder / extra[0]}: unexpected file in a span-index shard"
                             f"{why}; a shard holds exactly {', '.join(layout.SHARD_FILES)}")


def _check_sizes(folder: Path, fd: int, s: dict, width: int, maps: dict) -> None:
    """The files' sizes against the manifest's (a mapped file's: its map's)."""
    n_bytes, n_docs = int(s["bytes"]), int(s["n_docs"])
    sizes = {"tokenized.0": n_bytes, "table.0": layout.ptr_size(n_bytes) * n_bytes // width,
             "offset.0": 8 * n_docs, "metaoff.0": 8 * n_docs}
    for name, want in sizes.items():
        got = len(maps[name]) if name in maps else os.stat(name, dir_fd=fd).st_size
        if got != want:
            raise SpanIndexError(f"{folder / name}: {got} bytes, expected {want} (truncated "
                                 "or from another build)")


def _verify(files: list[_ShardFiles], manifest: dict, mpath: Path, verify: str) -> dict:
    """Compare the shards' mapped files with the manifest's checksums (``verify``: "blocks"
    or "full"); what was checked (kept as :attr:`SpanIndex.verified`). The maps only the
    check needs are dropped."""
    done = {"verify": verify, "files": 0, "bytes": 0, "checked": []}
    if verify == "sizes":
        return done
    spec = manifest.get("checksums") or {}
    blocks = {str(f.path / n): s for f, sh in zip(files, manifest["shards"], strict=True)
              for n, s in (sh.get(checksums.ALGORITHM) or {}).items()}
    sha = {str(f.path / n): s for f, sh in zip(files, manifest["shards"], strict=True)
           for n, s in (sh.get("sha256") or {}).items()}
    maps = {str(f.path / n): m for f in files for n, m in f.maps.items()}
    if blocks and spec.get("algorithm") == checksums.ALGORITHM:
        checksums.check_blocks(maps, blocks, int(spec["block_bytes"]))
        done["checked"].append(f"{checksums.ALGORITHM} blocks")
    if sha and (verify == "full" or not done["checked"]):
        if not done["checked"]:
            log.info("%s: built before per-block checksums: every file's sha256 is checked "
                     "instead (slower; rebuild the index for a faster open)", mpath)
        checksums.check_sha256({k: maps[k] for k in sha}, sha)
        done["checked"].append("sha256")
    if not done["checked"]:
        raise SpanIndexError(f"{mpath}: no checksums recorded (built without them): its files "
                             "cannot be verified; rebuild the index (or open it with "
                             "verify='sizes')")
    done.update(files=len(maps), bytes=sum(len(m) for m in maps.values()))
    for f in files:  # keep only what the searches read
        f.maps = {n: f.maps[n] for n in _SEARCHED}
    return done
