"""Statistics for comparing regurgitation between D_pre and D_post.

* :func:`paper_stats` -- the MSR paper's Cliff's delta / KS / Kruskal-Wallis over the
  cumulative count vectors ``f_k`` (reproduces the paper's Table 1).
* :func:`per_document_stats` -- the same comparison over per-document scores, with
  bootstrap CIs, Mann-Whitney U, ROC AUC and TPR at 1% FPR.
* :func:`blind_baseline` -- a text-only classifier that never queries a model; a high AUC
  means the date split is confounded by topic or style drift; :func:`blind_scores` gives
  its out-of-fold per-document scores (for a paired comparison with a model's scores) and
  :func:`blind_baseline_with_scores` both from one fit.
* :func:`cliffs_delta` -- ``P(x > y) - P(x < y)`` for two samples.

The helpers these modules share (clean samples, p-value text, Cliff's delta along an axis,
ROC AUC and TPR at a false-positive rate from scikit-learn, percentile bootstrap intervals
from scipy) live in :mod:`copyprobe.stats.common`.

Every function returns plain JSON-serialisable dicts: undefined values are ``None`` with a
reason in ``notes``; nothing is NaN or infinite.
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
