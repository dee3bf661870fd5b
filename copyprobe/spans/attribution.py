"""Attribution: every maximal verbatim span of each generation found in a span index.

Reference: docs/attribution.md.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from copyprobe.artifacts import ATTRIBUTION, SPANS
from copyprobe.spans.types import Span, SpanLookup

#: The generation columns :func:`attribute` reads (and ``source``, or its ``source=``: a
#: GENERATIONS table has none, its file is per source).
GENERATION_COLUMNS = ("request_id", "model", "sample_index", "status", "text")


def doc_key(source: str, doc_id: str) -> str:
    """How a document is named in ``top_doc`` (and the studies' tables)."""
    return f"{source}:{doc_id}"


def covered_words(spans: Iterable[Any]) -> int:
    """Words inside at least one span (the union of their word ranges): of spans,
    or of anything with ``word_start`` and ``word_end`` (rows of a SPANS table)."""
    covered = 0
    end = 0
    for s in sorted(spans, key=lambda s: s.word_start):
        start = max(s.word_start, end)
        if s.word_end > start:
            covered += s.word_end - start
            end = s.word_end
    return covered


def top_doc(spans: Sequence[Span]) -> str:
    """The listed document covering the most words of the spans (ties: the first in index
    order); "" without a span."""
    words: Counter[tuple[int, str]] = Counter()
    for s in spans:
        for d in s.docs:
            words[(d.doc_ix, doc_key(d.source, d.doc_id))] += s.n_words
    if not words:
        return ""
    (_, key), _ = min(words.items(), key=lambda kv: (-kv[1], kv[0][0]))
    return key


def _check_columns(generations: pd.DataFrame) -> None:
    missing = [c for c in GENERATION_COLUMNS if c not in generations.columns]
    if missing:
        raise ValueError(f"generations table lacks column(s) {missing} (attribution reads "
                         f"{', '.join(GENERATION_COLUMNS)})")


def attribute(generations: pd.DataFrame, index: SpanLookup, *, min_words: int,
              max_docs: int, name: str = "", source: str | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(spans, summary)`` of ``generations`` in ``index`` (named ``name`` in the tables'
    ``index`` column): the :data:`SPANS` and :data:`ATTRIBUTION` tables, in the order of
    ``generations``. ``source`` fills the ``source`` column where ``generations`` has none."""
    if min_words < 1:
        raise ValueError(f"min_words must be >= 1, got {min_words}")
    if max_docs < 0:
        raise ValueError(f"max_docs must be >= 0, got {max_docs}")
    _check_columns(generations)
    if "source" not in generations.columns:
        if source is None:
            raise ValueError("generations table has no source column: pass source=")
        generations = generations.assign(source=source)
    digest = index.digest
    span_rows: list[dict[str, Any]] = []
    summary_rows: list[dict[str, Any]] = []
    for g in generations.itertuples(index=False):
        key = {"request_id": g.request_id, "model": g.model, "source": g.source,
               "sample_index": g.sample_index}
        where = {"index": name, "index_digest": digest}
        if g.status != "ok" or not isinstance(g.text, str):
            summary_rows.append({**key, "status": g.status if g.status != "ok" else "no_text",
                                 "generation_words": None, "n_spans": None,
                                 "longest_span_words": None, "covered_words": None,
                                 "coverage": None, "top_doc": None, "find_s": None, **where})
            continue
        started = time.perf_counter()
        spans = index.find_spans(g.text, min_words=min_words, max_docs=max_docs)
        find_s = time.perf_counter() - started
        n_words = len(index.tokenize(g.text))
        covered = covered_words(spans)
        for ix, s in enumerate(spans):
            span_rows.append({**key, "span_ix": ix, "word_start": s.word_start,
                              "word_end": s.word_end, "n_words": s.n_words,
                              "char_start": s.char_start, "char_end": s.char_end,
                              "text": s.text, "count": s.count, "n_docs": s.n_docs,
                              "n_docs_exact": s.n_docs_exact,
                              "docs": [d.as_dict() for d in s.docs], **where})
        summary_rows.append({**key, "status": "ok", "generation_words": n_words,
                             "n_spans": len(spans),
                             "longest_span_words": max((s.n_words for s in spans), default=0),
                             "covered_words": covered,
                             "coverage": covered / n_words if n_words else float("nan"),
                             "top_doc": top_doc(spans), "find_s": find_s, **where})
    return (pd.DataFrame(span_rows, columns=SPANS.columns),
            pd.DataFrame(summary_rows, columns=ATTRIBUTION.columns))
