"""Run one configured source and write its three tables: the one path of the workflow's
``collect_corpus`` job and of ``copyprobe collect``."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from copyprobe.artifacts import CORPUS, MANIFEST, SKIPPED, provenance, write_table
from copyprobe.sources.base import SourceError, SourceResult, build_source


def collect(source: str, spec: Mapping[str, Any], cutoffs: Iterable[str] = ()) -> SourceResult:
    """Build the source ``source`` from its config entry and load it.

    A failure of the source's server (:class:`copyprobe.web.FetchError`) becomes a
    :class:`SourceError` naming the source, so both callers report it the same way.
    """
    try:
        return build_source(source, spec, cutoffs).load(source)
    except Exception as exc:
        # only a source that fetches imports copyprobe.web (and requests, of the crawl
        # extra), so a local source collects in the core install
        web = sys.modules.get("copyprobe.web")
        if web is not None and isinstance(exc, web.FetchError):
            raise SourceError(f"source {source!r}: {exc}") from None
        raise


def write_result(result: SourceResult, source: str, spec: Mapping[str, Any], *,
                 corpus: str | os.PathLike[str], skipped: str | os.PathLike[str],
                 manifest: str | os.PathLike[str]) -> None:
    meta = provenance("collect_corpus", dict(spec), source=source)
    write_table(result.corpus, corpus, CORPUS, meta)
    write_table(result.skipped, skipped, SKIPPED, meta)
    write_table(result.manifest, manifest, MANIFEST, meta)


def summary(result: SourceResult, source: str, *, top: int = 20) -> dict[str, Any]:
    """Counts for people: documents, skipped, and the most frequent skip reasons."""
    reasons = Counter(result.skipped["reason"])
    shown = dict(reasons.most_common(top))
    other = sum(reasons.values()) - sum(shown.values())
    if other:
        shown[f"({len(reasons) - len(shown)} other reasons)"] = other
    return {"source": source, "documents": len(result.corpus),
            "skipped": len(result.skipped), "reasons": shown}
