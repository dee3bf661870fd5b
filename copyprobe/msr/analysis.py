"""One comparison (a model on a dataset): paper-mode f_k, word-mode f_k, per-document scores
and every statistic, assembled into one JSON-serialisable result.

Per document, several samples (temperature > 0) are pooled: a document counts at k in paper
mode when any of its samples does, and its word-mode score is the longest match over samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.stats import blind_baseline, paper_stats, per_document_stats


def _paper_counts(doc: pd.DataFrame, ks: list[int]) -> list[int]:
    return [int(((doc["paper_lcs_words"] > k) & doc["paper_unique"]).sum()) for k in ks]


def _per_doc(ok: pd.DataFrame, ks: list[int], k_min: int) -> pd.DataFrame:
    """One row per document with its pooled scores."""
    if ok.empty:
        return pd.DataFrame(columns=["source", "doc_id", "split", "word_longest", "word_lcp",
                                     "word_edit_similarity", *[f"paper_k{k}" for k in ks],
                                     *[f"kgrams_k{k}" for k in ks]])
    ok = ok.copy()
    for k in ks:
        ok[f"paper_k{k}"] = (ok["paper_lcs_words"] > k) & ok["paper_unique"]
        ok[f"kgrams_k{k}"] = ok["word_kgram_counts"].map(lambda c, i=k - k_min: int(c[i]))
    agg: dict[str, Any] = {"split": "first", "word_longest": "max", "word_lcp": "max",
                           "word_edit_similarity": "max"}
    agg.update({f"paper_k{k}": "max" for k in ks})
    agg.update({f"kgrams_k{k}": "max" for k in ks})
    return ok.groupby(["source", "doc_id"], as_index=False).agg(agg)


def analyse(matches: pd.DataFrame, corpus: pd.DataFrame, *, model: str, dataset: str,
            k_min: int, k_max: int, statistics: Mapping[str, Any]) -> dict[str, Any]:
    ks = list(range(k_min, k_max + 1))
    notes: list[str] = []
    failed = matches[matches["status"] != "ok"]
    ok = matches[matches["status"] == "ok"]
    docs = _per_doc(ok, ks, k_min)
    pre, post = docs[docs["split"] == "pre"], docs[docs["split"] == "post"]
    if len(failed):
        notes.append(f"{len(failed)} generation(s) failed and are excluded (not scored as text)")
    for name, part in (("D_pre", pre), ("D_post", post)):
        if part.empty:
            notes.append(f"{name} is empty for this model: no comparison is possible")

    def fk(part: pd.DataFrame, prefix: str) -> list[int]:
        return [int(part[f"{prefix}{k}"].sum()) if len(part) else 0 for k in ks]

    f_pre, f_post = fk(pre, "paper_k"), fk(post, "paper_k")
    word = {
        "survival_pre": [int((pre["word_longest"] >= k).sum()) for k in ks],
        "survival_post": [int((post["word_longest"] >= k).sum()) for k in ks],
        "kgrams_pre": fk(pre, "kgrams_k"),
        "kgrams_post": fk(post, "kgrams_k"),
    }
    if not any(f_pre) and not any(f_post):
        notes.append(f"paper mode: no document's verbatim match exceeded {k_min} words in "
                     "either set")
    longest_pre = pre["word_longest"].astype(float).tolist()
    longest_post = post["word_longest"].astype(float).tolist()
    per_doc = per_document_stats(longest_pre, longest_post, n_boot=statistics["n_boot"],
                                 seed=statistics["seed"])
    texts = corpus.set_index(["source", "doc_id"])["text"]
    labelled = [(texts[(r.source, r.doc_id)], 1 if r.split == "pre" else 0)
                for r in docs.itertuples(index=False)]
    blind = blind_baseline([t for t, _ in labelled], [y for _, y in labelled],
                           folds=statistics["blind_folds"], seed=statistics["seed"],
                           warn_auc=statistics["blind_warn_auc"], n_boot=statistics["n_boot"])
    if blind.get("warning"):
        notes.append("blind baseline: " + blind["message"])
    by_source = (docs.groupby(["source", "split"]).size().rename("documents").reset_index()
                 .to_dict(orient="records"))
    return {
        "model": model,
        "dataset": dataset,
        "ks": ks,
        "n_pre": len(pre),
        "n_post": len(post),
        "failed": int(len(failed)),
        "documents_by_source": by_source,
        "paper": {"f_pre": f_pre, "f_post": f_post, **paper_stats(f_pre, f_post)},
        "word": word,
        "per_document": per_doc,
        "blind_baseline": blind,
        "scores": {
            "longest_pre": [int(x) for x in longest_pre],
            "longest_post": [int(x) for x in longest_post],
            "max_longest": int(np.max(longest_pre + longest_post)) if len(docs) else 0,
        },
        "notes": notes,
    }
