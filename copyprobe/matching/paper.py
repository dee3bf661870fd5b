"""The MSR authors' own counting ("paper mode"), reproduced exactly.

Reference: docs/statistics.md#how-matches-are-counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from copyprobe.matching.fk import paper_fk_counts, paper_score
from copyprobe.matching.substrings import longest_common_substring_chars

__all__ = ["PAPER_KS", "PaperMatch", "normalize_paper", "paper_fk", "paper_match"]

#: The thresholds the MSR paper reports.
PAPER_KS: tuple[int, ...] = tuple(range(5, 13))

_NON_ALPHA_SPACE = re.compile(r"[^a-z\s]")
# Same result as re.sub(r"\s+", " ", x) (every whitespace run becomes one space), but it
# leaves the common single spaces alone, which is faster.
_WHITESPACE = re.compile(r"\s\s+|[^\S ]")


def normalize_paper(text: str) -> str:
    """The authors' normalisation: lower-case, keep ``[a-z]`` and whitespace, squeeze spaces."""
    text = text.lower()
    text = _NON_ALPHA_SPACE.sub("", text)
    return _WHITESPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class PaperMatch:
    """Paper-mode result for one document.

    Attributes:
        lcs: the longest common character substring, as a slice of the reference.
        lcs_words: ``len(lcs.split())``.
        unique: ``norm(lcs)`` occurs in ``norm(document)`` and exactly once by
            ``str.count`` (non-overlapping).
    """

    lcs: str
    lcs_words: int
    unique: bool

    @property
    def score(self) -> int:
        """The paper-mode score: ``lcs_words`` when unique, else 0 (see :func:`paper_score`)."""
        return paper_score(self.lcs_words, self.unique)

    def counts_at(self, k: int) -> bool:
        """Whether the document counts towards ``f_k``: ``lcs_words > k`` and unique."""
        return paper_fk_counts([self.score], [k])[0] == 1


def paper_match(reference: str, generation: str, document: str) -> PaperMatch:
    """Score one document the way the MSR authors' analysis script does.

    Args:
        reference: the held-out last segment ``T_n`` of the document.
        generation: the model's continuation ``T_n'``.
        document: the whole original document text (used for the uniqueness check).

    Returns:
        The :class:`PaperMatch`.
    """
    start, length = longest_common_substring_chars(reference, generation)
    lcs = reference[start : start + length]
    norm_lcs = normalize_paper(lcs)
    norm_doc = normalize_paper(document)
    unique = norm_lcs in norm_doc and norm_doc.count(norm_lcs) == 1
    return PaperMatch(lcs=lcs, lcs_words=len(lcs.split()), unique=unique)


def paper_fk(matches: Iterable[PaperMatch], ks: Iterable[int] = PAPER_KS) -> dict[int, int]:
    """``f_k``: the number of documents that count at each threshold ``k``.

    Args:
        matches: one :class:`PaperMatch` per document (any iterable; consumed once).
        ks: thresholds (default :data:`PAPER_KS`, 5..12).

    Returns:
        ``{k: f_k}`` in the order of ``ks``.
    """
    ks = list(ks)
    return dict(zip(ks, paper_fk_counts((m.score for m in matches), ks), strict=True))
