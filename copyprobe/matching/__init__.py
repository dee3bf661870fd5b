"""Verbatim-overlap matching between references and generations.

* :mod:`~copyprobe.matching.substrings`: exact, near-linear common-substring machinery
  over integer sequences (rolling hashes, verified exactly).
* :mod:`~copyprobe.matching.paper`: the MSR authors' character-level counting, reproduced
  exactly (``f_k`` for k = 5..12).
* :mod:`~copyprobe.matching.words`: word-mode measures on normalised tokens.
* :mod:`~copyprobe.matching.fk`: ``f_k`` (documents reaching each threshold), for both modes.
"""

from copyprobe.matching.fk import paper_fk_counts, paper_score, word_fk_counts
from copyprobe.matching.paper import (
    PAPER_KS,
    PaperMatch,
    normalize_paper,
    paper_fk,
    paper_match,
)
from copyprobe.matching.substrings import (
    DEFAULT_MAX_PAIRS,
    code_points,
    count_shared_kgrams,
    count_shared_kgrams_range,
    longest_common_run,
    longest_common_substring_chars,
    maximal_matches,
)
from copyprobe.matching.words import WordMatch, normalize_words, word_fk, word_match

__all__ = [
    "DEFAULT_MAX_PAIRS",
    "PAPER_KS",
    "PaperMatch",
    "WordMatch",
    "code_points",
    "count_shared_kgrams",
    "count_shared_kgrams_range",
    "longest_common_run",
    "longest_common_substring_chars",
    "maximal_matches",
    "normalize_paper",
    "normalize_words",
    "paper_fk",
    "paper_fk_counts",
    "paper_match",
    "paper_score",
    "word_fk",
    "word_fk_counts",
    "word_match",
]
