"""Documents from a local folder of ``.txt`` / ``.md`` files described by a metadata table.

Reference: docs/sources.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from copyprobe.sources.base import Document, Source, SourceError
from copyprobe.sources.materials.common import int_param, seeded_sample
from copyprobe.sources.materials.rights import parse_year

REQUIRED_COLUMNS = ("file", "title", "published")
OPTIONAL_COLUMNS = ("url", "licence", "category", "holder", "year", "notice")
SUFFIXES = {".txt", ".md"}
_PARAMS = {"path", "metadata", "on_error", "limit", "sample_seed"}


class _RowProblem(Exception):
    """A problem with one listed document (raised or skipped according to ``on_error``)."""


def _resolve(value: Any, key: str) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise SourceError(f"source local: param {key!r} = {value!r} must be a non-empty path")
    p = Path(value.strip()).expanduser()
    return p if p.is_absolute() else Path.cwd() / p


def _shown(path: Path) -> str:
    """A path as the corpus records it: relative to the current directory when under it (so
    the same workflow run in another folder records the same), else absolute."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return str(value).strip()


def parse_published(value: Any) -> dt.date:
    """An ISO date from a table cell (string, date, datetime or pandas Timestamp)."""
    if isinstance(value, pd.Timestamp):
        if pd.isna(value):
            raise _RowProblem("empty published date")
        return value.date()
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    s = _cell(value)
    if not s:
        raise _RowProblem("empty published date")
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        pass
    try:  # full ISO timestamps ("2023-05-01T12:00:00Z")
        return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).date()
    except ValueError:
        raise _RowProblem(f"unparseable published date {s!r} (expected YYYY-MM-DD)") from None


