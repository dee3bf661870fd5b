"""The MSR study's commands: re-score and re-test other people's released generations.

    copyprobe msr-score FILE... --document-col C --reference-col C --generation-col C
                        [--mode paper|words] [--k-min 5 --k-max 12] [--out per_document.parquet]
    copyprobe msr-stats --pre v1,v2,... --post v1,v2,...
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def _read_any(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise SystemExit(f"copyprobe: {path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix in (".csv", ".tsv"):
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    raise SystemExit(f"copyprobe: {path}: expected a .csv, .tsv or .parquet file")


def cmd_msr_score(args: argparse.Namespace) -> dict:
    from copyprobe.matching import paper_fk_counts, paper_match, word_fk_counts, word_match

    ks = list(range(args.k_min, args.k_max + 1))
    frames = []
    for f in args.files:
        df = _read_any(Path(f))
        cols = (args.document_col, args.reference_col, args.generation_col)
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise SystemExit(f"copyprobe: {f}: missing column(s) {missing}; "
                             f"columns are {list(df.columns)}")
        df = df[list(cols)].copy()
        df.columns = ["document", "reference", "generation"]
        df.insert(0, "row", range(len(df)))
        df.insert(0, "file", str(f))
        frames.append(df)
    data = pd.concat(frames, ignore_index=True)
    usable = data[["document", "reference", "generation"]].notna().all(axis=1)
    failed_marker = data["generation"].isin(args.failed_marker)
    skipped = data[~usable | failed_marker]
    data = data[usable & ~failed_marker]
    rows = []
    for r in data.itertuples(index=False):
        doc, ref, gen = str(r.document), str(r.reference), str(r.generation)
        row = {"file": r.file, "row": r.row}
        if args.mode == "paper":
            m = paper_match(ref, gen, doc)
            row.update(lcs=m.lcs, lcs_words=m.lcs_words, unique=m.unique, score=m.score,
                       **{f"counts_k{k}": m.counts_at(k) for k in ks})
        else:
            w = word_match(ref, gen, k_min=args.k_min, k_max=args.k_max)
            row.update(longest=w.longest, longest_text=w.longest_text, lcp=w.lcp,
                       edit_similarity=w.edit_similarity,
                       **{f"kgrams_k{k}": w.kgram_counts[k] for k in ks})
        rows.append(row)
    per_doc = pd.DataFrame(rows)
    out: dict = {"mode": args.mode, "files": list(args.files), "k_values": ks,
                 "documents": int(len(per_doc)), "skipped_rows": int(len(skipped))}
    if args.mode == "paper":
        out["f_k"] = paper_fk_counts(per_doc["score"] if len(per_doc) else [], ks)
    else:
        longest = per_doc["longest"] if len(per_doc) else pd.Series(dtype=int)
        out["f_k"] = word_fk_counts(longest, ks)
        out["f_k_kgrams"] = [int(per_doc[f"kgrams_k{k}"].sum()) if len(per_doc) else 0
                             for k in ks]
        out["longest_max"] = int(longest.max()) if len(longest) else 0
        out["longest_median"] = float(longest.median()) if len(longest) else 0.0
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        per_doc.to_parquet(args.out, index=False)
        out["out"] = args.out
    return out


def _floats(text: str, flag: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise SystemExit(f"copyprobe: {flag}: expected comma-separated numbers, got {text!r}")


def cmd_msr_stats(args: argparse.Namespace) -> dict:
    from copyprobe.stats import paper_stats

    return paper_stats(_floats(args.pre, "--pre"), _floats(args.post, "--post"))


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("msr-score", help="count verbatim matches in released generations",
                       description="Count verbatim matches between the held-out segments and "
                                   "the generations of released CSV/TSV/Parquet files (such as "
                                   "the MSR authors'), and print f_k per k.")
    s.add_argument("files", nargs="+", help="CSV, TSV or Parquet files")
    s.add_argument("--document-col", required=True, help="column with the whole document")
    s.add_argument("--reference-col", required=True, help="column with the held-out segment")
    s.add_argument("--generation-col", required=True, help="column with the model's text")
    s.add_argument("--mode", choices=["paper", "words"], default="paper",
                   help="paper: the MSR authors' longest common character substring, "
                        "counted when it is longer than k words and occurs once in the "
                        "document; words: the longest run of shared words, counted when at "
                        "least k")
    s.add_argument("--k-min", type=int, default=5, help="smallest k (words) reported")
    s.add_argument("--k-max", type=int, default=12, help="largest k (words) reported")
    s.add_argument("--failed-marker", action="append", default=[],
                   help="a generation equal to this text is a failed call, not text "
                        "(e.g. FAIL in the MSR authors' CSVs); repeatable")
    s.add_argument("--out", help="write per-document scores to this Parquet file")
    s.set_defaults(func=cmd_msr_score)
    t = sub.add_parser("msr-stats", help="paper-mode statistics of two f_k vectors",
                       description="Compare the f_k vectors of D_pre and D_post with the "
                                   "paper's statistics (Cliff's delta, KS, Kruskal-Wallis).")
    t.add_argument("--pre", required=True, help="f_k of D_pre, comma-separated")
    t.add_argument("--post", required=True, help="f_k of D_post, comma-separated")
    t.set_defaults(func=cmd_msr_stats)
