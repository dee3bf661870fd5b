"""Reading corpora for the span index: every document of a set of files as a
:class:`~copyprobe.spans.types.CorpusDoc`, streamed.

Reference: docs/span-index.md.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from copyprobe.spans.types import CorpusDoc, SpanIndexError

__all__ = ["corpus_files", "iter_corpus", "iter_located", "location"]

#: the columns (keys) of a document that are read; only ``text`` is required
COLUMNS = ("doc_id", "source", "title", "url", "text")
TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz")
#: rows per record batch; batches are read row group by row group, because pyarrow 26's
#: ``iter_batches`` over a whole file keeps memory growing with the file (measured on a 1 GB
#: corpus of 39 row groups: 1,032 MB of anonymous memory at the end, 240 MB row group by row
#: group)
_BATCH_ROWS = 4096


def _kind(path: Path) -> str:
    if path.is_dir():
        return "folder"
    if not path.exists():
        raise SpanIndexError(f"{path}: no such corpus file or folder")
    name = path.name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    raise SpanIndexError(f"{path}: not a corpus (a .parquet, .jsonl, .jsonl.gz file or a "
                         "folder of .txt/.md files)")


def corpus_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files the corpus ``paths`` stand for (a folder's text files, sorted): what a
    build depends on."""
    out: list[Path] = []
    for p in map(Path, paths):
        if _kind(p) == "folder":
            out += sorted(f for f in p.rglob("*")
                          if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES)
        else:
            out.append(p)
    return out


def _stem(path: Path) -> str:
    """The file's name without its corpus suffix (``a.b.jsonl.gz`` -> ``a.b``)."""
    name = path.name
    for suffix in (".parquet", *JSONL_SUFFIXES):
        if name.lower().endswith(suffix):
            return name[:-len(suffix)]
    return path.stem


def _str(value: object, default: str) -> str:
    return default if value is None else str(value)


def _doc(path: Path, where: str, row: dict, number: int) -> CorpusDoc:
    text = row.get("text")
    if not isinstance(text, str):
        kind = "no" if text is None else f"a {type(text).__name__}, not a string, as"
        raise SpanIndexError(f"{path}: {where} {number} has {kind} text")
    return CorpusDoc(source=_str(row.get("source"), _stem(path)),
                     doc_id=_str(row.get("doc_id"), str(number)), text=text,
                     title=_str(row.get("title"), ""), url=_str(row.get("url"), ""))


