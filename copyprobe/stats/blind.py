"""The blind baseline: can D_pre be told from D_post without querying any model?

Reference: docs/statistics.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline

from copyprobe.stats.common import bootstrap_ci, cliffs_delta, finite_or_none, roc_auc

__all__ = ["auc_minus_blind", "blind_baseline", "blind_baseline_with_scores", "blind_scores"]


def _pipeline() -> Pipeline:
    return Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)),
            ("clf", LogisticRegression(max_iter=1000, C=1.0)),
        ]
    )


def _auc(pre: np.ndarray, post: np.ndarray, axis: int = -1) -> np.ndarray:
    """ROC AUC of D_pre (positive) against D_post along ``axis``: ``(1 - delta(post, pre)) / 2``."""
    return (1.0 - cliffs_delta(post, pre, axis=axis)) / 2.0


def _auc_difference(pos: np.ndarray, neg: np.ndarray, axis: int = -1) -> Any:
    """Model AUC minus blind AUC on the same documents: row 0 of each sample holds the
    model's score, row 1 the blind score (the bootstrap resamples the columns together)."""
    return _auc(pos[0], neg[0], axis=axis) - _auc(pos[1], neg[1], axis=axis)


def auc_minus_blind(values: np.ndarray, blind: np.ndarray, positive: np.ndarray, *,
                    n_boot: int, ci: float, seed: int) -> dict[str, Any]:
    """What a model's per-document score tells beyond the text: its ROC AUC minus the blind
    baseline's (out-of-fold scores ``blind``, :func:`blind_scores`) on the same documents
    (``positive``: a boolean mask of the positive class), and a paired percentile-bootstrap
    interval of the difference (each resample draws documents within each class once and
    recomputes both AUCs on them). ``n_pos``, ``n_neg``, ``model_auc``, ``blind_auc``,
    ``difference``, ``ci`` (None without ``n_boot`` or with fewer than one document a class)."""
    positive = np.asarray(positive, dtype=bool)
    pos = np.stack([np.asarray(values, dtype=float)[positive], blind[positive]])
    neg = np.stack([np.asarray(values, dtype=float)[~positive], blind[~positive]])
    out: dict[str, Any] = {"n_pos": int(pos.shape[1]), "n_neg": int(neg.shape[1]),
                           "model_auc": None, "blind_auc": None, "difference": None,
                           "ci": None}
    if min(pos.shape[1], neg.shape[1]) == 0:
        return out
    out["model_auc"] = finite_or_none(_auc(pos[0], neg[0]))
    out["blind_auc"] = finite_or_none(_auc(pos[1], neg[1]))
    if out["model_auc"] is not None and out["blind_auc"] is not None:
        out["difference"] = finite_or_none(out["model_auc"] - out["blind_auc"])
    if n_boot:
        (out["ci"],) = bootstrap_ci([pos, neg], _auc_difference, n_boot=n_boot, ci=ci,
                                    seed=seed)
    return out


def _labels(texts: Sequence[str], labels: Sequence[int], folds: int) -> np.ndarray:
    """The labels as an int array, after the checks of caller errors (``ValueError``)."""
    if len(texts) != len(labels):
        raise ValueError(f"texts ({len(texts)}) and labels ({len(labels)}) differ in length")
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    y = np.asarray([int(v) for v in labels], dtype=np.int64)
    if y.size and not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0 (D_post) or 1 (D_pre)")
    return y


def blind_scores(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    folds: int,
    seed: int,
    notes: list[str] | None = None,
) -> np.ndarray:
    """Out-of-fold probabilities of D_pre, one per document, from the text-only classifier.

    Each document's probability comes from the model fitted on the other folds (stratified
    ``folds``-fold split shuffled with ``seed``; ``folds`` is reduced to the size of the
    smaller class when that is smaller, and the reduction, like any fold whose logistic
    regression did not converge, is appended to ``notes`` when given). These are the scores
    :func:`blind_baseline` summarises; a caller comparing a model's scores with the blind
    baseline on the same resampled documents uses them directly.

    ``ValueError`` for mismatched lengths, labels other than 0/1, ``folds < 2``, fewer than
    2 documents in a class, or texts the classifier cannot be fitted on (no word tokens).
    """
    y = _labels(texts, labels, folds)
    notes = [] if notes is None else notes
    n_pre, n_post = int((y == 1).sum()), int((y == 0).sum())
    if min(n_pre, n_post) < 2:
        raise ValueError(f"fewer than 2 documents in a class (D_pre has {n_pre}, D_post has "
                         f"{n_post}); cross-validation needs at least 2 per class")
    k = min(folds, n_pre, n_post)
    if k < folds:
        notes.append(
            f"folds reduced from {folds} to {k}: the smaller class has only {k} documents"
        )

    proba = np.empty(y.size, dtype=float)
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    docs_arr = np.asarray(["" if t is None else str(t) for t in texts], dtype=object)
    converge_issues = 0
    try:
        for train_idx, test_idx in splitter.split(docs_arr, y):
            model = _pipeline()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model.fit(list(docs_arr[train_idx]), y[train_idx])
            converge_issues += sum("converge" in str(w.message).lower() for w in caught)
            classes = list(model.classes_)
            proba[test_idx] = model.predict_proba(list(docs_arr[test_idx]))[:, classes.index(1)]
    except ValueError as exc:  # e.g. empty vocabulary: no word tokens in a training fold
        raise ValueError(f"the classifier could not be fitted ({exc})") from exc
    if converge_issues:
        notes.append(
            f"logistic regression did not fully converge in {converge_issues} fold(s)"
        )
    return proba