class LocalFolder(Source):
    """A folder of text files plus a metadata table."""

    name = "local"
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if params.get("path") is None:
            raise SourceError("source local: param 'path' (the document folder) is required")
        self.folder = _resolve(params["path"], "path")
        meta = params.get("metadata")
        self.metadata = self.folder / "metadata.csv" if meta is None else _resolve(meta, "metadata")
        on_error = params.get("on_error", "raise")
        if on_error not in ("raise", "skip"):
            raise SourceError(
                f"source local: param 'on_error' = {on_error!r} must be 'raise' or 'skip'"
            )
        self.on_error: str = on_error
        self.limit = int_param("local", params, "limit", None, 1, allow_none=True)
        self.sample_seed = int_param("local", params, "sample_seed", 0, -(2**63))

    @classmethod
    def max_documents(cls, params: Mapping[str, Any]) -> int | None:
        """The rows of the metadata table (each names one document), at most ``limit``; None
        when the table cannot be read yet."""
        try:
            src = cls(**params)
            rows = len(src.read_metadata())
        except SourceError:
            return None
        return rows if src.limit is None else min(rows, src.limit)

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The metadata table and every document file in the folder and its subfolders."""
        src = cls(**params)
        return [str(src.metadata), *(str(src.folder / rel) for rel in src.document_files())]

    def document_files(self) -> list[str]:
        """Paths (POSIX, relative to the folder) of the ``.txt``/``.md`` files in the folder and
        its subfolders, hidden ones excepted; empty when the folder does not exist."""
        if not self.folder.is_dir():
            return []
        out = []
        for p in sorted(self.folder.rglob("*")):
            if not p.is_file() or p.suffix.lower() not in SUFFIXES or p == self.metadata:
                continue
            rel_parts = p.relative_to(self.folder).parts
            if any(part.startswith(".") for part in rel_parts):
                continue
            out.append(str(PurePosixPath(*rel_parts)))
        return out

    # ------------------------------------------------------------------------------------

    def read_metadata(self) -> pd.DataFrame:
        """The metadata table as strings (dates may stay dates in Parquet)."""
        if not self.folder.is_dir():
            raise SourceError(f"source local: param 'path': {self.folder} is not a folder")
        if not self.metadata.is_file():
            raise SourceError(f"source local: metadata table {self.metadata} does not exist")
        try:
            if self.metadata.suffix.lower() in {".parquet", ".pq"}:
                table = pd.read_parquet(self.metadata)
            else:
                table = pd.read_csv(self.metadata, dtype=str, keep_default_na=False,
                                    encoding="utf-8-sig")
        except Exception as exc:  # pandas/pyarrow raise many kinds
            raise SourceError(
                f"source local: cannot read metadata table {self.metadata}: {exc}"
            ) from exc
        table.columns = [str(c).strip() for c in table.columns]
        for col in REQUIRED_COLUMNS:
            if col not in table.columns:
                raise SourceError(
                    f"source local: metadata table {self.metadata} lacks required column "
                    f"{col!r} (has {list(table.columns)})"
                )
        return table

    def _problem(self, row: int, file: str, why: str) -> None:
        where = f"row {row}" + (f" (line {row + 1})" if self.metadata.suffix.lower() == ".csv" else "")
        if self.on_error == "raise":
            raise SourceError(
                f"source local: metadata table {self.metadata} {where}, file {file!r}: {why}"
            )
        self.skip(file, f"{why} (metadata {where})")

    def _read_document(self, rel: str) -> tuple[Path, bytes, str]:
        if not rel:
            raise _RowProblem("empty 'file' cell")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts:
            raise _RowProblem("file path must be relative to the folder, without '..'")
        if pure.suffix.lower() not in SUFFIXES:
            raise _RowProblem(f"not a .txt or .md file (suffix {pure.suffix!r})")
        p = self.folder.joinpath(*pure.parts)
        if not p.is_file():
            raise _RowProblem(f"listed in metadata but missing: {p}")
        data = p.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _RowProblem(f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        if not text:
            raise _RowProblem("empty or whitespace-only file")
        return p, data, text

    def documents(self) -> Iterable[Document]:
        table = self.read_metadata()
        listed: set[str] = set()
        ids: dict[str, str] = {}
        basis = f"metadata table {self.metadata.name}"
        has = {c: c in table.columns for c in OPTIONAL_COLUMNS}
        keep = set(seeded_sample(range(1, len(table) + 1), self.limit, self.sample_seed))
        for i, rec in enumerate(table.to_dict("records"), start=1):
            rel = _cell(rec.get("file"))
            norm = str(PurePosixPath(rel.replace("\\", "/"))) if rel else ""
            if i not in keep:  # listed, so not "unlisted" below, but not in the sample
                listed.add(norm)
                continue
            try:
                if norm in listed:
                    raise _RowProblem("listed twice in metadata")
                listed.add(norm)
                path, data, text = self._read_document(rel)
                published = parse_published(rec.get("published"))
                try:
                    year = parse_year(rec.get("year")) if has["year"] else None
                except ValueError as exc:
                    raise _RowProblem(str(exc)) from None
                doc_id = "local:" + str(PurePosixPath(norm).with_suffix(""))
                if doc_id in ids:
                    raise _RowProblem(f"doc_id {doc_id!r} also produced by {ids[doc_id]!r}")
                ids[doc_id] = norm
            except _RowProblem as exc:
                self._problem(i, rel, str(exc))
                continue
            title = _cell(rec.get("title")) or PurePosixPath(norm).stem
            yield Document(
                doc_id=doc_id,
                title=title,
                text=text,
                published=published,
                date_basis=basis,
                url=_cell(rec.get("url")) if has["url"] else "",
                licence=_cell(rec.get("licence")) if has["licence"] else "",
                category=_cell(rec.get("category")) if has["category"] else "",
                rights_holder=_cell(rec.get("holder")) if has["holder"] else "",
                rights_year=year,
                rights_notice=_cell(rec.get("notice")) if has["notice"] else "",
                provenance={
                    "file": norm,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "bytes": len(data),
                    "metadata": _shown(self.metadata),
                    "metadata_row": i,
                },
            )

        unlisted = [rel for rel in self.document_files()
                    if rel not in listed and rel.lower() != "readme.md"]
        if unlisted and self.on_error == "raise":
            shown = ", ".join(repr(r) for r in unlisted[:10])
            more = f" and {len(unlisted) - 10} more" if len(unlisted) > 10 else ""
            raise SourceError(
                f"source local: {len(unlisted)} document file(s) in {self.folder} have no row in "
                f"metadata table {self.metadata}: {shown}{more}; add a row (file, title, "
                "published) for each, move them out of the folder, or set on_error: skip"
            )
        for rel in unlisted:
            self.skip(rel, "not listed in metadata")
