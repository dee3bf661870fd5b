"""One comparison (a model on a dataset): paper-mode f_k, word-mode f_k, per-document scores
and every statistic, assembled into one JSON-serialisable result (the stats JSON).

Reference: docs/msr.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from copyprobe.matching import paper_fk_counts, word_fk_counts
from copyprobe.stats import blind_baseline, cliffs_delta, paper_stats, per_document_stats
from copyprobe.stats.per_document import MIN_DOCUMENTS

#: Version of the stats JSON layout; 2 renamed the ambiguous keys of version 1 (``ks``,
#: ``n_pre``, ``n_post``, ``failed``) and added ``settings``, ``helm`` and ``documents``.
SCHEMA_VERSION = 2

#: Fewer documents than this in either set and the per-document statistics (and the f_k
#: values built from the same documents) are flagged as a small sample; the threshold is the
#: per-document statistics' own.
SMALL_SAMPLE_DOCUMENTS = MIN_DOCUMENTS

PAPER_DIRECTION = ("paper mode: Cliff's delta = P(f_post > f_pre) - P(f_post < f_pre) over "
                   "the f_k values; negative: D_pre has more matching documents")
DOC_DIRECTION = ("per document: Cliff's delta = P(post > pre) - P(post < pre) over the "
                 "documents' scores; negative: D_pre documents have longer matches")

# Word-mode columns of the MATCHES table and their names in the stats JSON.
_WORD_SCORES = {"word_longest": "longest", "word_lcp": "longest_common_prefix",
                "word_edit_similarity": "edit_similarity"}
# Keys of copyprobe.stats results renamed in the stats JSON (the stats package is shared and
# keeps its own names).
_RENAME = {"ks": "ks_statistic", "n_pre": "documents_pre", "n_post": "documents_post"}


def _renamed(stats: Mapping[str, Any], rename: Mapping[str, str] = _RENAME) -> dict[str, Any]:
    return {rename.get(k, k): v for k, v in stats.items()}


def _paper_section(f_pre: list[int], f_post: list[int]) -> dict[str, Any]:
    """paper_stats with unambiguous keys: its n_pre/n_post count f_k values (the length of
    f_pre/f_post), not documents, so they are dropped rather than renamed."""
    s = paper_stats(f_pre, f_post)
    out = {k: v for k, v in _renamed(s).items() if k not in ("documents_pre", "documents_post")}
    out.update(f_pre=f_pre, f_post=f_post, direction=PAPER_DIRECTION)
    return out


def _small_sample(stats: Mapping[str, Any], n_pre: int, n_post: int) -> bool:
    """Flag small samples from the document counts, and also honour a ``small_sample`` flag
    that copyprobe.stats may set itself."""
    return bool(stats.get("small_sample")) or min(n_pre, n_post) < SMALL_SAMPLE_DOCUMENTS


def _document_section(pre: pd.Series, post: pd.Series, statistics: Mapping[str, Any],
                      direction: str) -> dict[str, Any]:
    s = per_document_stats(pre.astype(float).tolist(), post.astype(float).tolist(),
                           n_boot=statistics["n_boot"], seed=statistics["seed"])
    out = _renamed(s)
    out["small_sample"] = _small_sample(s, len(pre), len(post))
    out["direction"] = direction
    return out


def per_document_scores(ok: pd.DataFrame, ks: list[int], k_min: int) -> pd.DataFrame:
    """One row per document with its pooled scores: ``paper_score`` (the longest common
    character substring's word count when unique, else 0), ``longest``,
    ``longest_common_prefix``, ``edit_similarity`` and ``kgrams_k{k}`` (distinct shared
    k-grams)."""
    cols = ["source", "doc_id", "split", "paper_score", *_WORD_SCORES.values(),
            *[f"kgrams_k{k}" for k in ks]]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    # word_kgram_counts holds the counts for k = k_min, k_min + 1, ... in order
    kgrams = pd.DataFrame([[int(c[k - k_min]) for k in ks] for c in ok["word_kgram_counts"]],
                          columns=[f"kgrams_k{k}" for k in ks], index=ok.index)
    paper = ok["paper_lcs_words"].where(ok["paper_unique"].astype(bool), 0)
    ok = pd.concat([ok.rename(columns=_WORD_SCORES), paper.rename("paper_score"), kgrams],
                   axis=1)
    agg: dict[str, Any] = {"split": "first", **{c: "max" for c in cols[3:]}}
    docs = ok[["source", "doc_id", *cols[2:]]].groupby(["source", "doc_id"],
                                                         as_index=False).agg(agg)
    for c in ["paper_score", "longest", "longest_common_prefix", *cols[7:]]:
        docs[c] = docs[c].astype(int)
    docs["edit_similarity"] = docs["edit_similarity"].astype(float)
    return docs[cols]


def analyse(matches: pd.DataFrame, corpus: pd.DataFrame, *, model: str, dataset: str,
            k_min: int, k_max: int, statistics: Mapping[str, Any],
            settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The stats JSON of one model on one dataset.

    ``settings`` (optional) records how the generations were made, e.g. ``{"decoding":
    {"temperature": 0.1, ...}, "msr": {"n": 6, "num_words": 1000}, "backend": ...}``; it is
    stored as given and the table's decoding column reads ``settings["decoding"]``.
    """
    ks = list(range(k_min, k_max + 1))
    notes: list[str] = []
    failed = matches[matches["status"] != "ok"]
    ok = matches[matches["status"] == "ok"]
    docs = per_document_scores(ok, ks, k_min)
    pre, post = docs[docs["split"] == "pre"], docs[docs["split"] == "post"]
    if len(failed):
        notes.append(f"{len(failed)} generation(s) failed and are excluded (not scored as text)")
    for name, part in (("D_pre", pre), ("D_post", post)):
        if part.empty:
            notes.append(f"{name} is empty for this model: no comparison is possible")

    f_pre = paper_fk_counts(pre["paper_score"], ks)
    f_post = paper_fk_counts(post["paper_score"], ks)
    word = {
        "survival_pre": word_fk_counts(pre["longest"], ks),
        "survival_post": word_fk_counts(post["longest"], ks),
        "kgrams_pre": [int(pre[f"kgrams_k{k}"].sum()) for k in ks],
        "kgrams_post": [int(post[f"kgrams_k{k}"].sum()) for k in ks],
    }
    if not any(f_pre) and not any(f_post):
        notes.append(f"paper mode: no document's verbatim match exceeded {k_min} words in "
                     "either set")
    per_doc = _document_section(pre["longest"], post["longest"], statistics, DOC_DIRECTION)
    if per_doc["small_sample"]:
        notes.append(per_doc.get("small_sample_warning") or
                     f"small sample: D_pre has {len(pre)} and D_post has {len(post)} "
                     f"document(s), fewer than {SMALL_SAMPLE_DOCUMENTS} in a set")
    helm = {
        name: _document_section(pre[name], post[name], statistics,
                                DOC_DIRECTION.replace("longer matches", f"higher {name}"))
        for name in ("longest_common_prefix", "edit_similarity")
    }
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
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "dataset": dataset,
        "settings": dict(settings or {}),
        "k_values": ks,
        "documents_pre": len(pre),
        "documents_post": len(post),
        "generations_failed": int(len(failed)),
        "documents_by_source": by_source,
        "paper": _paper_section(f_pre, f_post),
        "word": word,
        "per_document": per_doc,
        "helm": helm,
        "blind_baseline": _renamed(blind),
        "documents": [
            {"source": r.source, "doc_id": r.doc_id, "split": r.split,
             "paper_score": int(r.paper_score), "longest": int(r.longest),
             "longest_common_prefix": int(r.longest_common_prefix),
             "edit_similarity": float(r.edit_similarity)}
            for r in docs.itertuples(index=False)
        ],
        "max_longest": int(docs["longest"].max()) if len(docs) else 0,
        "notes": notes,
    }