def blind_baseline(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    folds: int,
    seed: int,
    warn_auc: float,
    n_boot: int,
    ci: float = 0.95,
) -> dict[str, Any]:
    """Out-of-fold AUC of a text-only classifier predicting D_pre (1) vs D_post (0).

    Parameters
    ----------
    texts, labels:
        One document text and one label per document: 1 = D_pre, 0 = D_post. Lengths must
        match and labels must be 0/1 (else ``ValueError``: these are caller errors).
    folds:
        Requested number of stratified folds (>= 2); reduced to the size of the smaller
        class when that is smaller (recorded in ``notes``).
    seed:
        Seed for the fold shuffle and the bootstrap; results are deterministic given it.
    warn_auc:
        ``warning`` is True when ``auc >= warn_auc``.
    n_boot, ci:
        Bootstrap replicates and confidence level of ``auc_ci`` (``n_boot=0``: no CI).

    Returns
    -------
    dict with keys ``auc``, ``auc_ci``, ``accuracy``, ``folds``, ``n_pre``, ``n_post``,
    ``warning``, ``message``, ``notes``. With fewer than 2 documents in a class (or no
    usable word tokens) ``auc``/``auc_ci``/``accuracy``/``folds`` are ``None``, ``warning``
    is False and ``notes`` says why; no exception.
    """
    return blind_baseline_with_scores(texts, labels, folds=folds, seed=seed,
                                      warn_auc=warn_auc, n_boot=n_boot, ci=ci)[0]


def blind_baseline_with_scores(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    folds: int,
    seed: int,
    warn_auc: float,
    n_boot: int,
    ci: float = 0.95,
) -> tuple[dict[str, Any], np.ndarray | None]:
    """:func:`blind_baseline` and the out-of-fold scores it summarises (:func:`blind_scores`;
    ``None`` where the baseline is undefined), from one fit."""
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie in (0, 1), got {ci}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    y = _labels(texts, labels, folds)

    n_pre = int((y == 1).sum())
    n_post = int((y == 0).sum())
    notes: list[str] = []
    out: dict[str, Any] = {
        "auc": None,
        "auc_ci": None,
        "accuracy": None,
        "folds": None,
        "n_pre": n_pre,
        "n_post": n_post,
        "warning": False,
        "message": "",
        "notes": notes,
    }

    small = [name for name, n in (("D_pre", n_pre), ("D_post", n_post)) if n < 2]
    if small:
        notes.append(
            f"blind baseline undefined: fewer than 2 documents in {' and '.join(small)} "
            f"(D_pre has {n_pre}, D_post has {n_post}); cross-validation needs at least 2 "
            "per class"
        )
        out["message"] = (
            f"Blind baseline not computed: fewer than 2 documents in {' and '.join(small)}."
        )
        return out, None

    try:
        proba = blind_scores(texts, y, folds=folds, seed=seed, notes=notes)
    except ValueError as exc:  # e.g. empty vocabulary: no word tokens in a training fold
        notes.append(f"blind baseline undefined: {exc}")
        out["message"] = "Blind baseline not computed: the texts gave the classifier nothing to fit."
        return out, None
    out["folds"] = min(folds, n_pre, n_post)

    auc = finite_or_none(roc_auc(proba, y))
    out["auc"] = auc
    out["accuracy"] = finite_or_none(np.mean((proba >= 0.5).astype(np.int64) == y))
    if n_boot:
        (out["auc_ci"],) = bootstrap_ci([proba[y == 1], proba[y == 0]], _auc, n_boot=n_boot,
                                        ci=ci, seed=seed)
    else:
        notes.append("AUC confidence interval not computed: n_boot=0")
    if n_pre + n_post < 20:
        notes.append(
            f"only {n_pre + n_post} documents: the cross-validated AUC is very noisy"
        )

    if auc is None:
        out["message"] = "Blind baseline AUC undefined."
        return out, proba
    out["warning"] = bool(auc >= warn_auc)
    ci_lo = out["auc_ci"][0] if out["auc_ci"] else None
    if out["warning"]:
        out["message"] = (
            f"A text-only classifier separates D_pre from D_post with AUC {auc:.2f} without "
            "querying any model: differences between the sets may reflect topic or style, "
            "not membership."
        )
    elif ci_lo is not None and ci_lo > 0.5:
        out["message"] = (
            f"A text-only classifier partly separates D_pre from D_post (AUC {auc:.2f}, below "
            f"the warning level {warn_auc:.2f} but above chance): some topic or style drift "
            "between the sets is present; interpret membership differences with care."
        )
    else:
        out["message"] = (
            f"A text-only classifier cannot separate D_pre from D_post (AUC {auc:.2f}): the "
            "split is not trivially separable from text alone."
        )
    return out, proba
