"""Document sources. Importing this package registers every built-in source."""

from copyprobe.sources.base import SOURCES, Document, Source, SourceError, SourceResult, build_source
from copyprobe.sources import installed_licences, local, wikipedia_offline  # noqa: F401  (register)

__all__ = ["SOURCES", "Document", "Source", "SourceError", "SourceResult", "build_source"]
