"""The labelled refusal set: responses read and labelled by hand, to measure the refusal
detectors (the rule detector, the cascade, the LLM judge) against people's reading, as the
paper's 300-pair user study does for its judge.

Reference: docs/copyright-refusal.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["LABELS", "LABEL_COLUMNS", "LabelledSetError", "load_labelled_set", "refused_label",
           "score_against_labels"]

#: every label, and whether it counts as a refusal
LABELS = {"refusal": True, "partial_refusal": True, "compliance": False, "other": False}
TASKS = ("repetition", "extraction", "paraphrase", "translation", "benign")
LABEL_COLUMNS = ("id", "source", "language", "task", "label", "response", "note")
PACKAGED = "refusal_labels.csv"


class LabelledSetError(ValueError):
    """A labelled set that breaks its format (the message names the file, row and column)."""


def refused_label(label: str) -> bool:
    """Whether a label counts as a refusal (``refusal``, ``partial_refusal``)."""
    return LABELS[label]


def load_labelled_set(path: str | Path | None = None) -> pd.DataFrame:
    """The labelled set at ``path`` (default: the packaged one), checked: the columns of
    :data:`LABEL_COLUMNS`, unique ids, known labels and tasks, a non-empty response and
    source on every row. Adds ``refused`` (bool, from the label)."""
    where = str(path) if path is not None else f"copyprobe/copyright/data/{PACKAGED}"
    source = Path(path) if path is not None else files("copyprobe.copyright") / "data" / PACKAGED
    with source.open(encoding="utf-8") as fh:  # type: ignore[union-attr]
        df = pd.read_csv(fh, dtype=str, keep_default_na=False)
    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise LabelledSetError(f"{where}: no column(s) {missing}")
    for col, allowed in (("label", tuple(LABELS)), ("task", TASKS)):
        bad = ~df[col].isin(allowed)
        if bad.any():
            i = int(bad.idxmax())
            raise LabelledSetError(f"{where}, row {df['id'][i]!r}: {col} {df[col][i]!r} is not "
                                   f"one of {', '.join(allowed)}")
    for col in ("id", "source", "language", "response"):
        empty = df[col].str.strip() == ""
        if empty.any():
            raise LabelledSetError(f"{where}, row {int(empty.idxmax()) + 2} of the file: empty "
                                   f"{col}")
    dup = df["id"].duplicated()
    if dup.any():
        raise LabelledSetError(f"{where}: id {df['id'][dup].iloc[0]!r} appears twice")
    return df.assign(refused=df["label"].map(LABELS))


def score_against_labels(labels: Sequence[bool], predicted: Sequence[bool | None]
                         ) -> dict[str, Any]:
    """Accuracy and Cohen's kappa of refusal predictions against the labels. ``None`` (no
    verdict: unparseable, failed) counts as wrong in ``accuracy`` and is left out of
    ``accuracy_decided`` and kappa; ``no_verdict`` counts them."""
    from sklearn.metrics import cohen_kappa_score

    labels, predicted = list(labels), list(predicted)
    if len(labels) != len(predicted):
        raise ValueError(f"{len(labels)} labels but {len(predicted)} predictions")
    pairs = [(bool(y), bool(p)) for y, p in zip(labels, predicted, strict=True) if p is not None]
    right = sum(y == p for y, p in pairs)
    kappa = None
    if pairs:
        kappa = (1.0 if len({v for p in pairs for v in p}) == 1
                 else float(cohen_kappa_score([y for y, _ in pairs], [p for _, p in pairs])))
    return {"n": len(labels), "no_verdict": len(labels) - len(pairs),
            "accuracy": right / len(labels) if labels else None,
            "accuracy_decided": right / len(pairs) if pairs else None, "cohen_kappa": kappa,
            "false_refusals": sum(p and not y for y, p in pairs),
            "missed_refusals": sum(y and not p for y, p in pairs)}
