"""Document sources: a registry of named producers of dated documents (declared in
:mod:`copyprobe.sources.base`, imported when used)."""

from copyprobe.sources.base import (
    SOURCES,
    Document,
    Source,
    SourceError,
    SourceResult,
    build_source,
    source_input_files,
)

__all__ = ["SOURCES", "Document", "Source", "SourceError", "SourceResult", "build_source",
           "source_input_files"]
