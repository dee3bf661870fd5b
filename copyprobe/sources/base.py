"""The source interface: a named producer of dated documents.

A source is a class registered in :data:`SOURCES` under the name used in config
(``sources.<name>.kind``). It is built from its config params and returns a
:class:`SourceResult`: a corpus table (schema :data:`copyprobe.artifacts.CORPUS`) and the
documents it skipped with the reason (schema :data:`copyprobe.artifacts.SKIPPED`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from copyprobe.artifacts import CORPUS, MANIFEST, SKIPPED
from copyprobe.registry import Registry


class SourceError(ValueError):
    """A source's input is unusable; the message names the file, row or key."""


@dataclass
class Document:
    """One document of a corpus, with its provenance."""

    doc_id: str
    title: str
    text: str
    published: dt.date | None
    date_basis: str
    url: str = ""
    licence: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)
    #: The item and version the text was taken from (see the CORPUS schema).
    page_id: str = ""
    revision_id: str = ""
    revision_timestamp: dt.datetime | None = None
    #: This row is the document as it stood at this model cutoff (None: valid for every model).
    as_of: dt.date | None = None
    #: Copyright facts of a material (compliance benchmark).
    category: str = ""
    rights_holder: str = ""
    rights_year: int | None = None
    rights_notice: str = ""


@dataclass
class SourceResult:
    corpus: pd.DataFrame
    skipped: pd.DataFrame
    #: One row per document: the exact version fetched (schema :data:`MANIFEST`).
    manifest: pd.DataFrame


class Source(ABC):
    """Base class of all sources. Subclasses set ``name`` and implement :meth:`documents`."""

    name: ClassVar[str]

    #: The params this kind accepts; any other is an error naming the kind (None: unchecked).
    known_params: ClassVar[frozenset[str] | set[str] | None] = None

    def __init__(self, **params: Any) -> None:
        if self.known_params is not None:
            unknown = sorted(set(params) - set(self.known_params))
            if unknown:
                raise SourceError(f"source {self.name}: unknown param(s) {unknown}; known: "
                                  f"{sorted(self.known_params)}")
        self.params = params
        self.skipped: list[tuple[str, str]] = []
        #: The distinct training cutoffs of the configured models, for kinds declared with
        #: ``uses_cutoffs=True`` (e.g. text of a wiki page as it stood at each cutoff); set by
        #: :func:`build_source`, empty otherwise.
        self.cutoffs: list[dt.date] = []

    def skip(self, ref: str, reason: str) -> None:
        """Record that the item ``ref`` (a file, title or row) was not used, and why."""
        self.skipped.append((ref, reason))

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The files a source built from ``params`` (its config entry without ``kind``) reads.

        The workflow lists them as inputs of the ``collect_corpus`` job, so that editing one
        runs the source again. Default: none (the source reads nothing the user edits).
        """
        return []

    @classmethod
    def max_documents(cls, params: Mapping[str, Any]) -> int | None:
        """The most documents a source built from ``params`` gives one model, known from the
        config alone (a cost estimate before any crawl): its ``limit`` when it has one; None
        when the config does not bound it."""
        limit = params.get("limit")
        return None if limit is None else int(limit)

    @abstractmethod
    def documents(self) -> Iterable[Document]:
        """Yield the documents of this source (call :meth:`skip` for unusable items)."""

    def load(self, source_name: str) -> SourceResult:
        """Collect :meth:`documents` into the corpus and skipped tables."""
        now = pd.Timestamp.now(tz="UTC")
        rows = []
        seen: set[str] = set()
        for d in self.documents():
            if d.doc_id in seen:
                raise SourceError(f"source {source_name!r}: duplicate doc_id {d.doc_id!r}")
            seen.add(d.doc_id)
            rows.append(
                {
                    "doc_id": d.doc_id,
                    "source": source_name,
                    "title": d.title,
                    "text": d.text,
                    "published": d.published,
                    "date_basis": d.date_basis,
                    "url": d.url,
                    "licence": d.licence,
                    "retrieved_at": now,
                    "provenance": json.dumps(d.provenance, sort_keys=True, default=str),
                    "page_id": d.page_id,
                    "revision_id": d.revision_id,
                    "revision_timestamp": _utc(d.revision_timestamp),
                    "as_of": d.as_of,
                    "category": d.category,
                    "rights_holder": d.rights_holder,
                    "rights_year": d.rights_year,
                    "rights_notice": d.rights_notice,
                }
            )
        corpus = pd.DataFrame(rows, columns=CORPUS.columns)
        skipped = pd.DataFrame(
            [{"source": source_name, "ref": r, "reason": why} for r, why in self.skipped],
            columns=SKIPPED.columns,
        )
        return SourceResult(corpus=corpus, skipped=skipped, manifest=manifest_of(corpus))


SOURCES: Registry[type[Source]] = Registry("source")

# The built-in sources; each module is imported only when a source of its kind is built.
SOURCES.declare("wikipedia_offline", "copyprobe.sources.wikipedia_offline:WikipediaOffline")
# installed_licences and package_docs read the distributions installed where the job's Python
# runs (without a ``path`` param): the workflow runs them with the Python Snakemake runs in
SOURCES.declare("installed_licences", "copyprobe.sources.installed_licences:InstalledLicences",
                reads_installed=True)
SOURCES.declare("local", "copyprobe.sources.local:LocalFolder")
SOURCES.declare("msr_csv", "copyprobe.sources.msr_csv:MsrCsv")
SOURCES.declare("wikipedia", "copyprobe.sources.wikipedia:Wikipedia", uses_cutoffs=True)
SOURCES.declare("openstax", "copyprobe.sources.openstax:OpenStax")
SOURCES.declare("copyright_dataset", "copyprobe.sources.materials.dataset:CopyrightDataset")
SOURCES.declare("copyright_json", "copyprobe.sources.materials.dataset_json:CopyrightJson")
SOURCES.declare("web_pages", "copyprobe.sources.materials.web_pages:WebPages")
SOURCES.declare("package_docs", "copyprobe.sources.materials.package_docs:PackageDocs",
                reads_installed=True)


def _utc(ts: dt.datetime | None) -> pd.Timestamp | None:
    if ts is None:
        return None
    t = pd.Timestamp(ts)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def manifest_of(corpus: pd.DataFrame) -> pd.DataFrame:
    """The MANIFEST rows of a corpus table: each document's item, version and text hash."""
    out = corpus[[c for c in MANIFEST.columns if c != "text_sha256"]].copy()
    out["text_sha256"] = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in corpus["text"]]
    return out[MANIFEST.columns].reset_index(drop=True)


