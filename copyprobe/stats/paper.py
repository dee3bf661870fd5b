"""The Many-Shot Regurgitation (MSR) paper's statistics over cumulative match counts.

Reference: docs/statistics.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _sps

from copyprobe.stats.common import clean_sample, finite_or_none, fmt_p

__all__ = ["paper_stats"]


# ---------------------------------------------------------------------------------------
# the paper's statistics
# ---------------------------------------------------------------------------------------


def _fmt_list(arr: np.ndarray) -> list[float]:
    """Plain list of Python floats (ints kept integral-looking, e.g. 32.0)."""
    return [float(v) for v in arr]


def paper_stats(
    f_pre: Sequence[float],
    f_post: Sequence[float],
    *,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Compare the cumulative match-count vectors ``F_pre`` and ``F_post`` as the MSR paper does.

    Parameters
    ----------
    f_pre, f_post:
        ``f_k`` for ``k = 5..12`` (any equal or unequal lengths are accepted), where ``f_k``
        is the number of documents in the set whose verbatim match exceeds ``k`` words.
    alpha:
        Significance level used only for the ``verdict`` sentence (Kruskal-Wallis p).

    Returns
    -------
    dict with keys ``cliffs_delta``, ``ks``, ``ks_p``, ``kw_h``, ``kw_p``, ``n_pre``,
    ``n_post``, ``f_pre``, ``f_post``, ``notes``, ``verdict``. Undefined statistics are
    ``None`` with a reason in ``notes``; nothing is NaN or infinite; never raises on
    degenerate data (empty, constant, all-zero or single-value vectors).
    """
    notes: list[str] = []
    pre = clean_sample(f_pre, "f_pre", notes)
    post = clean_sample(f_post, "f_post", notes)
    n_pre, n_post = int(pre.size), int(post.size)

    for name, arr in (("f_pre", pre), ("f_post", post)):
        if arr.size and np.any(arr < 0):
            notes.append(f"{name} has negative values; f_k should be document counts")
        if arr.size > 1 and np.any(np.diff(arr) > 0):
            notes.append(
                f"{name} increases with k somewhere; f_k (documents whose match exceeds "
                "k words) should be non-increasing in k"
            )
    if n_pre and n_post and n_pre != n_post:
        notes.append(
            f"f_pre has {n_pre} value(s) and f_post has {n_post}; the paper uses the same "
            "thresholds k for both"
        )

    out: dict[str, Any] = {
        "cliffs_delta": None,
        "ks": None,
        "ks_p": None,
        "kw_h": None,
        "kw_p": None,
        "n_pre": n_pre,
        "n_post": n_post,
        "f_pre": _fmt_list(pre),
        "f_post": _fmt_list(post),
        "notes": notes,
        "verdict": "",
    }

    if n_pre == 0 or n_post == 0:
        empty = " and ".join(n for n, k in (("f_pre", n_pre), ("f_post", n_post)) if k == 0)
        notes.append(f"all statistics undefined: {empty} is empty")
        out["verdict"] = "empty input: no test possible"
        return out

    pooled = np.concatenate([pre, post])
    constant = bool(np.all(pooled == pooled[0]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mw = _sps.mannwhitneyu(post, pre, method="asymptotic")
        ks = _sps.ks_2samp(post, pre)
        kw = None if constant else _sps.kruskal(post, pre)

    u = finite_or_none(mw.statistic)
    if u is None:
        notes.append("Cliff's delta undefined: Mann-Whitney U could not be computed")
    else:
        out["cliffs_delta"] = finite_or_none(2.0 * u / (n_pre * n_post) - 1.0)

    out["ks"] = finite_or_none(ks.statistic)
    out["ks_p"] = finite_or_none(ks.pvalue)
    if out["ks"] is None or out["ks_p"] is None:
        notes.append("KS statistic or p-value undefined")

    if constant:
        notes.append("Kruskal-Wallis undefined: all values identical")
    else:
        out["kw_h"] = finite_or_none(kw.statistic)
        out["kw_p"] = finite_or_none(kw.pvalue)
        if out["kw_h"] is None or out["kw_p"] is None:
            notes.append("Kruskal-Wallis undefined: scipy returned no finite value")

    if n_pre < 2 or n_post < 2:
        notes.append(
            "a vector has a single value: the tests have almost no power and p-values "
            "are not informative"
        )

    # ---- verdict -------------------------------------------------------------------
    if constant and pooled[0] == 0:
        out["verdict"] = "no document reached k words in either set"
    elif constant:
        out["verdict"] = "identical vectors: no test possible"
    elif out["kw_p"] is None:
        out["verdict"] = "no test possible: Kruskal-Wallis undefined"
    elif n_pre == n_post and bool(np.array_equal(pre, post)):
        out["verdict"] = f"identical vectors: no difference detected ({fmt_p(out['kw_p'])})"
    elif out["kw_p"] < alpha and out["cliffs_delta"] is not None and out["cliffs_delta"] != 0:
        side = "D_pre" if out["cliffs_delta"] < 0 else "D_post"
        out["verdict"] = f"{side} higher ({fmt_p(out['kw_p'])})"
    else:
        out["verdict"] = f"no difference detected ({fmt_p(out['kw_p'])})"
    return out
