"""Sections of books in the MSR authors' CSV layout: one CSV file per book, one row per section.

Reference: docs/sources.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.materials.common import int_param, seeded_sample

COLUMNS = ("section_id", "section_name", "section_url", "contents")
DEFAULT_LICENCE = "CC-BY-4.0"
_PARAMS = {"path", "files", "licence", "min_words", "limit", "sample_seed"}
_FILE_KEYS = {"published", "book", "title", "licence"}
BOOK_URL = "https://openstax.org/books/{book}/pages/{page}"


class MsrCsv(Source):
    """Book sections from CSV files in the MSR authors' layout, dated per file."""

    name = "msr_csv"
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        for key in ("path", "files"):
            if not params.get(key):
                raise SourceError(f"source msr_csv: param {key!r} is required")
        self.folder = Path(params["path"])
        files = params["files"]
        if not isinstance(files, Mapping):
            raise SourceError("source msr_csv: param 'files' must map file names to "
                              "{published: YYYY-MM-DD, ...}")
        self.files: dict[str, dict[str, Any]] = {}
        for name, spec in files.items():
            key = f"source msr_csv: files.{name}"
            if not isinstance(spec, Mapping) or "published" not in spec:
                raise SourceError(f"{key}: needs a 'published' date (YYYY-MM-DD)")
            extra = sorted(set(spec) - _FILE_KEYS)
            if extra:
                raise SourceError(f"{key}: unknown key(s) {extra}; known: {sorted(_FILE_KEYS)}")
            try:
                published = dt.date.fromisoformat(str(spec["published"]))
            except ValueError:
                raise SourceError(f"{key}.published: not a date (YYYY-MM-DD): "
                                  f"{spec['published']!r}") from None
            self.files[str(name)] = {**spec, "published": published}
        self.licence = str(params.get("licence", DEFAULT_LICENCE))
        self.min_words = int_param(self.name, params, "min_words", 1, 0)
        self.limit = int_param(self.name, params, "limit", None, 1, allow_none=True)
        self.sample_seed = int_param(self.name, params, "sample_seed", 0, -(2**63))

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The CSV files named in ``files``."""
        folder = Path(params["path"])
        return [str(folder / name) for name in params.get("files", {})]

    def read(self, name: str) -> pd.DataFrame:
        """One CSV file as strings; a missing file or column is an error naming it."""
        p = self.folder / name
        if not p.is_file():
            raise SourceError(f"source msr_csv: file {p} (files.{name}) does not exist")
        try:
            df = pd.read_csv(p, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        except Exception as exc:  # pandas raises many kinds
            raise SourceError(f"source msr_csv: cannot read {p}: {exc}") from exc
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            raise SourceError(f"source msr_csv: {p} lacks column(s) {missing} (has "
                              f"{list(df.columns)}; expected {list(COLUMNS)})")
        return df

    def documents(self) -> Iterable[Document]:
        for name, spec in self.files.items():
            df = self.read(name)
            raw = (self.folder / name).read_bytes()
            file_sha = hashlib.sha256(raw).hexdigest()
            book_title = spec.get("title", Path(name).stem)
            rows = []
            for i, r in enumerate(df.itertuples(index=False)):
                ref = f"{name} row {i + 1} (section {r.section_id})"
                words = len(r.contents.split())
                if words < self.min_words:
                    self.skip(ref, f"{words} words, fewer than min_words {self.min_words}")
                    continue
                rows.append((i, r))
            for i, r in seeded_sample(rows, self.limit, self.sample_seed):
                url = (BOOK_URL.format(book=spec["book"], page=r.section_url)
                       if spec.get("book") else r.section_url)
                yield Document(
                    doc_id=text_id(name, r.section_id, r.section_url),
                    title=f"{book_title} {r.section_id} {r.section_name}".strip(),
                    text=r.contents,
                    published=spec["published"],
                    date_basis=f"publication date of {name} given in config",
                    url=url,
                    licence=str(spec.get("licence", self.licence)),
                    provenance={"file": name, "file_sha256": file_sha, "row": i + 1,
                                "section_id": r.section_id, "section_url": r.section_url},
                )