def text_id(*parts: str, length: int = 16) -> str:
    """A stable short id from text parts (sha256 prefix)."""
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return h[:length]


def source_input_files(spec: Mapping[str, Any]) -> list[str]:
    """The files the source of config entry ``{kind: ..., **params}`` reads (see
    :meth:`Source.input_files`)."""
    params = dict(spec)
    kind = params.pop("kind")
    return SOURCES.get(kind).input_files(params)


def uses_cutoffs(kind: str) -> bool:
    """Whether documents of this kind depend on the models' cutoffs (declared fact)."""
    return bool(SOURCES.facts(kind).get("uses_cutoffs", False))


def reads_installed(spec: Mapping[str, Any]) -> bool:
    """Whether a source reads the Python distributions installed where it runs: a kind
    declared ``reads_installed`` without a ``path`` param naming the folders to read."""
    return bool(SOURCES.facts(spec["kind"]).get("reads_installed", False)
                and not spec.get("path"))


def build_source(source_name: str, spec: Mapping[str, Any],
                 cutoffs: Iterable[dt.date | str] = ()) -> Source:
    """Instantiate the source described by a config entry ``{kind: ..., **params}``.

    ``cutoffs`` (the models' training cutoffs) reach only kinds declared ``uses_cutoffs``.
    """
    params = dict(spec)
    kind = params.pop("kind")
    source = SOURCES.get(kind)(**params)
    if uses_cutoffs(kind):
        source.cutoffs = sorted({c if isinstance(c, dt.date) else dt.date.fromisoformat(c)
                                 for c in cutoffs})
    return source
