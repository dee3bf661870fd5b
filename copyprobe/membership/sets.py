"""The standard membership scores where the studies compare D_pre with D_post: each score's
AUC and TPR at low FPR (:func:`copyprobe.membership.compare.compare_sets`, D_pre the
candidate members), AUC minus blind AUC, and dataset inference of D_pre against D_post, with
the caveat that a date split is not a random one; its tables in :mod:`.tables`
(docs/membership.md, "Set comparisons").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.membership.compare import compare_sets
from copyprobe.membership.inference import DEFAULT_AGGREGATE, dataset_inference
from copyprobe.membership.scores import MEASURES, NEEDS_MOMENTS, NEEDS_REFERENCE, oriented
from copyprobe.membership.tables import DATE_SPLIT_NOTE, SPLITS


def unavailable(*, has_moments: bool, reference: bool,
                backend: str = "") -> dict[str, str]:
    """The scores a model cannot give, each with the reason (printed in the table)."""
    out: dict[str, str] = {}
    if not has_moments:
        for name in NEEDS_MOMENTS:
            out[name] = (f"backend {backend or '?'} gives no next-token distribution "
                         "(mean and standard deviation of the log-probability), which Min-k%++ "
                         "needs")
    if not reference:
        for name in NEEDS_REFERENCE:
            out[name] = "no reference model configured"
    return out


def available_measures(missing: Mapping[str, str]) -> list[str]:
    """The scores of :data:`MEASURES` that are not in ``missing``, in their order."""
    return [m for m in MEASURES if m not in missing]


def compare_date_split(docs: pd.DataFrame, *, missing: Mapping[str, str] | None = None,
                       n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                       blind_folds: int = 5, warn_auc: float = 0.75, di_splits: int = 10,
                       di_aggregate: str = DEFAULT_AGGREGATE) -> dict[str, Any]:
    """D_pre against D_post on every available membership score. ``docs``: ``doc_id``,
    ``text``, ``split`` (``D_pre``/``D_post``) and a column per score of
    :func:`available_measures`. Returns :func:`compare_sets`' result plus ``missing`` (score:
    reason), ``dataset_inference`` (its result, or ``p_value`` None with ``error``) and
    ``date_split_note``. ``ValueError`` for an unknown split label."""
    missing = dict(missing or {})
    bad = sorted(set(docs["split"].astype(str)) - set(SPLITS))
    if bad:
        raise ValueError(f"membership set comparison: split label(s) {bad}, expected {SPLITS}")
    measures = available_measures(missing)
    data = docs.assign(member=docs["split"].astype(str) == SPLITS[0])
    out = compare_sets(data, measures, n_boot=n_boot, seed=seed, ci=ci,
                       blind_folds=blind_folds, warn_auc=warn_auc)
    out["missing"] = missing
    features = oriented(data, measures)
    kept = np.isfinite(features).all(axis=1)
    member = data["member"].to_numpy(bool)
    try:
        out["dataset_inference"] = dataset_inference(
            features[kept & member], features[kept & ~member], splits=di_splits, seed=seed,
            aggregate=di_aggregate)
    except ValueError as exc:
        out["dataset_inference"] = {"p_value": None, "error": str(exc),
                                    "aggregate": di_aggregate}
    out["date_split_note"] = DATE_SPLIT_NOTE
    return out


#: the tokens of each document scored (its first ones), as ``membership-score``'s default
MAX_TOKENS = 512


def score_date_split(docs: pd.DataFrame, spec: Mapping[str, Any], manifest: Mapping[str, Any],
                     statistics: Mapping[str, Any]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Score a (model, dataset)'s curated documents (``doc_id``, ``text``, ``split`` pre/post;
    other splits left out) in one cached teacher-forced pass and compare D_pre with D_post
    (:func:`compare_date_split`, settings from the config's ``statistics``). A model that
    cannot score a given text gets ``{"skipped": reason}`` and an empty table."""
    from copyprobe.generation.logprob_scoring import cannot_score_reason
    from copyprobe.membership.engine import SCORES, Model, score_table

    reason = cannot_score_reason(str(spec["name"]), spec)
    if reason is not None:
        return ({"skipped": f"no membership scores: {reason}"},
                pd.DataFrame(columns=SCORES.columns))
    model = Model.from_slice(spec, manifest)
    labels = {"pre": SPLITS[0], "post": SPLITS[1]}
    docs = docs[docs["split"].isin(labels)].assign(split=lambda d: d["split"].map(labels))
    docs = docs.reset_index(drop=True)
    moments = model.has_moments()
    table = score_table(docs, model, max_tokens=MAX_TOKENS, moments=moments)
    scored = docs.merge(table[table["status"] == "scored"].drop(columns=["model"]),
                        on="doc_id")
    missing = unavailable(has_moments=moments, reference=False, backend=spec["backend"])
    st = dict(statistics)
    try:
        result = compare_date_split(
            scored, missing=missing, n_boot=st["n_boot"], seed=st["seed"],
            blind_folds=st["blind_folds"], warn_auc=st["blind_warn_auc"],
            di_splits=st["di_splits"], di_aggregate=st["di_aggregate"])
    except ValueError as exc:  # fewer than 2 scored documents in a split
        return {"skipped": f"no comparison: {exc}"}, table
    result["failed_documents"] = int(len(table) - len(scored))
    return result, table