def split_scores(result: Mapping[str, Any], split: str, score: str) -> list[float]:
    """One score (``longest``, ``paper_score``, ...) of every document of ``split``."""
    return [d[score] for d in result["documents"] if d["split"] == split]


def compare_settings(result_a: Mapping[str, Any], result_b: Mapping[str, Any], *,
                     label_a: str, label_b: str, split: str) -> dict[str, Any]:
    """Compare two settings of one model (e.g. temperature 0.1 vs 0.7) on one split.

    Paper mode: the MSR paper's statistics over the two f_k vectors of ``split`` (``pre`` or
    ``post``), with Cliff's delta = ``P(f_a > f_b) - P(f_a < f_b)``: positive when setting
    ``a`` has more matching documents (the paper reports +0.5625 for 0.1 vs 0.7). The two
    results must use the same thresholds k.

    Per document: over the documents present in both results (same source and doc_id), the
    paired differences ``longest_a - longest_b`` with a Wilcoxon signed-rank test, and Cliff's
    delta ``P(a > b) - P(a < b)`` over the two unpaired sets of scores.
    """
    if split not in ("pre", "post"):
        raise ValueError(f"split must be 'pre' or 'post', got {split!r}")
    ka, kb = list(result_a["k_values"]), list(result_b["k_values"])
    if ka != kb:
        raise ValueError(f"{label_a} has k_values {ka} and {label_b} has {kb}: paper-mode "
                         "statistics need the same thresholds in both settings")
    fa, fb = result_a["paper"][f"f_{split}"], result_b["paper"][f"f_{split}"]
    # paper_stats(f_pre, f_post) computes P(f_post > f_pre) - ...: pass b as "pre" and a as
    # "post" so that a positive delta means setting a is higher.
    s = paper_stats(fb, fa)
    paper = {k: v for k, v in _renamed(s).items() if k not in ("documents_pre",
                                                                "documents_post", "verdict")}
    paper["notes"] = [n.replace("f_pre", f"f_{label_b}").replace("f_post", f"f_{label_a}")
                      for n in paper["notes"]]
    paper.update(f_a=list(fa), f_b=list(fb), verdict=_verdict(paper, label_a, label_b),
                 direction=f"Cliff's delta = P(f_{label_a} > f_{label_b}) - "
                           f"P(f_{label_a} < f_{label_b}): positive when {label_a} is higher")
    paper.pop("f_pre", None)
    paper.pop("f_post", None)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "settings_comparison",
        "model_a": result_a["model"], "model_b": result_b["model"],
        "dataset": result_a["dataset"],
        "label_a": label_a, "label_b": label_b, "split": split,
        "settings_a": dict(result_a.get("settings") or {}),
        "settings_b": dict(result_b.get("settings") or {}),
        "k_values": ka,
        "paper": paper,
        "paired": _paired(result_a, result_b, split, label_a, label_b),
    }


