"""Opening a built span index: validation, the infini-gram engine, and the memory maps.

:meth:`SpanIndex.open` checks everything itself before the engine sees a file: infini-gram
2.6.0 is compiled without its C++ asserts, so a missing or truncated file would otherwise be
read out of bounds or answer 0 for every query (never a silent empty result here). Checked:
the manifest (``index.json``: format, unit, normaliser version, token type), every shard's
files (exactly :data:`~copyprobe.spans.layout.SHARD_FILES`; a stray file such as
``offsets.parquet`` would be taken for one of the engine's by its name), their sizes against
the manifest (``table.0`` = ptr_size x ``tokenized.0``, ``offset.0`` = ``metaoff.0`` = 8 x
n_docs = 8 x rows of ``docs.parquet``), the first byte (the 0xFF separator), with ``verify``
every file's sha256; then the engine's document and byte counts and a probe count of the first
document's first words.

The engine is given neutral symlinks to the shard folders (its file kinds are substrings of
the *whole* path: an index under ``/data/tables/`` would be misread), with prefetching off
(``0/0/0``: no madvise tree per binary-search step). The shards' ``table.0``, ``tokenized.0``
and ``offset.0`` are also memory-mapped with numpy: rank -> pointer -> document, and the
longest common prefixes the span search needs (:mod:`~copyprobe.spans.find`).
"""

from __future__ import annotations

import bisect
import json
import mmap
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from copyprobe.spans import layout
from copyprobe.spans.find import find_spans
from copyprobe.spans.encoding import NORMALIZER_VERSION, check_unit, encode_query, tokenize
from copyprobe.spans.types import DocHit, Span, SpanIndexError, Tokens

__all__ = ["SEARCHES", "SpanIndex"]

#: how :meth:`SpanIndex.segments` finds a query's ranks
SEARCHES = ("mmap", "engine")


class _Keys:
    """Rank ``r`` -> the first ``width`` bytes of the suffix at rank ``r``: a sequence
    :mod:`bisect` searches (its loop runs in C, one ``__getitem__`` per step)."""

    __slots__ = ("_tok", "_table", "_ps", "_n", "_width")

    def __init__(self, shard: _Shard, width: int):
        self._tok, self._table, self._ps = shard.raw_tok, shard.raw_table, shard.ptr_size
        self._n, self._width = shard.n_bytes, width

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, r: int) -> bytes:
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

    def __init__(self, path: Path, ptr_size: int, first_doc_ix: int, n_docs: int):
        self.path, self.ptr_size = path, ptr_size
        self.first_doc_ix, self.n_docs = first_doc_ix, n_docs
        self.raw_tok = _map(path / "tokenized.0")
        self.raw_table = _map(path / "table.0")
        #: uint8 views of tokenized.0 and table.0, the documents' offsets (uint64)
        self.tok = np.frombuffer(self.raw_tok, dtype=np.uint8)
        self.table = np.frombuffer(self.raw_table, dtype=np.uint8)
        self.offsets = np.frombuffer(_map(path / "offset.0"), dtype=np.uint64)
        self.n_bytes = len(self.raw_tok)
        self._docs = None

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
        if lo == self.n_bytes or keys[lo] != query:
            return lo, lo
        return lo, bisect.bisect_right(keys, query, lo)

    def lcp(self, rank: int, query: bytes) -> int:
        """Bytes ``query`` shares with the suffix at ``rank`` (0 outside the shard)."""
        if not 0 <= rank < self.n_bytes:
            return 0
        return _common_prefix(_Keys(self, len(query))[rank], query)

    def doc_table(self):
        if self._docs is None:
            self._docs = pq.read_table(self.path / layout.DOCS,
                                       columns=["source", "doc_id", "title", "url"])
        return self._docs


def _map(path: Path) -> mmap.mmap:
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _links(paths: list[Path]) -> tuple[Path, list[str]]:
    """A neutral temporary folder holding one symlink per shard folder."""
    folder = layout.neutral_dir()
    out = []
    for k, p in enumerate(paths):
        link = folder / f"s{k:05d}"
        link.symlink_to(p, target_is_directory=True)
        out.append(str(link))
    return folder, out


