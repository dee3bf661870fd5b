"""Statistics over per-document scores (e.g. each document's longest verbatim match length).

Reference: docs/statistics.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _sps

from copyprobe.stats.common import (
    bootstrap_ci,
    clean_sample,
    cliffs_delta,
    finite_or_none,
    fmt_p,
    roc_auc,
    tpr_at_fpr,
)

__all__ = ["MIN_DOCUMENTS", "cliffs_delta", "per_document_stats"]

# Fewer documents than this in D_pre or D_post sets ``small_sample``.
MIN_DOCUMENTS = 10


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _means_delta_auc(pre: np.ndarray, post: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean_pre, mean_post, Cliff's delta (post vs pre) and ROC AUC, along ``axis``."""
    delta = cliffs_delta(post, pre, axis=axis)
    return np.stack([np.mean(pre, axis=axis), np.mean(post, axis=axis), delta,
                     (1.0 - delta) / 2.0])


def per_document_stats(
    pre: Sequence[float],
    post: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Compare per-document scores of D_pre and D_post (e.g. longest-match lengths).

    Parameters
    ----------
    pre, post:
        One score per document; higher means more regurgitation.
    n_boot:
        Percentile-bootstrap replicates (``scipy.stats.bootstrap``, each group resampled
        independently, seeded ``numpy.random.Generator``). ``0`` disables the confidence
        intervals.
    seed:
        Seed of the bootstrap generator; results are deterministic given the seed.
    ci:
        Confidence level of the intervals, in (0, 1).
    alpha:
        Significance level used only for the ``verdict`` sentence (Mann-Whitney p).

    Returns
    -------
    dict with keys ``n_pre``, ``n_post``, ``mean_pre``, ``mean_post``, ``median_pre``,
    ``median_post``, ``mean_pre_ci``, ``mean_post_ci``, ``cliffs_delta``,
    ``cliffs_delta_ci``, ``ks``, ``ks_p``, ``kw_h``, ``kw_p``, ``mw_u``, ``mw_p``,
    ``roc_auc``, ``roc_auc_ci``, ``tpr_at_1pct_fpr``, ``small_sample``,
    ``small_sample_warning``, ``notes``, ``verdict``. CIs are ``[lo, hi]`` lists.
    ``small_sample`` is True, and ``small_sample_warning`` a sentence to print beside the
    result (else ""), when either set has fewer than :data:`MIN_DOCUMENTS` documents.
    Undefined values are ``None`` with a reason in ``notes``; nothing is
    NaN or infinite; degenerate data never raises (bad ``n_boot``/``ci`` do: ValueError).
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")

    notes: list[str] = []
    a_pre = clean_sample(pre, "pre", notes)
    a_post = clean_sample(post, "post", notes)
    n_pre, n_post = int(a_pre.size), int(a_post.size)

    out: dict[str, Any] = {
        "n_pre": n_pre,
        "n_post": n_post,
        "mean_pre": None,
        "mean_post": None,
        "median_pre": None,
        "median_post": None,
        "mean_pre_ci": None,
        "mean_post_ci": None,
        "cliffs_delta": None,
        "cliffs_delta_ci": None,
        "ks": None,
        "ks_p": None,
        "kw_h": None,
        "kw_p": None,
        "mw_u": None,
        "mw_p": None,
        "roc_auc": None,
        "roc_auc_ci": None,
        "tpr_at_1pct_fpr": None,
        "small_sample": False,
        "small_sample_warning": "",
        "notes": notes,
        "verdict": "",
    }
    if min(n_pre, n_post) < MIN_DOCUMENTS:
        out["small_sample"] = True
        out["small_sample_warning"] = (
            f"small sample: D_pre has {n_pre} and D_post has {n_post} document(s), fewer than "
            f"{MIN_DOCUMENTS} in a set; the tests, intervals and verdict carry little information"
        )

    if n_pre:
        out["mean_pre"] = finite_or_none(a_pre.mean())
        out["median_pre"] = finite_or_none(np.median(a_pre))
    if n_post:
        out["mean_post"] = finite_or_none(a_post.mean())
        out["median_post"] = finite_or_none(np.median(a_post))

    if n_pre == 0 or n_post == 0:
        empty = [name for name, n in (("D_pre", n_pre), ("D_post", n_post)) if n == 0]
        notes.append(
            f"comparison statistics undefined: no scores in {' and '.join(empty)}"
        )
        if n_boot:
            for key, arr in (("mean_pre_ci", a_pre), ("mean_post_ci", a_post)):
                if arr.size:
                    (out[key],) = bootstrap_ci([arr], _mean, n_boot=n_boot, ci=ci, seed=seed)
        out["verdict"] = f"no scores in {' and '.join(empty)}: no test possible"
        return out

    pooled = np.concatenate([a_pre, a_post])
    constant = bool(np.all(pooled == pooled[0]))

    # ---- effect size and ROC ---------------------------------------------------------
    delta = cliffs_delta(a_post, a_pre)
    out["cliffs_delta"] = finite_or_none(delta)
    scores = np.concatenate([a_pre, a_post])
    labels = np.r_[np.ones(n_pre, dtype=np.int64), np.zeros(n_post, dtype=np.int64)]
    out["roc_auc"] = finite_or_none(roc_auc(scores, labels))
    out["tpr_at_1pct_fpr"] = finite_or_none(tpr_at_fpr(scores, labels, 0.01))
    if n_post < 100:
        notes.append(
            f"the 1% FPR point rests on fewer than 100 non-members (D_post has {n_post}), "
            "so tpr_at_1pct_fpr equals the TPR at FPR 0"
        )

    # ---- tests -------------------------------------------------------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ks = _sps.ks_2samp(a_post, a_pre)
        mw = _sps.mannwhitneyu(a_post, a_pre, alternative="two-sided")
        kw = None if constant else _sps.kruskal(a_post, a_pre)
    out["ks"] = finite_or_none(ks.statistic)
    out["ks_p"] = finite_or_none(ks.pvalue)
    if out["ks"] is None or out["ks_p"] is None:
        notes.append("KS statistic or p-value undefined")
    out["mw_u"] = finite_or_none(mw.statistic)
    if constant:
        notes.append("Kruskal-Wallis undefined: all values identical")
        notes.append("Mann-Whitney p undefined: all values identical (zero rank variance)")
    else:
        out["mw_p"] = finite_or_none(mw.pvalue)
        out["kw_h"] = finite_or_none(kw.statistic)
        out["kw_p"] = finite_or_none(kw.pvalue)
        if out["mw_p"] is None:
            notes.append("Mann-Whitney p undefined: scipy returned no finite value")
        if out["kw_h"] is None or out["kw_p"] is None:
            notes.append("Kruskal-Wallis undefined: scipy returned no finite value")

    # ---- bootstrap ---------------------------------------------------------------------
    if n_boot == 0:
        notes.append("confidence intervals not computed: n_boot=0")
    else:
        (out["mean_pre_ci"], out["mean_post_ci"], out["cliffs_delta_ci"],
         out["roc_auc_ci"]) = bootstrap_ci([a_pre, a_post], _means_delta_auc, n_boot=n_boot,
                                           ci=ci, seed=seed)
        single = [name for name, n in (("D_pre", n_pre), ("D_post", n_post)) if n == 1]
        if single:
            notes.append(
                f"{' and '.join(single)} {'each has' if len(single) > 1 else 'has'} a single "
                "document: its bootstrap resamples are all identical, so the intervals "
                "understate the uncertainty"
            )

    # ---- verdict -----------------------------------------------------------------------
    d = out["cliffs_delta"]
    p = out["mw_p"]
    if constant and pooled[0] == 0:
        out["verdict"] = "all scores are 0 in both sets: no test possible"
    elif constant:
        out["verdict"] = "all scores identical: no test possible"
    elif p is None or d is None:
        out["verdict"] = "no test possible: Mann-Whitney p undefined"
    elif p < alpha and d != 0:
        side = "D_pre" if d < 0 else "D_post"
        out["verdict"] = (
            f"{side} higher (Cliff's delta={d:.3f}, AUC={out['roc_auc']:.3f}, "
            f"Mann-Whitney {fmt_p(p)})"
        )
    else:
        out["verdict"] = f"no difference detected (Cliff's delta={d:.3f}, Mann-Whitney {fmt_p(p)})"
    return out
