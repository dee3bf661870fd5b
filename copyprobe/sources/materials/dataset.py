"""The released copyright-compliance benchmark's materials, and its seed queries.

Reference: docs/materials.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.materials.common import (
    ItemProblem,
    int_param,
    read_text_file,
    readable_title,
    resolve_path,
    seeded_sample,
    str_list_param,
    word_count,
)
from copyprobe.sources.materials.rights import best_notice, find_notices, parse_year, strip_notices

KIND = "copyright_dataset"
CATEGORY_SUFFIX = "_copyright"
NOTICE_COLUMNS = ("file", "holder", "year", "notice")
NOTICE_OPTIONAL = ("published", "url", "licence", "title")
_PARAMS = {"path", "categories", "notices", "strip_notices", "min_words", "limit",
           "sample_seed", "on_error"}


# ------------------------------------------------------------------------------ layout

def layout_root(path: Path, suffix: str) -> Path | None:
    """The folder of the released layout holding ``*<suffix>`` folders (``_copyright`` for the
    texts, ``_copyright_images`` for the images): ``path/dataset`` or ``path``; None if neither."""
    for cand in (path / "dataset", path):
        if cand.is_dir() and any(p.is_dir() and p.name.endswith(suffix) for p in cand.iterdir()):
            return cand
    return None


def dataset_root(path: Path) -> Path:
    """The folder holding the ``*_copyright`` folders: ``path/dataset`` or ``path`` itself."""
    root = layout_root(path, CATEGORY_SUFFIX)
    if root is not None:
        return root
    raise SourceError(f"source {KIND}: {path} holds no <category>{CATEGORY_SUFFIX} folder (nor "
                      f"does {path / 'dataset'}); expected the released layout "
                      f"dataset/{{book,code,lyrics,news}}{CATEGORY_SUFFIX}/*.txt")


def category_folders(root: Path) -> dict[str, Path]:
    """category -> folder, in name order (hidden folders ignored)."""
    return {p.name[: -len(CATEGORY_SUFFIX)]: p for p in sorted(root.iterdir())
            if p.is_dir() and p.name.endswith(CATEGORY_SUFFIX) and not p.name.startswith(".")}


def seeds_file(path: Path) -> Path:
    """Where the seed queries of the dataset at ``path`` are (``.../query/seeds.json``)."""
    if path.is_file():
        return path
    for cand in (path / "query" / "seeds.json", path / "dataset" / "query" / "seeds.json"):
        if cand.is_file():
            return cand
    return path / "query" / "seeds.json"


def load_query_seeds(path: str | Path) -> dict[str, list[str]]:
    """The seed queries per task, ``{task: [query, ...]}``, in file order.

    ``path`` is ``seeds.json`` itself or a dataset folder holding ``query/seeds.json`` (or
    ``dataset/query/seeds.json``). A missing file, bad JSON, a task that is not a non-empty
    string or queries that are not a non-empty list of non-empty strings raise
    :class:`SourceError` naming the file (and the task and position).
    """
    p = seeds_file(Path(path))
    if not p.is_file():
        raise SourceError(f"seed queries: {p} does not exist")
    try:
        data = json.loads(p.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"seed queries: {p} is not valid UTF-8 JSON: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise SourceError(f"seed queries: {p} must be a non-empty JSON object "
                          "{task: [query, ...]}")
    out: dict[str, list[str]] = {}
    for task, queries in data.items():
        if not task.strip():
            raise SourceError(f"seed queries: {p} has an empty task name")
        if not isinstance(queries, list) or not queries:
            raise SourceError(f"seed queries: {p}, task {task!r}: must be a non-empty list of "
                              f"queries, got {type(queries).__name__}")
        for i, q in enumerate(queries):
            if not isinstance(q, str) or not q.strip():
                raise SourceError(f"seed queries: {p}, task {task!r}, query {i}: {q!r} is not "
                                  "a non-empty string")
        out[task] = [q.strip() for q in queries]
    return out


# ----------------------------------------------------------------------------- notices

@dataclass(frozen=True)
class NoticeRow:
    row: int
    holder: str
    year: int | None
    notice: str
    published: dt.date | None
    extra: dict[str, str]


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def read_notices(table: Path) -> dict[str, NoticeRow | ItemProblem]:
    """``file`` cell -> its row (or the problem with it, per row) of a notices table.

    A table that cannot be read or lacks a column raises :class:`SourceError`.
    """
    try:
        df = pd.read_csv(table, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except Exception as exc:  # pandas raises many kinds
        raise SourceError(f"source {KIND}: cannot read notices table {table}: {exc}") from exc
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in NOTICE_COLUMNS if c not in df.columns]
    if missing:
        raise SourceError(f"source {KIND}: notices table {table} lacks column(s) {missing} "
                          f"(has {list(df.columns)})")
    out: dict[str, NoticeRow | ItemProblem] = {}
    for i, rec in enumerate(df.to_dict("records"), start=1):
        where = f"notices table {table} row {i} (line {i + 1})"
        key = _cell(rec["file"]).replace("\\", "/")
        if not key:
            out[f"<row {i}>"] = ItemProblem(f"{where}: empty 'file' cell")
            continue
        if key in out:
            out[key] = ItemProblem(f"{where}: file {key!r} is listed twice")
            continue
        try:
            year = parse_year(rec["year"])
            published = None
            if _cell(rec.get("published")):
                published = dt.date.fromisoformat(_cell(rec["published"]))
        except ValueError as exc:
            out[key] = ItemProblem(f"{where}: {exc}")
            continue
        out[key] = NoticeRow(i, _cell(rec["holder"]), year, _cell(rec["notice"]), published,
                             {c: _cell(rec.get(c)) for c in NOTICE_OPTIONAL
                              if c != "published" and _cell(rec.get(c))})
    return out


# ------------------------------------------------------------------------------ source

class CopyrightDataset(Source):
    """Materials of the released copyright-compliance benchmark, one document per file."""

    name = KIND
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if params.get("path") is None:
            raise SourceError(f"source {KIND}: param 'path' (the released dataset folder) is "
                              "required")
        self.path = resolve_path(KIND, params["path"], "path")
        self.categories = str_list_param(KIND, params, "categories")
        notices = params.get("notices")
        self.notices: Path | None = None if notices is None else resolve_path(KIND, notices,
                                                                              "notices")
        strip = params.get("strip_notices", True)
        if not isinstance(strip, bool):
            raise SourceError(f"source {KIND}: param 'strip_notices' = {strip!r} must be true "
                              "or false")
        self.strip_notices = strip
        self.min_words = int_param(KIND, params, "min_words", 1, 0)
        self.limit: dict[str, int] | int | None = self._limit(params.get("limit"))
        self.sample_seed = int_param(KIND, params, "sample_seed", 0, -(2**63), allow_none=True)
        on_error = params.get("on_error", "raise")
        if on_error not in ("raise", "skip"):
            raise SourceError(f"source {KIND}: param 'on_error' = {on_error!r} must be 'raise' "
                              "or 'skip'")
        self.on_error: str = on_error

    @staticmethod
    def _limit(value: Any) -> dict[str, int] | int | None:
        bad = SourceError(f"source {KIND}: param 'limit' = {value!r} must be an integer >= 1 "
                          "(per category), a mapping {category: integer >= 1}, or null")
        if value is None:
            return None
        if isinstance(value, Mapping):
            if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                       and v >= 1 for k, v in value.items()):
                raise bad
            return dict(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad
        return value

    # --------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return dataset_root(self.path)

    def notices_table(self) -> Path | None:
        """The notices table in use: the param, else ``<root>/notices.csv`` when present."""
        if self.notices is not None:
            if not self.notices.is_file():
                raise SourceError(f"source {KIND}: notices table {self.notices} does not exist")
            return self.notices
        default = self.root / "notices.csv"
        return default if default.is_file() else None

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The material files, the notices table and seeds.json (those that exist)."""
        src = cls(**params)
        if not src.path.is_dir():
            return []
        try:
            root = src.root
        except SourceError:
            return []
        files = [str(p) for folder in src.selected_folders(root).values()
                 for p in sorted(folder.iterdir()) if p.is_file() and p.suffix == ".txt"
                 and not p.name.startswith(".")]
        extra = [src.notices_table(), seeds_file(root)]
        return files + [str(p) for p in extra if p is not None and p.is_file()]

    def selected_folders(self, root: Path) -> dict[str, Path]:
        folders = category_folders(root)
        if isinstance(self.limit, dict):
            unknown = sorted(set(self.limit) - set(folders))
            if unknown:
                raise SourceError(f"source {KIND}: param 'limit' names {unknown}, not found in "
                                  f"{root} (has {sorted(folders)})")
        if self.categories is None:
            return folders
        unknown = [c for c in self.categories if c not in folders]
        if unknown:
            raise SourceError(f"source {KIND}: param 'categories' names {unknown}, not found in "
                              f"{root} (has {sorted(folders)})")
        return {c: folders[c] for c in self.categories}

    def _problem(self, ref: str, why: str) -> None:
        if self.on_error == "raise":
            raise SourceError(f"source {KIND}: {ref}: {why}")
        self.skip(ref, why)

    def _limit_of(self, category: str) -> int | None:
        if isinstance(self.limit, dict):
            return self.limit.get(category)
        return self.limit

    def _notices_by_file(self, root: Path, table: Path | None
                         ) -> dict[str, NoticeRow | ItemProblem]:
        """The notices rows keyed by material path (``news_copyright/x.txt``); rows naming no
        material, or an ambiguous bare name, are reported (raise or skip)."""
        if table is None:
            return {}
        rows = read_notices(table)
        rels = [f"{folder.name}/{p.name}" for folder in category_folders(root).values()
                for p in sorted(folder.iterdir()) if p.is_file() and p.suffix == ".txt"]
        rel_set = set(rels)
        by_name: dict[str, list[str]] = {}
        for rel in rels:
            by_name.setdefault(rel.rsplit("/", 1)[1], []).append(rel)
        out: dict[str, NoticeRow | ItemProblem] = {}
        ref = f"notices table {table}"
        for key, row in rows.items():
            where = (f"row {row.row} (line {row.row + 1}): " if isinstance(row, NoticeRow)
                     else "")
            if key in rel_set:
                rel = key
            elif len(by_name.get(key, [])) == 1:
                rel = by_name[key][0]
            elif key in by_name:
                self._problem(ref, f"{where}file {key!r} is ambiguous: it names "
                              f"{by_name[key]}; give the path below {root}")
                continue
            else:
                self._problem(ref, str(row) if isinstance(row, ItemProblem) else
                              f"{where}file {key!r} is not a material in {root}")
                continue
            if rel in out:
                self._problem(ref, f"{where}file {key!r} names {rel!r}, which an earlier "
                              "row names too")
                continue
            out[rel] = row
        return out

    def documents(self) -> Iterable[Document]:
        if not self.path.is_dir():
            raise SourceError(f"source {KIND}: param 'path': {self.path} is not a folder")
        root = self.root
        folders = self.selected_folders(root)
        seeds = seeds_file(root)
        seeds_sha = None
        if seeds.is_file():  # validated here so a broken file stops the run early
            load_query_seeds(seeds)
            seeds_sha = hashlib.sha256(seeds.read_bytes()).hexdigest()
        table = self.notices_table()
        notices = self._notices_by_file(root, table)

        per_category: dict[str, list[Document]] = {}
        for category, folder in folders.items():
            docs: list[Document] = []
            for p in sorted(folder.iterdir()):
                if p.name.startswith("."):
                    continue
                rel = f"{folder.name}/{p.name}"
                if not p.is_file() or p.suffix != ".txt":
                    self.skip(str(p), "not a .txt file")
                    continue
                row = notices.get(rel)
                if isinstance(row, ItemProblem):
                    self._problem(str(p), str(row))
                    continue
                try:
                    data, text = read_text_file(p)
                except ItemProblem as exc:
                    self._problem(str(p), str(exc))
                    continue
                doc = self._document(category, p, rel, data, text, row, table, seeds_sha)
                n = word_count(doc.text)
                if n < self.min_words:
                    self.skip(str(p), f"{n} words, fewer than min_words={self.min_words}")
                    continue
                docs.append(doc)
            per_category[category] = seeded_sample(docs, self._limit_of(category),
                                                   self.sample_seed)
        for docs in per_category.values():
            yield from docs

    def _document(self, category: str, path: Path, rel: str, data: bytes, text: str,
                  row: NoticeRow | None, table: Path | None, seeds_sha: str | None) -> Document:
        if self.strip_notices:
            text, removed = strip_notices(text)
        else:
            removed = [n for _, n in find_notices(text)]
        found = best_notice(removed)
        stem = path.stem[: -len("_text")] if path.stem.endswith("_text") else path.stem
        title = readable_title(stem)
        prov: dict[str, Any] = {"file": rel, "sha256": hashlib.sha256(data).hexdigest(),
                                "bytes": len(data), "dataset": str(self.root),
                                "notices_in_text": [n.notice for n in removed],
                                "notices_stripped": self.strip_notices}
        if seeds_sha:
            prov["seeds_sha256"] = seeds_sha
        holder, year, notice = "", None, ""
        published, basis = None, "none: the released material files carry no date"
        url = licence = ""
        if row is not None:
            holder, year, notice = row.holder, row.year, row.notice
            prov["rights_basis"] = f"notices table {table} row {row.row}"
            if row.published is not None:
                published, basis = row.published, f"notices table {table} row {row.row}"
            title = row.extra.get("title", title)
            url = row.extra.get("url", "")
            licence = row.extra.get("licence", "")
        if found is not None and not (holder or year or notice):
            holder, year, notice = found.holder, found.year, found.notice
            prov["rights_basis"] = "copyright line in the material's text"
        return Document(
            doc_id=f"{category}:{text_id(rel, length=12)}",
            title=title,
            text=text,
            published=published,
            date_basis=basis,
            url=url,
            licence=licence,
            provenance=prov,
            page_id=rel,
            revision_id=prov["sha256"],
            category=category,
            rights_holder=holder,
            rights_year=year,
            rights_notice=notice,
        )
