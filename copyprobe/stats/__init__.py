"""Statistics for comparing regurgitation between D_pre and D_post.

Reference: docs/statistics.md.
"""

from copyprobe.stats.blind import blind_baseline, blind_baseline_with_scores, blind_scores
from copyprobe.stats.common import cliffs_delta
from copyprobe.stats.paper import paper_stats
from copyprobe.stats.per_document import per_document_stats

__all__ = [
    "blind_baseline",
    "blind_baseline_with_scores",
    "blind_scores",
    "cliffs_delta",
    "paper_stats",
    "per_document_stats",
]
