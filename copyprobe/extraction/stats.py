"""The statistics of one (model, dataset): D_pre vs D_post on the per-document measures
(:func:`copyprobe.extraction.analysis.compare_splits`: AUC, Cliff's delta, KS with bootstrap
intervals, the blind text-only baseline, and model AUC minus blind AUC), and the summary the
study's table shows (:func:`copyprobe.extraction.tables.summary`). JSON-able throughout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from copyprobe.extraction.tables import headline_column, metric_columns, summary


def dataset_stats(docs: pd.DataFrame, windows: pd.DataFrame, corpus: pd.DataFrame, *,
                  model: str, dataset: str, analysis: Mapping[str, Any]) -> dict[str, Any]:
    """Documents without a scored window (shorter than one window, or every window failed)
    are left out of the comparison and counted in ``excluded_documents``."""
    from copyprobe.extraction.analysis import compare_splits

    head, st = analysis["headline"], analysis["statistics"]
    metrics = metric_columns(head)
    labelled = docs[docs["split"].isin(["D_pre", "D_post"])]
    usable = labelled[labelled["n_scored"] > 0]
    text = corpus.drop_duplicates("doc_id").set_index("doc_id")["text"]
    frame = usable.assign(text=usable["doc_id"].map(text).fillna(""))
    comparison = compare_splits(frame, metrics=metrics, n_boot=st["n_boot"], seed=st["seed"],
                                blind_folds=st["blind_folds"])
    return {"model": model, "dataset": dataset, "metric": headline_column(head),
            "metrics": metrics, "excluded_documents": int(len(labelled) - len(usable)),
            "summary": summary(windows, docs, head), "comparison": comparison}
