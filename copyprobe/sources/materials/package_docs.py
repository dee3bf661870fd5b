"""Documentation of installed Python distributions: an offline code-documentation source.

Reference: docs/materials.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from copyprobe.sources.base import Document, Source, SourceError
from copyprobe.sources.installed_licences import LicenceFile, licence_files
from copyprobe.sources.licences.text import prepare_text, split_licences
from copyprobe.sources.materials.common import (
    int_param,
    seeded_sample,
    str_list_param,
    str_param,
    word_count,
)
from copyprobe.sources.materials.rights import Notice, best_notice, find_notices

KIND = "package_docs"
_PARAMS = {"distributions", "min_words", "limit", "sample_seed", "published", "category", "path"}
_URL_LABELS = ("homepage", "home", "documentation", "docs", "source", "source code", "repository",
               "code")
SHORT_LICENCE_WORDS = 10


def normalise_name(name: str) -> str:
    """A distribution name as PEP 503 compares them ("Foo_Bar" == "foo-bar")."""
    return re.sub(r"[-_.]+", "-", name).lower()


def long_description(meta: Any) -> str:
    """The long description of a distribution's metadata (the body, or the old folded
    ``Description`` field)."""
    body = meta.get_payload() if hasattr(meta, "get_payload") else None
    if isinstance(body, str) and body.strip():
        return body.strip()
    field = meta.get("Description") or ""
    # Core metadata folds multi-line fields with 8 spaces (or "|" in old versions).
    return re.sub(r"\n(?: {8}|\|)", "\n", field).strip()


def licence_of(meta: Any) -> str:
    expr = (meta.get("License-Expression") or "").strip()
    if expr:
        return expr
    field = (meta.get("License") or "").strip()
    if field and len(field.split()) <= SHORT_LICENCE_WORDS and field.upper() != "UNKNOWN":
        return field
    classes = [c.split("::")[-1].strip() for c in (meta.get_all("Classifier") or [])
               if c.startswith("License ::")]
    return " OR ".join(dict.fromkeys(c for c in classes if c))


def url_of(meta: Any) -> str:
    home = (meta.get("Home-page") or "").strip()
    if home and home.upper() != "UNKNOWN":
        return home
    labelled: dict[str, str] = {}
    first = ""
    for entry in meta.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        url = url.strip()
        if not url:
            continue
        first = first or url
        labelled.setdefault(label.strip().lower(), url)
    for label in _URL_LABELS:
        if label in labelled:
            return labelled[label]
    return first


def copyright_lines(files: list[LicenceFile]) -> list[tuple[str, Notice]]:
    """(file ref, notice) of the copyright lines in licence files, outside licence texts."""
    out = []
    for lf in files:
        text = prepare_text(lf.text)
        kept, pos = [], 0
        for seg in split_licences(lf.text):
            if seg.family is not None and not seg.problem:
                kept.append(text[pos:seg.start])
                pos = seg.end
        kept.append(text[pos:])
        out.extend((lf.ref, n) for _, n in find_notices("\n".join(kept)))
    return out


class PackageDocs(Source):
    """Long descriptions of the installed Python distributions, with their copyright lines."""

    name = KIND
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.distributions = str_list_param(KIND, params, "distributions")
        self.min_words = int_param(KIND, params, "min_words", 100, 0)
        self.limit = int_param(KIND, params, "limit", None, 1, allow_none=True)
        self.sample_seed = int_param(KIND, params, "sample_seed", 0, -(2**63), allow_none=True)
        self.category = str_param(KIND, params, "category", "code")
        pub = params.get("published")
        self.published: dt.date | None = None
        if pub is not None:
            try:
                self.published = pub if isinstance(pub, dt.date) else dt.date.fromisoformat(
                    str(pub).strip())
            except ValueError:
                raise SourceError(f"source {KIND}: param 'published' = {pub!r} is not an ISO "
                                  "date (YYYY-MM-DD)") from None
            if isinstance(self.published, dt.datetime):
                self.published = self.published.date()
        path = params.get("path")
        if path is not None:
            if isinstance(path, str):
                path = [path]
            if not isinstance(path, (list, tuple)) or not all(isinstance(p, str) for p in path):
                raise SourceError(f"source {KIND}: param 'path' = {path!r} must be a folder or "
                                  "a list of folders")
            path = [str(Path(p).expanduser().resolve()) for p in path]
        self.path: list[str] | None = path

    def _dists(self) -> dict[str, importlib.metadata.Distribution]:
        found = (importlib.metadata.distributions(path=self.path) if self.path is not None
                 else importlib.metadata.distributions())
        out: dict[str, importlib.metadata.Distribution] = {}
        for d in found:
            try:
                name = (d.metadata.get("Name") or "").strip()
            except Exception:  # a broken metadata folder must not stop the scan
                continue
            if name:
                out.setdefault(normalise_name(name), d)  # the first on the path wins, as import
        return out

    def documents(self) -> Iterable[Document]:
        dists = self._dists()
        if self.distributions is not None:
            keys = []
            for name in self.distributions:
                key = normalise_name(name)
                if key in dists:
                    keys.append(key)
                else:
                    self.skip(name, "distribution not installed"
                              + (f" on {self.path}" if self.path else ""))
            keys = list(dict.fromkeys(keys))
        else:
            keys = sorted(dists)
        eligible = []
        for key in keys:
            meta = dists[key].metadata
            ref = f"{meta['Name']}=={dists[key].version}"
            text = long_description(meta)
            n = word_count(text)
            if n < self.min_words:
                self.skip(ref, f"long description has {n} words, fewer than "
                          f"min_words={self.min_words}")
                continue
            eligible.append((key, text))
        chosen = seeded_sample(eligible, self.limit, self.sample_seed)
        if not chosen:
            return
        wanted = {k for k, _ in chosen}
        by_dist: dict[str, list[LicenceFile]] = {}
        for lf in licence_files(self.path, self.skip):
            key = normalise_name(lf.package)
            if key in wanted and lf.version == dists[key].version:
                by_dist.setdefault(key, []).append(lf)
        for key, text in chosen:
            yield self._document(dists[key], text, by_dist.get(key, []))

    def _document(self, dist: importlib.metadata.Distribution, text: str,
                  files: list[LicenceFile]) -> Document:
        meta = dist.metadata
        name, version = meta["Name"], dist.version
        lines = copyright_lines(files)
        notice = best_notice([n for _, n in lines])
        return Document(
            doc_id=f"pkg:{normalise_name(name)}",
            title=name,
            text=text,
            published=self.published,
            date_basis=("param published" if self.published is not None
                        else "none: distribution metadata carries no publication date"),
            url=url_of(meta),
            licence=licence_of(meta),
            provenance={
                "distribution": name,
                "version": version,
                "summary": meta.get("Summary") or "",
                "author": meta.get("Author") or meta.get("Author-email") or "",
                "description_content_type": meta.get("Description-Content-Type") or "",
                "licence_files": [lf.ref for lf in files],
                "copyright_lines": [f"{ref}: {n.notice}" for ref, n in lines],
                "python": sys.version.split()[0],
            },
            page_id=f"{name}=={version}",
            revision_id=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            category=self.category or "code",
            rights_holder=notice.holder if notice else "",
            rights_year=notice.year if notice else None,
            rights_notice=notice.notice if notice else "",
        )
