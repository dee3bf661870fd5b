"""Curation: split a corpus into D_pre / D_post for one model by its training cutoff.

Every document of the corpus appears in the output, kept or not; an excluded document carries
the reason it was dropped, so a reader can always account for the whole corpus.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd

from copyprobe.artifacts import CURATED


def word_count(text: str) -> int:
    return len(text.split())


def assign_split(published: dt.date | None, cutoff: dt.date, margin_days: int) -> tuple[str, str]:
    """(split, reason): 'pre' / 'post', or 'none' with the reason it fits neither."""
    if published is None or pd.isna(published):
        return "none", "no published date"
    margin = dt.timedelta(days=margin_days)
    if published < cutoff - margin:
        return "pre", ""
    if published > cutoff + margin:
        return "post", ""
    return "none", (f"published {published.isoformat()} within {margin_days} day(s) of the "
                    f"cutoff {cutoff.isoformat()}")


def curate(
    corpus: pd.DataFrame,
    *,
    model: str,
    cutoff: dt.date,
    margin_days: int = 0,
    min_words: int = 0,
    max_words: int | None = None,
) -> pd.DataFrame:
    """Return the CURATED table for ``corpus`` and one model."""
    rows = []
    for doc in corpus.itertuples(index=False):
        published = doc.published if not pd.isna(doc.published) else None
        if isinstance(published, pd.Timestamp):
            published = published.date()
        split, reason = assign_split(published, cutoff, margin_days)
        n_words = word_count(doc.text)
        if not reason and n_words < min_words:
            reason = f"{n_words} words, fewer than min_words={min_words}"
        if not reason and max_words is not None and n_words > max_words:
            reason = f"{n_words} words, more than max_words={max_words}"
        rows.append(
            {
                "model": model,
                "source": doc.source,
                "doc_id": doc.doc_id,
                "split": split,
                "kept": not reason,
                "reason": reason,
                "published": published,
                "cutoff": cutoff,
                "n_words": n_words,
            }
        )
    return pd.DataFrame(rows, columns=CURATED.columns)
