"""Document sources: a registry of named producers of dated documents (declared in
:mod:`copyprobe.sources.base`, imported when used)."""

from copyprobe.sources.base import (
    SOURCES,
    Document,
    Source,
    SourceError,
    SourceResult,
    build_source,
    manifest_of,
    source_input_files,
    uses_cutoffs,
)

__all__ = ["SOURCES", "Document", "Source", "SourceError", "SourceResult", "build_source",
           "manifest_of", "source_input_files", "uses_cutoffs"]
