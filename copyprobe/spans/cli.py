"""``copyprobe index build`` and ``copyprobe index find``: the span index outside Snakemake.

Both print JSON. ``build`` prints the manifest's summary (documents, bytes, shards, digest,
whether an unchanged index was reused, seconds, token type and tokenizer); ``find`` prints
``{index: {path, unit, n_docs, bytes, shards, digest, tokenizer}, words, spans: [{word_start,
word_end, char_start, char_end, text, count, n_docs, n_docs_exact, docs: [{source, doc_id,
title, url, word_start}]}], find_s}`` (in the unit ``tokens``, words are tokens). The heavy
modules are imported inside the commands, so building the parser needs no extra.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict


def cmd_index_build(args: argparse.Namespace) -> dict:
    from copyprobe.spans.build import build_index

    t0 = time.perf_counter()
    m = build_index(args.corpus, args.out, unit=args.unit, shards=args.shards, cpus=args.cpus,
                    mem_gb=args.mem_gb, tokenizer=args.tokenizer, builder=args.builder)
    return {"out": args.out, "unit": m["unit"], "n_docs": m["n_docs"],
            "skipped_docs": m["skipped_docs"], "bytes": m["bytes"],
            "shards": len(m["shards"]), "digest": m["digest"], "reused": m["reused"],
            "token_dtype": m["token_dtype"], "tokenizer": m.get("tokenizer"),
            "seconds": round(time.perf_counter() - t0, 3)}


def cmd_index_find(args: argparse.Namespace) -> dict:
    from copyprobe.spans.index import SpanIndex

    with SpanIndex.open(args.index, unit=args.unit, tokenizer=args.tokenizer) as index:
        t0 = time.perf_counter()
        spans = index.find_spans(args.text, min_words=args.min_words, max_docs=args.max_docs,
                                 scan_cap=args.scan_cap)
        find_s = time.perf_counter() - t0
        m = index.manifest
        return {"index": {"path": args.index, "unit": m["unit"], "n_docs": m["n_docs"],
                          "bytes": m["bytes"], "shards": len(m["shards"]),
                          "digest": m["digest"], "tokenizer": m.get("tokenizer")},
                "words": len(index.tokenize(args.text)),
                "spans": [{**{k: v for k, v in asdict(s).items() if k != "docs"},
                           "docs": [d.as_dict() for d in s.docs]} for s in spans],
                "find_s": round(find_s, 6)}


def add_commands(sub: argparse._SubParsersAction) -> None:
    from copyprobe.spans.encoding import DEFAULT_UNIT, UNITS
    from copyprobe.spans.layout import BUILDERS

    g = sub.add_parser("index", help="the span index: build one over corpora, find a text's "
                                     "verbatim spans in it",
                       description="Suffix-array span indexes over your corpora (infini-gram, "
                                   "byte level): every long verbatim span of a text with the "
                                   "documents it occurs in.")
    group = g.add_subparsers(dest="index_command", required=True, metavar="COMMAND",
                             title="index commands")
    b = group.add_parser("build", help="build a span index over corpora",
                         description="Build a span index over CORPUS files (CORPUS-schema "
                                     "Parquet or any Parquet with a text column, JSONL(.gz) "
                                     "with a text key, folders of .txt/.md files) in DIR. An "
                                     "index of the same documents already in DIR is reused.")
    b.add_argument("corpus", nargs="+", metavar="CORPUS", help="corpus files or folders")
    b.add_argument("--out", required=True, metavar="DIR", help="the index folder")
    b.add_argument("--unit", default=DEFAULT_UNIT, choices=UNITS,
                   help="what a word is: words (normalised, case and punctuation ignored), "
                        "whitespace (str.split, strict) or tokens (a model's token ids: "
                        "--tokenizer)")
    b.add_argument("--tokenizer", metavar="PATH", default=None,
                   help="with --unit tokens: a local GGUF model file (its vocabulary, through "
                        "llama.cpp), a tokenizer.json or a model folder holding one")
    b.add_argument("--shards", type=int, default=1,
                   help="contiguous shards of about equal bytes (built one after the other)")
    b.add_argument("--cpus", type=int, default=1, help="processes per suffix-array build")
    b.add_argument("--mem-gb", type=int, default=2,
                   help="memory (GiB) a suffix-array build may plan with")
    b.add_argument("--builder", default="auto", choices=BUILDERS,
                   help="who builds the suffix arrays: infini-gram's indexer (engine), "
                        "copyprobe's numpy builder (the same bytes, slower; no 32 GiB need "
                        "for u32), or auto (copyprobe for u32 shards only)")
    b.set_defaults(func=cmd_index_build)
    f = group.add_parser("find", help="the verbatim spans of a text found in an index",
                         description="Every maximal span of TEXT of at least --min-words words "
                                     "found in the index DIR, with its count and documents.")
    f.add_argument("index", metavar="DIR", help="a built index folder (holding index.json)")
    f.add_argument("text", metavar="TEXT", help="the text to look up (quote it)")
    f.add_argument("--min-words", type=int, default=8, help="shortest span reported")
    f.add_argument("--max-docs", type=int, default=5, help="documents listed per span")
    f.add_argument("--scan-cap", type=int, default=10_000,
                   help="occurrences read per span (n_docs is exact up to this count)")
    f.add_argument("--unit", choices=UNITS, default=None,
                   help="refuse an index built in another unit")
    f.add_argument("--tokenizer", metavar="PATH", default=None,
                   help="a token index: refuse it unless built with this tokenizer file "
                        "(default: the file its manifest names)")
    f.set_defaults(func=cmd_index_find)
