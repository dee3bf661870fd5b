"""Which documents are a model's, and on which side of its training cutoff they fall.

A document is D_pre for a model when it was published more than ``margin_before_days`` before
the model's cutoff, D_post when published more than ``margin_after_days`` after it, and neither
inside that window (its date is too close to the cutoff to say whether the model saw it) or
when it has no publication date. Length filters then drop documents outside
``[min_words, max_words]``. Each rule returns a short code and a sentence for the reader.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pandas as pd

#: Exclusion codes, in the order the rules are applied (the report has one count per code).
NO_DATE = "no_date"
MARGIN = "margin"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "near_duplicate"
EXCLUSIONS = (NO_DATE, MARGIN, TOO_SHORT, TOO_LONG, EXACT_DUPLICATE, NEAR_DUPLICATE)


@dataclass(frozen=True)
class SplitRules:
    """The cutoff, the margins on both sides of it and the length window of one model."""

    cutoff: dt.date
    margin_before_days: int = 0
    margin_after_days: int = 0
    min_words: int = 0
    max_words: int | None = None

    def __post_init__(self) -> None:
        for name in ("margin_before_days", "margin_after_days", "min_words"):
            if getattr(self, name) < 0:
                raise ValueError(f"curation {name} must be >= 0, got {getattr(self, name)}")
        if self.max_words is not None and self.max_words < max(self.min_words, 1):
            raise ValueError(f"curation max_words ({self.max_words}) must be >= 1 and >= "
                             f"min_words ({self.min_words})")

    @classmethod
    def from_params(cls, cutoff: dt.date, params: dict[str, Any]) -> SplitRules:
        """From the config's ``curation`` block: an unset ``margin_before_days`` or
        ``margin_after_days`` takes ``margin_days``."""
        margin = params.get("margin_days", 0)
        before, after = params.get("margin_before_days"), params.get("margin_after_days")
        return cls(cutoff=cutoff,
                   margin_before_days=margin if before is None else before,
                   margin_after_days=margin if after is None else after,
                   min_words=params.get("min_words", 0), max_words=params.get("max_words"))


def word_count(text: str) -> int:
    return len(text.split())


def as_date(value: Any) -> dt.date | None:
    """A date from a corpus cell (date, Timestamp, or null)."""
    if value is None or (not isinstance(value, dt.date) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.date()
    if isinstance(value, dt.datetime):
        return value.date()
    return value


def is_models_version(as_of: Any, cutoff: dt.date) -> bool:
    """Whether a corpus row belongs to the model of ``cutoff``: rows valid for every model
    (``as_of`` null) and rows of the document as it stood at this cutoff."""
    d = as_date(as_of)
    return d is None or d == cutoff


def assign_split(published: dt.date | None, rules: SplitRules) -> tuple[str, str, str]:
    """(split, code, reason): 'pre' / 'post' with empty code and reason, or 'none' with the
    code and the sentence saying why the document fits neither."""
    if published is None:
        return "none", NO_DATE, "no published date"
    before = dt.timedelta(days=rules.margin_before_days)
    after = dt.timedelta(days=rules.margin_after_days)
    if published < rules.cutoff - before:
        return "pre", "", ""
    if published > rules.cutoff + after:
        return "post", "", ""
    if rules.margin_before_days == rules.margin_after_days:
        window = f"within {rules.margin_before_days} day(s) of"
    else:
        window = (f"within {rules.margin_before_days} day(s) before or "
                  f"{rules.margin_after_days} day(s) after")
    return "none", MARGIN, (f"published {published.isoformat()} {window} the cutoff "
                            f"{rules.cutoff.isoformat()}")


def length_exclusion(n_words: int, rules: SplitRules) -> tuple[str, str]:
    """(code, reason) when a document of ``n_words`` words is outside the length window."""
    if n_words < rules.min_words:
        return TOO_SHORT, f"{n_words} words, fewer than min_words={rules.min_words}"
    if rules.max_words is not None and n_words > rules.max_words:
        return TOO_LONG, f"{n_words} words, more than max_words={rules.max_words}"
    return "", ""
