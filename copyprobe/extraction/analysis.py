"""D_pre vs D_post on per-document extractability, and what the model adds beyond the text.

Reference: docs/extraction.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from copyprobe.stats.blind import auc_minus_blind, blind_baseline_with_scores
from copyprobe.stats.common import (
    bootstrap_ci,
    clean_sample,
    cliffs_delta,
    finite_or_none,
    roc_auc,
)

__all__ = ["SPLITS", "compare_splits"]

#: The split labels of the ``split`` column: D_pre (positive class) and D_post.
SPLITS = ("D_pre", "D_post")


def _auc_and_delta(pre: np.ndarray, post: np.ndarray, axis: int = -1) -> np.ndarray:
    delta = cliffs_delta(post, pre, axis=axis)
    return np.stack([(1.0 - delta) / 2.0, delta])


def _check(docs: pd.DataFrame, metrics: Sequence[str]) -> None:
    missing = [c for c in ("doc_id", "split", "text", *metrics) if c not in docs.columns]
    if missing:
        raise ValueError(f"compare_splits: the document table has no column(s) {missing} "
                         f"(it has {list(docs.columns)})")
    bad = docs.loc[~docs["split"].isin(SPLITS), "split"]
    if len(bad):
        raise ValueError(f"compare_splits: document {docs.loc[bad.index[0], 'doc_id']!r} has "
                         f"split {bad.iloc[0]!r}, not one of {list(SPLITS)}")
    dup = docs["doc_id"].duplicated()
    if dup.any():
        raise ValueError(f"compare_splits: document {docs.loc[dup, 'doc_id'].iloc[0]!r} "
                         "appears more than once")


def _metric_stats(name: str, values: np.ndarray, is_pre: np.ndarray, *, n_boot: int,
                  ci: float, seed: int, notes: list[str]) -> tuple[dict[str, Any], np.ndarray]:
    """The comparison of one metric, and the mask of the documents it used."""
    kept = np.isfinite(values)
    clean_sample(values, name, notes)  # notes the dropped NaN/infinite values
    pre, post = values[kept & is_pre], values[kept & ~is_pre]
    out: dict[str, Any] = {"n_pre": int(pre.size), "n_post": int(post.size), "mean_pre": None,
                           "mean_post": None, "auc": None, "auc_ci": None,
                           "cliffs_delta": None, "cliffs_delta_ci": None,
                           "ks_statistic": None, "ks_p": None}
    if min(pre.size, post.size) < 2:
        notes.append(f"{name}: fewer than 2 documents with a value in a split (D_pre "
                     f"{pre.size}, D_post {post.size}); no comparison")
        return out, kept
    labels = np.r_[np.ones(pre.size, dtype=np.int64), np.zeros(post.size, dtype=np.int64)]
    out["mean_pre"] = finite_or_none(pre.mean())
    out["mean_post"] = finite_or_none(post.mean())
    out["auc"] = finite_or_none(roc_auc(np.r_[pre, post], labels))
    out["cliffs_delta"] = finite_or_none(cliffs_delta(post, pre))
    ks = _sps.ks_2samp(pre, post)
    out["ks_statistic"] = finite_or_none(ks.statistic)
    out["ks_p"] = finite_or_none(ks.pvalue)
    if n_boot:
        out["auc_ci"], out["cliffs_delta_ci"] = bootstrap_ci(
            [pre, post], _auc_and_delta, n_boot=n_boot, ci=ci, seed=seed)
    return out, kept


def _minus_blind(name: str, values: np.ndarray, blind: np.ndarray, is_pre: np.ndarray,
                 kept: np.ndarray, *, n_boot: int, ci: float, seed: int,
                 notes: list[str]) -> dict[str, Any]:
    diff = auc_minus_blind(values[kept], blind[kept], is_pre[kept], n_boot=n_boot, ci=ci,
                           seed=seed)
    if not kept.all():
        notes.append(f"{name}: model minus blind compares both AUCs on the {int(kept.sum())} "
                     f"documents with a value, so its blind AUC differs from the blind "
                     "baseline's over all documents")
    return {"n_pre": diff["n_pos"], "n_post": diff["n_neg"], "model_auc": diff["model_auc"],
            "blind_auc": diff["blind_auc"], "difference": diff["difference"], "ci": diff["ci"]}


def compare_splits(
    docs: pd.DataFrame,
    *,
    metrics: Sequence[str],
    n_boot: int,
    seed: int,
    blind_folds: int,
    ci: float = 0.95,
    warn_auc: float = 0.75,
) -> dict[str, Any]:
    """Compare per-document metrics between D_pre and D_post, beside the blind baseline.

    Parameters
    ----------
    docs:
        One row per document: ``doc_id`` (unique), ``split`` (``D_pre`` or ``D_post``),
        ``text`` (what the blind baseline reads) and the ``metrics`` columns (higher = more
        extractable). NaN or infinite values (a document without a scored window) drop that
        document from that metric only, with a note.
    metrics:
        The metric columns to compare.
    n_boot, seed, ci:
        Bootstrap replicates (0: no intervals), the seed of the bootstrap and of the blind
        baseline's folds, and the confidence level.
    blind_folds, warn_auc:
        The blind baseline's cross-validation folds (reduced, with a note, when a split has
        fewer documents) and its warning level (:func:`copyprobe.stats.blind_baseline`).

    Returns
    -------
    dict with ``n_pre``, ``n_post`` (documents per split); ``metrics``: per metric
    ``n_pre``, ``n_post``, ``mean_pre``, ``mean_post``, ``auc``, ``auc_ci``,
    ``cliffs_delta``, ``cliffs_delta_ci``, ``ks_statistic``, ``ks_p``; ``blind``: the blind
    baseline's summary; ``auc_minus_blind``: per metric ``n_pre``, ``n_post``,
    ``model_auc``, ``blind_auc`` (on the documents the metric kept), ``difference`` and its
    paired-bootstrap ``ci``; ``settings``; ``notes``. With fewer than 2 documents in a split
    the numbers are ``None`` and ``notes`` says why. ``ValueError`` for a missing column, a
    split label other than ``D_pre``/``D_post`` or a repeated ``doc_id`` (caller errors).
    """
    metrics = list(metrics)
    _check(docs, metrics)
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie in (0, 1), got {ci}")
    is_pre = (docs["split"] == "D_pre").to_numpy()
    notes: list[str] = []
    out: dict[str, Any] = {
        "n_pre": int(is_pre.sum()), "n_post": int((~is_pre).sum()),
        "metrics": {}, "blind": None, "auc_minus_blind": {},
        "settings": {"n_boot": int(n_boot), "seed": int(seed), "blind_folds": int(blind_folds),
                     "ci": float(ci)},
        "notes": notes,
    }
    texts = docs["text"].fillna("").astype(str).tolist()
    blind, blind_proba = blind_baseline_with_scores(
        texts, is_pre.astype(np.int64), folds=blind_folds, seed=seed, warn_auc=warn_auc,
        n_boot=n_boot, ci=ci)
    out["blind"] = blind
    if blind_proba is None:
        notes.append("model minus blind AUC undefined: the blind baseline was not computed "
                     "(see blind.notes)")
    elif blind["folds"] is not None and blind["folds"] < blind_folds:
        notes.append(f"the blind baseline used {blind['folds']} folds, not {blind_folds}: a "
                     "split has fewer documents than folds")
    if not n_boot:
        notes.append("confidence intervals not computed: n_boot=0")

    for name in metrics:
        values = pd.to_numeric(docs[name], errors="coerce").to_numpy(dtype=float)
        stats, kept = _metric_stats(name, values, is_pre, n_boot=n_boot, ci=ci, seed=seed,
                                    notes=notes)
        out["metrics"][name] = stats
        if blind_proba is None or stats["auc"] is None:
            out["auc_minus_blind"][name] = {"n_pre": stats["n_pre"], "n_post": stats["n_post"],
                                            "model_auc": stats["auc"], "blind_auc": None,
                                            "difference": None, "ci": None}
            continue
        out["auc_minus_blind"][name] = _minus_blind(name, values, blind_proba, is_pre, kept,
                                                    n_boot=n_boot, ci=ci, seed=seed,
                                                    notes=notes)
    return out