def _parquet(path: Path, read: Callable[[int], None]) -> Iterator[tuple[int, CorpusDoc]]:
    try:
        f = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
        raise SpanIndexError(f"{path}: not a readable Parquet file ({exc})") from None
    names = f.schema_arrow.names
    if "text" not in names:
        raise SpanIndexError(f"{path}: no 'text' column (columns: {', '.join(names)})")
    row, size = 0, path.stat().st_size
    columns = [c for c in COLUMNS if c in names]
    for group in range(f.num_row_groups):  # one row group at a time: see _BATCH_ROWS
        batches = f.iter_batches(batch_size=_BATCH_ROWS, row_groups=[group], columns=columns)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except Exception as exc:  # a damaged page: pyarrow raises several kinds
                raise SpanIndexError(f"{path}: row group {group} (from row {row}) is "
                                     f"unreadable ({exc})") from None
            for rec in batch.to_pylist():
                yield row, _doc(path, "row", rec, row)
                row += 1
        read(size * f.metadata.row_group(group).num_rows // max(1, f.metadata.num_rows))


def _lines(path: Path, read: Callable[[int], None]) -> Iterator[tuple[int, bytes]]:
    """``(0-based number, raw line)`` of a JSONL file, gzip-compressed or not; a truncated
    or damaged gzip stream is an error naming the last line read."""
    with open(path, "rb") as raw:
        gz = path.name.lower().endswith(".gz")
        fh = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        n, at = -1, 0
        while True:
            try:
                line = fh.readline()
            except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
                raise SpanIndexError(f"{path}: truncated or damaged gzip data after line "
                                     f"{n + 1} ({exc})") from None
            if not line:
                read(raw.tell() - at)
                return
            n += 1
            if raw.tell() - at >= 1 << 20:
                read(raw.tell() - at)
                at = raw.tell()
            yield n, line


def _jsonl(path: Path, read: Callable[[int], None]) -> Iterator[tuple[int, CorpusDoc]]:
    for n, raw in _lines(path, read):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpanIndexError(f"{path}: line {n + 1} is not UTF-8 ({exc.reason} at byte "
                                 f"{exc.start} of the line)") from None
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpanIndexError(f"{path}: line {n + 1} is not JSON ({exc})") from None
        if not isinstance(rec, dict):
            raise SpanIndexError(f"{path}: line {n + 1} is not a JSON object")
        if "text" not in rec:
            raise SpanIndexError(f"{path}: line {n + 1} has no 'text' key")
        yield n, _doc(path, "line", rec, n)


def folder_metadata(path: Path) -> dict[str, tuple[str, str]]:
    """``file -> (title, url)`` from the folder's ``metadata.csv`` (a ``local`` source's
    table), {} without one. A table without a ``file`` or ``title`` column, or a row naming
    no text file of the folder, is an error naming the table and the row."""
    import csv

    table = path / "metadata.csv"
    if not table.is_file():
        return {}
    with table.open(encoding="utf-8-sig", newline="") as fh:
        rows = csv.DictReader(fh)
        missing = [c for c in ("file", "title") if c not in (rows.fieldnames or [])]
        if missing:
            raise SpanIndexError(f"{table}: no {' or '.join(map(repr, missing))} column "
                                 f"(has {rows.fieldnames}): a folder's metadata.csv gives "
                                 "its documents' titles")
        out: dict[str, tuple[str, str]] = {}
        for i, row in enumerate(rows, start=1):
            rel = (row.get("file") or "").strip().replace("\\", "/")
            f = path / rel
            if not rel or not f.is_file() or f.suffix.lower() not in TEXT_SUFFIXES:
                raise SpanIndexError(f"{table} row {i} (line {i + 1}): file {rel!r} is not a "
                                     ".txt or .md file of the folder")
            title = (row.get("title") or "").strip() or f.stem
            out[f.relative_to(path).as_posix()] = (title, (row.get("url") or "").strip())
    return out


def _folder(path: Path, read: Callable[[int], None]) -> Iterator[tuple[int, CorpusDoc]]:
    meta = folder_metadata(path)
    for n, f in enumerate(corpus_files([path])):
        try:
            data = f.read_bytes()
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpanIndexError(f"{f}: not UTF-8 text ({exc})") from None
        read(len(data))
        rel = f.relative_to(path).as_posix()
        title, url = meta.get(rel, (f.stem, ""))
        yield n, CorpusDoc(source=path.resolve().name, doc_id=rel, text=text, title=title,
                           url=url)


def location(path: Path, number: int, doc: CorpusDoc) -> str:
    """Where :func:`iter_located` found ``doc``: ``a.jsonl line 3`` (1-based), ``b.parquet
    row 5`` (0-based, as errors name rows), or a folder's file."""
    kind = _kind(path)
    if kind == "folder":
        return str(path / doc.doc_id)
    return f"{path} {'line' if kind == 'jsonl' else 'row'} {number + (kind == 'jsonl')}"


def _ignore(n: int) -> None:
    pass


_READERS = {"parquet": _parquet, "jsonl": _jsonl, "folder": _folder}


def iter_corpus(paths: Iterable[str | Path]) -> Iterator[CorpusDoc]:
    """Every document of the corpora ``paths``, file by file, in each file's order.

    Raises :class:`SpanIndexError` (naming the file) for a file that is not a corpus, a
    document without text, a ``(source, doc_id)`` already seen, and when the paths hold no
    document at all."""
    for _, _, doc in iter_located(paths):
        yield doc


def iter_located(paths: Iterable[str | Path], read: Callable[[int], None] = _ignore
                 ) -> Iterator[tuple[Path, int, CorpusDoc]]:
    """:func:`iter_corpus` with where each document came from: ``(path, number, doc)``, the
    number being the row (Parquet), the 0-based line (JSONL) or the file's rank (folder).
    ``read`` is called with the bytes of the files read so far (progress), in steps.

    Raises :class:`SpanIndexError` (naming the file and the row or line) for a file that is
    not a corpus, a row group or line that cannot be read or decoded (not UTF-8, a truncated
    gzip stream), a document without text, a ``(source, doc_id)`` already seen, and when
    the paths hold no document at all."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise SpanIndexError("no corpus given")
    seen: dict[tuple[str, str], Path] = {}
    for path in paths:
        for number, doc in _READERS[_kind(path)](path, read):
            key = (doc.source, doc.doc_id)
            if key in seen:
                raise SpanIndexError(f"{path}: document {number} is a duplicate (source "
                                     f"{doc.source!r}, doc_id {doc.doc_id!r}), first seen in "
                                     f"{seen[key]}")
            seen[key] = path
            yield path, number, doc
    if not seen:
        raise SpanIndexError(f"{', '.join(map(str, paths))}: the corpus holds no document")