def _verdict(stats: Mapping[str, Any], label_a: str, label_b: str, alpha: float = 0.05) -> str:
    delta, p = stats["cliffs_delta"], stats["kw_p"]
    if delta is None or p is None:
        return "no test possible"
    if delta == 0 or p >= alpha:
        return f"no difference detected (KW p={p:.4f})"
    return f"{label_a if delta > 0 else label_b} higher (KW p={p:.4f})"


def _paired(result_a: Mapping[str, Any], result_b: Mapping[str, Any], split: str,
            label_a: str, label_b: str) -> dict[str, Any]:
    from scipy.stats import wilcoxon

    def by_doc(result: Mapping[str, Any]) -> dict[tuple[str, str], int]:
        return {(d["source"], d["doc_id"]): d["longest"] for d in result["documents"]
                if d["split"] == split}

    a, b = by_doc(result_a), by_doc(result_b)
    common = sorted(set(a) & set(b))
    diffs = [a[key] - b[key] for key in common]
    out: dict[str, Any] = {
        "score": "longest",
        "documents": len(common),
        "documents_only_a": len(set(a) - set(b)),
        "documents_only_b": len(set(b) - set(a)),
        "a_higher": sum(d > 0 for d in diffs),
        "b_higher": sum(d < 0 for d in diffs),
        "ties": sum(d == 0 for d in diffs),
        "mean_difference": (sum(diffs) / len(diffs)) if diffs else None,
        "cliffs_delta_unpaired": cliffs_delta(list(a.values()), list(b.values())),
        "wilcoxon_statistic": None,
        "wilcoxon_p": None,
        "small_sample": len(common) < SMALL_SAMPLE_DOCUMENTS,
        "direction": (f"differences are {label_a} - {label_b}; Cliff's delta = "
                      f"P({label_a} > {label_b}) - P({label_a} < {label_b}) over all "
                      f"documents of each setting"),
        "notes": [],
    }
    if any(diffs):
        w = wilcoxon(diffs, zero_method="wilcox")
        out["wilcoxon_statistic"], out["wilcoxon_p"] = float(w.statistic), float(w.pvalue)
    elif common:
        out["notes"].append("every paired difference is 0: Wilcoxon test undefined")
    else:
        out["notes"].append(f"no document of split {split!r} is in both settings")
    return out
