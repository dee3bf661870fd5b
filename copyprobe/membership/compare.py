"""Members against non-members on each membership score: ROC AUC and TPR at 1% and 0.1% FPR
with percentile-bootstrap intervals (documents resampled within each class), beside the
blind text-only baseline (:mod:`copyprobe.stats.blind`) and "AUC minus blind AUC" with its
paired interval. Scores are oriented by :data:`copyprobe.membership.scores.MEASURES` so that
the member class is the positive one. Undefined numbers are None with a reason in ``notes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.membership.scores import MEASURES
from copyprobe.stats.blind import auc_minus_blind, blind_baseline_with_scores
from copyprobe.stats.common import (
    bootstrap_ci,
    cliffs_delta,
    finite_or_none,
    roc_auc,
    tpr_at_fpr,
    tpr_at_fpr_along,
)
from copyprobe.stats.per_document import MIN_DOCUMENTS

#: the false-positive rates of the TPR columns, and their names
FPRS = {"tpr_at_1pct_fpr": 0.01, "tpr_at_0.1pct_fpr": 0.001}


def _roc_figures(pos: np.ndarray, neg: np.ndarray, axis: int = -1) -> np.ndarray:
    """AUC and the TPR at each of :data:`FPRS`, along ``axis`` (for the bootstrap)."""
    auc = (1.0 - cliffs_delta(neg, pos, axis=axis)) / 2.0
    return np.stack([auc, *(tpr_at_fpr_along(pos, neg, f, axis=axis) for f in FPRS.values())])


def measure_stats(values: np.ndarray, member: np.ndarray, *, n_boot: int, ci: float,
                  seed: int) -> dict[str, Any]:
    """AUC and TPR at low FPR of one oriented score (higher: member), with intervals."""
    pos, neg = values[member], values[~member]
    labels = member.astype(np.int64)
    out: dict[str, Any] = {"auc": finite_or_none(roc_auc(values, labels)), "auc_ci": None}
    for name, fpr in FPRS.items():
        out[name] = finite_or_none(tpr_at_fpr(values, labels, fpr))
        out[f"{name}_ci"] = None
    if n_boot:
        intervals = bootstrap_ci([pos, neg], _roc_figures, n_boot=n_boot, ci=ci, seed=seed)
        for name, interval in zip(["auc", *FPRS], intervals, strict=True):
            out[f"{name}_ci"] = interval
    return out


def compare_sets(docs: pd.DataFrame, measures: Sequence[str], *, n_boot: int = 1000,
                 seed: int = 0, ci: float = 0.95, blind_folds: int = 5,
                 warn_auc: float = 0.6,
                 orientation: Mapping[str, int] = MEASURES) -> dict[str, Any]:
    """Compare members with non-members on each of ``measures``, each signed by
    ``orientation`` (default: the membership scores' :data:`MEASURES`) so that higher means
    "member".

    ``docs``: ``doc_id``, ``text`` (what the blind baseline reads), ``member`` (bool) and a
    column per measure (its natural sign; oriented here). A document without a finite value
    of a measure is left out of that measure, with a note. Returns ``n_members``,
    ``n_nonmembers``, ``measures`` (per measure: ``auc``, ``auc_ci``, ``tpr_at_1pct_fpr``,
    ``tpr_at_0.1pct_fpr``, each with ``_ci``, ``auc_minus_blind``, ``auc_minus_blind_ci``,
    ``n_members``, ``n_nonmembers``, ``direction``), ``blind_auc``, ``blind_auc_ci``,
    ``blind`` (the baseline's summary), ``small_sample``, ``small_sample_warning``,
    ``settings`` and ``notes``. ``warn_auc``: a blind AUC at or above it gets a warning (on a
    randomised split it should be about 0.5). ``ValueError`` for a missing column or a class
    with fewer than 2 documents."""
    missing = [c for c in ("doc_id", "text", "member", *measures) if c not in docs.columns]
    if missing:
        raise ValueError(f"compare_sets: no column(s) {missing} (columns: {list(docs.columns)})")
    member = docs["member"].astype(bool).to_numpy()
    n_pos, n_neg = int(member.sum()), int((~member).sum())
    if min(n_pos, n_neg) < 2:
        raise ValueError(f"comparing members with non-members needs at least 2 documents in "
                         f"each class ({n_pos} members, {n_neg} non-members)")
    notes: list[str] = []
    texts = docs["text"].fillna("").astype(str).tolist()
    blind, blind_proba = blind_baseline_with_scores(texts, member.astype(np.int64),
                                                    folds=blind_folds, seed=seed,
                                                    warn_auc=warn_auc, n_boot=n_boot, ci=ci)
    out: dict[str, Any] = {
        "n_members": n_pos, "n_nonmembers": n_neg, "measures": {},
        "blind_auc": blind["auc"], "blind_auc_ci": blind["auc_ci"], "blind": blind,
        "small_sample": min(n_pos, n_neg) < MIN_DOCUMENTS, "small_sample_warning": "",
        "settings": {"n_boot": n_boot, "seed": seed, "ci": ci, "blind_folds": blind_folds},
        "notes": notes,
    }
    if out["small_sample"]:
        out["small_sample_warning"] = (
            f"small sample: {n_pos} members and {n_neg} non-members, fewer than "
            f"{MIN_DOCUMENTS} in a class; the AUCs and intervals carry little information")
    if blind["auc"] is not None and blind["auc"] >= warn_auc:
        notes.append(f"the blind baseline separates members from non-members (AUC "
                     f"{blind['auc']:.2f}) without any model: the sets differ in their text, "
                     "so a measure's AUC is not membership alone (a randomised split gives "
                     "about 0.5)")
    for name, fpr in FPRS.items():
        if n_neg * fpr < 1:
            notes.append(f"{name}: {n_neg} non-members allow no false positive at FPR {fpr:g}, "
                         "so it is the TPR at FPR 0")
    for name in measures:
        values = orientation[name] * pd.to_numeric(docs[name], errors="coerce").to_numpy(float)
        kept = np.isfinite(values)
        if not kept.all():
            notes.append(f"{name}: {int((~kept).sum())} document(s) without a value left out")
        if min(int((kept & member).sum()), int((kept & ~member).sum())) < 2:
            notes.append(f"{name}: fewer than 2 documents with a value in a class; no comparison")
            continue
        stats = measure_stats(values[kept], member[kept], n_boot=n_boot, ci=ci, seed=seed)
        stats.update(n_members=int((kept & member).sum()),
                     n_nonmembers=int((kept & ~member).sum()),
                     direction="higher" if orientation[name] > 0 else "lower",
                     auc_minus_blind=None, auc_minus_blind_ci=None)
        if blind_proba is not None:
            diff = auc_minus_blind(values[kept], blind_proba[kept], member[kept],
                                   n_boot=n_boot, ci=ci, seed=seed)
            stats["auc_minus_blind"], stats["auc_minus_blind_ci"] = diff["difference"], diff["ci"]
        out["measures"][name] = stats
    return out
