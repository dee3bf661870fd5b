"""The curation report of one model: what went into D_pre and D_post, and what did not.

Reference: docs/curation.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from copyprobe.artifacts import CURATION_REPORT
from copyprobe.curation.dedup import DedupSettings, Match, cross_group_pairs
from copyprobe.curation.split import EXCLUSIONS, as_date
from copyprobe.curation.table import models_rows
from copyprobe.stats import blind_baseline

SPLITS = ("pre", "post", "none")
PAIR_COLUMNS = ["dataset", "source", "doc_id", "split", "other_source", "other_doc_id",
                "other_split", "kind", "similarity"]
_KEY_SEP = "\x1f"


@dataclass
class CurationReport:
    model: str
    cutoff: dt.date
    table: pd.DataFrame  # CURATION_REPORT rows
    pairs: pd.DataFrame  # duplicates across a dataset's sources (PAIR_COLUMNS)
    by_source: pd.DataFrame  # per source: corpus rows, other versions, kept pre/post, excluded
    dropped: pd.DataFrame  # the curated rows dropped as duplicates within a source
    settings: dict[str, Any]

    def to_markdown(self) -> str:
        return render_markdown(self)


def _quantiles(n_words: pd.Series) -> dict[str, float]:
    names = ("words_min", "words_p25", "words_median", "words_p75", "words_max")
    if n_words.empty:
        return dict.fromkeys(names, float("nan"))
    values = np.percentile(n_words.to_numpy(dtype=float), [0, 25, 50, 75, 100])
    return dict(zip(names, (float(v) for v in values), strict=True))


def _licences(part: pd.DataFrame) -> list[tuple[str, int]]:
    counts = part["licence"].fillna("").replace("", "(none)").value_counts()
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


def _cross_pairs(dataset: str, kept: pd.DataFrame, settings: DedupSettings) -> pd.DataFrame:
    kept = kept.sort_values(["published", "source", "doc_id"])
    triples = ((r.source, f"{r.source}{_KEY_SEP}{r.doc_id}", r.text)
               for r in kept.itertuples(index=False))
    split_of = {(r.source, r.doc_id): r.split for r in kept.itertuples(index=False)}
    rows = []
    found: list[tuple[str, Match]] = cross_group_pairs(triples, settings)
    for key, m in found:
        (src, doc), (osrc, odoc) = key.split(_KEY_SEP), m.of.split(_KEY_SEP)
        rows.append({"dataset": dataset, "source": src, "doc_id": doc,
                     "split": split_of[(src, doc)], "other_source": osrc, "other_doc_id": odoc,
                     "other_split": split_of[(osrc, odoc)], "kind": m.kind,
                     "similarity": m.similarity})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _blind(kept: pd.DataFrame, statistics: Mapping[str, Any]) -> dict[str, Any]:
    labelled = kept[kept["split"].isin(["pre", "post"])]
    b = blind_baseline(labelled["text"].tolist(), (labelled["split"] == "pre").astype(int).tolist(),
                       folds=statistics["blind_folds"], seed=statistics["seed"],
                       warn_auc=statistics["blind_warn_auc"], n_boot=statistics["n_boot"])
    ci = b["auc_ci"] or [None, None]
    note = " ".join([b["message"], *(f"{n[0].upper()}{n[1:]}." for n in b["notes"])]).strip()
    nan = float("nan")
    return {"blind_auc": nan if b["auc"] is None else b["auc"],
            "blind_auc_low": nan if ci[0] is None else ci[0],
            "blind_auc_high": nan if ci[1] is None else ci[1],
            "blind_folds": b["folds"], "blind_note": note}


def build_report(
    curated: pd.DataFrame,
    corpus: pd.DataFrame,
    *,
    model: str,
    cutoff: dt.date,
    datasets: Mapping[str, Sequence[str]],
    statistics: Mapping[str, Any],
    dedup: DedupSettings | Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> CurationReport:
    """The report of one model from its CURATED tables and the CORPUS tables they came from
    (``curated`` and ``corpus`` hold every source of the model, concatenated).

    ``datasets`` maps each dataset to its sources; ``statistics`` gives the blind baseline's
    ``blind_folds``, ``seed``, ``blind_warn_auc`` and ``n_boot``; ``dedup`` the method for
    duplicates across sources (the one used within sources); ``settings`` is shown as given.
    """
    dd = dedup if isinstance(dedup, DedupSettings) else DedupSettings.from_params(dedup)
    mine = models_rows(corpus, cutoff)
    merged = curated.merge(mine[["source", "doc_id", "text", "licence"]],
                           on=["source", "doc_id"], how="left", validate="one_to_one")
    missing = merged[merged["text"].isna()]
    if len(missing):
        first = missing.iloc[0]
        raise ValueError(f"curated document {first['source']}/{first['doc_id']} of model "
                         f"{model!r} is not in the corpus of its source")
    rows, pairs = [], []
    for name, members in datasets.items():
        part = merged[merged["source"].isin(members)]
        kept = part[part["kept"]]
        dpairs = _cross_pairs(name, kept, dd)
        pairs.append(dpairs)
        blind = _blind(kept, statistics)
        other_versions = int(corpus["source"].isin(members).sum()
                             - mine["source"].isin(members).sum())
        for split in SPLITS:
            sp = part[part["split"] == split]
            sk = sp[sp["kept"]]
            dropped = sp[~sp["kept"]]
            in_pairs = dpairs[dpairs["split"] == split]
            as_other = dpairs[dpairs["other_split"] == split]
            crossed = (set(zip(in_pairs["source"], in_pairs["doc_id"], strict=True))
                       | set(zip(as_other["other_source"], as_other["other_doc_id"], strict=True)))
            leaking = (set(zip(in_pairs.loc[in_pairs["other_split"] != split, "source"],
                               in_pairs.loc[in_pairs["other_split"] != split, "doc_id"],
                               strict=True))
                       | set(zip(as_other.loc[as_other["split"] != split, "other_source"],
                                 as_other.loc[as_other["split"] != split, "other_doc_id"],
                                 strict=True)))
            dates = [d for d in (as_date(v) for v in sk["published"]) if d is not None]
            rows.append({
                "model": model, "cutoff": cutoff, "dataset": name, "sources": list(members),
                "split": split, "kept": len(sk), "excluded": len(dropped),
                **{f"excluded_{code}": int((dropped["exclusion"] == code).sum())
                   for code in EXCLUSIONS},
                "published_min": min(dates) if dates else None,
                "published_max": max(dates) if dates else None,
                **_quantiles(sk["n_words"]),
                "licences": _licences(sk),
                "cross_source_duplicates": len(crossed), "cross_split_duplicates": len(leaking),
                "other_versions": other_versions, **blind,
            })
    by_source = pd.DataFrame([
        {"source": s,
         "corpus_rows": int((corpus["source"] == s).sum()),
         "other_versions": int((corpus["source"] == s).sum() - (mine["source"] == s).sum()),
         "kept_pre": int((g["kept"] & (g["split"] == "pre")).sum()),
         "kept_post": int((g["kept"] & (g["split"] == "post")).sum()),
         "excluded": int((~g["kept"]).sum())}
        for s, g in curated.groupby("source", sort=True)
    ], columns=["source", "corpus_rows", "other_versions", "kept_pre", "kept_post", "excluded"])
    dups = curated[curated["exclusion"].isin(["exact_duplicate", "near_duplicate"])]
    return CurationReport(
        model=model, cutoff=cutoff, table=pd.DataFrame(rows, columns=CURATION_REPORT.columns),
        pairs=pd.concat(pairs, ignore_index=True) if pairs else pd.DataFrame(columns=PAIR_COLUMNS),
        by_source=by_source, dropped=dups.sort_values(["source", "doc_id"]),
        settings={"dedup": dd.__dict__, **dict(settings or {})})


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


#: At most this many duplicate pairs or dropped documents are listed in the Markdown.
LIST_LIMIT = 50


def render_markdown(rep: CurationReport) -> str:
    s = rep.settings
    d = DedupSettings(**s["dedup"])
    lines = [f"# Curation report: {rep.model} (cutoff {rep.cutoff.isoformat()})", ""]
    if "margin_before_days" in s:
        lines.append(f"D_pre: published more than {s['margin_before_days']} day(s) before the "
                     f"cutoff; D_post: more than {s['margin_after_days']} day(s) after it. "
                     f"Length window: {s.get('min_words', 0)} to "
                     f"{s.get('max_words') or 'any number of'} words.")
    method = []
    if d.exact:
        method.append("exact (same text after lowercasing and collapsing whitespace)")
    if d.near:
        method.append(f"near (Jaccard similarity of word {d.shingle_words}-shingles >= "
                      f"{d.threshold}; candidates from MinHash LSH, {d.num_perm} permutations, "
                      f"seed {d.seed}, each confirmed exactly)")
    lines += [f"Duplicates: {' and '.join(method) if method else 'not removed'}; the earliest "
              "published copy is kept (then the first doc_id).", ""]
    for name, part in rep.table.groupby("dataset", sort=False):
        first = part.iloc[0]
        lines += [f"## Dataset {name} (sources: {', '.join(first['sources'])})", ""]
        body = []
        for r in part.itertuples(index=False):
            excluded = ", ".join(f"{code.replace('_', ' ')} {getattr(r, 'excluded_' + code)}"
                                 for code in EXCLUSIONS if getattr(r, "excluded_" + code))
            dates = (f"{r.published_min} to {r.published_max}" if r.published_min is not None
                     and not pd.isna(r.published_min) else "–")
            words = " / ".join(_num(getattr(r, c)) for c in
                               ("words_min", "words_p25", "words_median", "words_p75", "words_max"))
            lic = ", ".join(f"{k} {v}" for k, v in r.licences) or "–"
            body.append([r.split, r.kept, r.excluded, excluded or "–", dates, words, lic,
                         r.cross_source_duplicates, r.cross_split_duplicates])
        lines += _table(["split", "kept", "excluded", "excluded by reason", "published",
                         "words min / p25 / median / p75 / max", "licences",
                         "duplicates in another source", "of which across the cutoff"], body)
        auc = first["blind_auc"]
        ci = (f" (95% CI {first['blind_auc_low']:.2f} to {first['blind_auc_high']:.2f})"
              if not pd.isna(first["blind_auc_low"]) else "")
        lines += ["", f"Blind baseline (text-only classifier, D_pre vs D_post kept texts): AUC "
                  f"{'NaN' if pd.isna(auc) else f'{auc:.2f}'}{ci}. {first['blind_note']}"]
        if first["other_versions"]:
            lines.append(f"{first['other_versions']} corpus row(s) are other models' versions of "
                         "a document (as_of another cutoff) and are not this model's.")
        dp = rep.pairs[rep.pairs["dataset"] == name]
        leaks = dp[dp["split"] != dp["other_split"]]
        if len(leaks):
            lines.append(f"**Leak warning:** {len(leaks)} pair(s) of documents on opposite sides "
                         "of the cutoff repeat each other across sources (listed below): remove "
                         "one of each pair from its source.")
        if len(dp):
            lines += ["", "Duplicates across sources (reported, not dropped):", ""]
            lines += _table(["document", "split", "repeats", "its split", "kind", "similarity"], [
                [f"{r.source}/{r.doc_id}", r.split, f"{r.other_source}/{r.other_doc_id}",
                 r.other_split, r.kind, f"{r.similarity:.3f}"]
                for r in dp.head(LIST_LIMIT).itertuples(index=False)])
            if len(dp) > LIST_LIMIT:
                lines.append(f"\n... and {len(dp) - LIST_LIMIT} more pair(s) (counted in the "
                             "table above).")
        lines.append("")
    lines += ["## Sources", ""]
    lines += _table(["source", "corpus rows", "other models' versions", "kept pre", "kept post",
                     "excluded"], rep.by_source.itertuples(index=False))
    if len(rep.dropped):
        lines += ["", "## Duplicates dropped within a source", ""]
        lines += _table(["source", "document", "kind", "kept copy", "similarity"], [
            [r.source, r.doc_id, "exact" if r.exclusion == "exact_duplicate" else "near",
             r.duplicate_of, f"{r.similarity:.3f}"]
            for r in rep.dropped.head(LIST_LIMIT).itertuples(index=False)])
        if len(rep.dropped) > LIST_LIMIT:
            lines.append(f"\n... and {len(rep.dropped) - LIST_LIMIT} more (see the curated "
                         "tables).")
    return "\n".join(lines) + "\n"


__all__ = ["PAIR_COLUMNS", "CurationReport", "build_report", "render_markdown"]
