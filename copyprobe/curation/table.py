"""The CURATED table of one (model, source): D_pre / D_post, filters and duplicates.

Rows of the corpus that hold another model's version of a document (``as_of`` set to a
different cutoff) are not this model's documents and are left out. Every other row appears in
the table, kept or not; a dropped row carries its exclusion code and a sentence saying why.
The rules run in order: publication date against the cutoff and its margins, the length
window, then duplicates among the documents still kept (earliest published first, then by
doc_id, so the kept one of a group does not depend on the corpus order).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pandas as pd

from copyprobe.artifacts import CURATED
from copyprobe.curation.dedup import EXACT, DedupSettings, describe, find_duplicates
from copyprobe.curation.split import (
    EXACT_DUPLICATE,
    NEAR_DUPLICATE,
    SplitRules,
    as_date,
    assign_split,
    is_models_version,
    length_exclusion,
    word_count,
)


def models_rows(corpus: pd.DataFrame, cutoff: dt.date) -> pd.DataFrame:
    """The corpus rows of the model of ``cutoff`` (``as_of`` null or equal to the cutoff)."""
    if "as_of" not in corpus.columns:
        return corpus
    mine = [is_models_version(v, cutoff) for v in corpus["as_of"]]
    return corpus[mine]


def curate(
    corpus: pd.DataFrame,
    *,
    model: str,
    cutoff: dt.date,
    margin_days: int = 0,
    min_words: int = 0,
    max_words: int | None = None,
    margin_before_days: int | None = None,
    margin_after_days: int | None = None,
    dedup: DedupSettings | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Return the CURATED table for ``corpus`` and one model.

    ``margin_before_days`` / ``margin_after_days`` default to ``margin_days``; ``dedup`` (the
    config's ``curation.dedup`` block or :class:`DedupSettings`) defaults to exact and near
    duplicate removal with the default settings.
    """
    rules = SplitRules.from_params(cutoff, {
        "margin_days": margin_days, "margin_before_days": margin_before_days,
        "margin_after_days": margin_after_days, "min_words": min_words, "max_words": max_words})
    settings = dedup if isinstance(dedup, DedupSettings) else DedupSettings.from_params(dedup)
    docs = models_rows(corpus, cutoff)
    rows = []
    texts: dict[str, str] = {}
    for doc in docs.itertuples(index=False):
        published = as_date(doc.published)
        split, code, reason = assign_split(published, rules)
        n_words = word_count(doc.text)
        if not code:
            code, reason = length_exclusion(n_words, rules)
        if not code:
            texts[doc.doc_id] = doc.text
        rows.append({
            "model": model, "source": doc.source, "doc_id": doc.doc_id, "split": split,
            "kept": not code, "reason": reason, "published": published, "cutoff": cutoff,
            "n_words": n_words, "exclusion": code, "duplicate_of": "", "similarity": None,
            "as_of": as_date(getattr(doc, "as_of", None)),
        })
    order = sorted((r for r in rows if r["kept"]), key=lambda r: (r["published"], r["doc_id"]))
    dropped = find_duplicates(((r["doc_id"], texts[r["doc_id"]]) for r in order), settings)
    for r in rows:
        m = dropped.get(r["doc_id"])
        if m is not None:
            r.update(kept=False, reason=describe(m, settings), duplicate_of=m.of,
                     similarity=m.similarity,
                     exclusion=EXACT_DUPLICATE if m.kind == EXACT else NEAR_DUPLICATE)
    return pd.DataFrame(rows, columns=CURATED.columns)