class SpanIndex:
    """A built span index (:mod:`~copyprobe.spans.build`), a
    :class:`~copyprobe.spans.types.SpanLookup`: :meth:`count`, :meth:`occurrences` and
    :meth:`find_spans` give the same answers as :class:`~copyprobe.spans.reference.MemoryIndex`
    over the same documents. Open it with :meth:`open`; :meth:`close` releases the maps
    (also as a context manager). Queries may run from several threads (the engine releases
    the GIL)."""

    def __init__(self, path: Path, manifest: dict, engine, shards: list[_Shard],
                 search: str = "mmap"):
        if search not in SEARCHES:
            raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
        self._search = search
        self.path = path
        self.manifest = manifest
        self._engine = engine
        self._shards = shards
        self._unit = manifest["unit"]

    # -- opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, *, unit: str | None = None, verify: bool = False,
             search: str = "mmap", manifest_path: str | Path | None = None) -> SpanIndex:
        """Validate and open the index in ``path`` (a folder with ``index.json``).

        ``unit``: the unit the caller tokenizes in (the configured one); an index built in
        another is an error. ``verify``: also compare every file's sha256 with the manifest.
        ``search``: how :meth:`segments` searches (``mmap`` or ``engine``; the same answers).
        ``manifest_path``: read the manifest from there instead (the build's last step
        validates before it publishes ``index.json``)."""
        from copyprobe.extras import require

        require("spans", "infini_gram", needed_for="a span index")
        from infini_gram.engine import InfiniGramEngine

        root = Path(path).resolve()
        mpath = Path(manifest_path) if manifest_path else root / layout.MANIFEST
        manifest = _read_manifest(mpath, unit)
        folders = [_check_shard(root, s, mpath, verify) for s in manifest["shards"]]
        link_dir, links = _links(folders)
        try:
            engine = InfiniGramEngine(index_dir=links, token_dtype="u8", vocab_size=255,
                                      eos_token_id=254, version=4, load_to_ram=False,
                                      ds_prefetch_depth=0, sa_prefetch_depth=0,
                                      od_prefetch_depth=0)
        finally:  # the engine has mapped its files and closed them: links are not needed
            shutil.rmtree(link_dir, ignore_errors=True)
        shards = [_Shard(folder, layout.ptr_size(s["bytes"]), s["first_doc_ix"], s["n_docs"])
                  for folder, s in zip(folders, manifest["shards"], strict=True)]
        index = cls(root, manifest, engine, shards, search)
        index._check_engine(mpath)
        return index

    def _check_engine(self, mpath: Path) -> None:
        eng = self._engine.engine
        if eng.get_num_shards() != len(self._shards):
            raise SpanIndexError(f"{self.path}: the engine opened {eng.get_num_shards()} "
                                 f"shards, the manifest {mpath} lists {len(self._shards)}")
        for s, sh in enumerate(self._shards):
            if eng.get_tok_cnt(s=s) != sh.n_bytes:
                raise SpanIndexError(f"{sh.path}: the engine reads {eng.get_tok_cnt(s=s)} "
                                     f"bytes, the manifest says {sh.n_bytes}")
        total = self._engine.get_total_doc_cnt()
        if total != self.n_docs:
            raise SpanIndexError(f"{self.path}: the engine counts {total} documents, the "
                                 f"manifest {mpath} {self.n_docs}")
        first = self._shards[0]
        head = first.tok[1:min(first.n_bytes, 4096)].tobytes().split(b"\xff")[0]
        probe = b" ".join(head.split(b" ")[:3]) + b" "  # " w0 w1 "
        if self._count_bytes(probe) < 1:
            raise SpanIndexError(f"{first.path}: the first document's first words are not "
                                 "found in the index (a damaged table.0?)")

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
        return tokenize(text, self._unit)

    def segments(self, query: bytes) -> list[tuple[int, int]]:
        """``(lo, hi)`` rank range of ``query`` in each shard; on a miss ``lo == hi`` is the
        rank it would be inserted at. ``search="mmap"``: a binary search of the memory maps
        per shard; ``"engine"``: the engine's raw ``find`` (``query`` is bytes, so every id
        is below 256 and the Python validator's per-byte loop is skipped)."""
        self._require_open()
        if self._search == "mmap":
            return [sh.search(query) for sh in self._shards]
        res = self._engine.engine.find(input_ids=list(query))
        segs = [(int(lo), int(hi)) for lo, hi in res.segment_by_shard]
        if len(segs) != len(self._shards):
            raise SpanIndexError(f"{self.path}: the engine answered for {len(segs)} shards, "
                                 f"not {len(self._shards)}")
        return segs

    def _count_bytes(self, query: bytes) -> int:
        return sum(hi - lo for lo, hi in self.segments(query))

    def count(self, tokens: Sequence[str]) -> int:
        q = encode_query(tokens)
        if not q:
            return 0
        self._require_open()
        res = self._engine.count(input_ids=list(q))
        if "error" in res:
            raise SpanIndexError(f"{self.path}: infini-gram: {res['error']}")
        return int(res["count"])

    def occurrences(self, tokens: Sequence[str], limit: int | None = None
                    ) -> list[tuple[int, int]]:
        """``(doc_ix, word_start)`` of every occurrence of the word sequence (at most
        ``limit``, read shard by shard in rank order), sorted in index order."""
        q = encode_query(tokens)
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
        start = int(sh.offsets[doc_ix - sh.first_doc_ix]) + 1
        return sh.tok[start:p].tobytes().count(b" ")

    def doc_hit(self, doc_ix: int, word_start: int) -> DocHit:
        sh = self._shard_of(doc_ix)
        row = sh.doc_table().slice(doc_ix - sh.first_doc_ix, 1).to_pylist()[0]
        return DocHit(doc_ix, row["source"], row["doc_id"], row["title"] or "",
                      row["url"] or "", word_start)

    def find_spans(self, text: str, *, min_words: int, max_docs: int = 5,
                   scan_cap: int = 10_000) -> list[Span]:
        return find_spans(self, text, min_words=min_words, max_docs=max_docs,
                          scan_cap=scan_cap)

    # -- lifetime -----------------------------------------------------------------------
    def _require_open(self) -> None:
        if self._engine is None:
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


def _read_manifest(path: Path, unit: str | None) -> dict:
    if not path.is_file():
        raise SpanIndexError(f"{path}: no span-index manifest (not built, or not finished)")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
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
    if m["normalizer_version"] != NORMALIZER_VERSION:
        raise SpanIndexError(f"{path}: the index was built with normaliser version "
                             f"{m['normalizer_version']}, this copyprobe tokenizes with "
                             f"{NORMALIZER_VERSION} (rebuild it)")
    if m["token_dtype"] != layout.TOKEN_DTYPE:
        raise SpanIndexError(f"{path}: token_dtype {m['token_dtype']!r}, only "
                             f"{layout.TOKEN_DTYPE!r} is read")
    if not m["shards"]:
        raise SpanIndexError(f"{path}: the manifest lists no shard")
    return m


def _check_shard(root: Path, s: dict, mpath: Path, verify: bool) -> Path:
    folder = root / s["dir"]
    if not folder.is_dir():
        raise SpanIndexError(f"{folder}: missing shard folder (listed in {mpath})")
    names = {p.name for p in folder.iterdir()}
    for name in layout.SHARD_FILES:
        if name not in names:
            raise SpanIndexError(f"{folder / name}: missing")
    extra = sorted(names - set(layout.SHARD_FILES))
    if extra:
        kinds = [e for e in extra if any(k in e for k in layout.ENGINE_KEYWORDS)]
        why = (" (infini-gram would read it as one of its own files)" if kinds else "")
        raise SpanIndexError(f"{folder / extra[0]}: unexpected file in a span-index shard"
                             f"{why}; a shard holds exactly {', '.join(layout.SHARD_FILES)}")
    n_bytes, n_docs = int(s["bytes"]), int(s["n_docs"])
    sizes = {"tokenized.0": n_bytes, "table.0": layout.ptr_size(n_bytes) * n_bytes,
             "offset.0": 8 * n_docs, "metaoff.0": 8 * n_docs}
    for name, want in sizes.items():
        got = (folder / name).stat().st_size
        if got != want:
            raise SpanIndexError(f"{folder / name}: {got} bytes, expected {want} (truncated "
                                 "or from another build)")
    with open(folder / "tokenized.0", "rb") as fh:
        if fh.read(1) != layout.DOC_SEP:
            raise SpanIndexError(f"{folder / 'tokenized.0'}: does not start with a document "
                                 "separator (0xFF)")
    try:
        rows = pq.ParquetFile(folder / layout.DOCS).metadata.num_rows
    except Exception as exc:  # not Parquet
        raise SpanIndexError(f"{folder / layout.DOCS}: unreadable ({exc})") from None
    if rows != n_docs:
        raise SpanIndexError(f"{folder / layout.DOCS}: {rows} rows, expected {n_docs}")
    if verify:
        sums = s.get("sha256")
        if not sums:
            raise SpanIndexError(f"{mpath}: no checksums recorded for {s['dir']} "
                                 "(built without them); cannot verify")
        for name, want in sums.items():
            if layout.sha256(folder / name) != want:
                raise SpanIndexError(f"{folder / name}: sha256 differs from the manifest")
    return folder
