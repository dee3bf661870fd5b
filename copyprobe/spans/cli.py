"""``copyprobe index build``, ``find`` and ``verify``: the span index outside Snakemake.

All print JSON. ``build`` prints the manifest's summary (documents, bytes, shards, digest,
whether an unchanged index was reused, seconds, token type and tokenizer), its progress and
warnings on stderr; ``find`` prints ``{index: {path, unit, n_docs, bytes, shards, digest,
tokenizer, verified}, words, spans: [{word_start, word_end, char_start, char_end, text, count,
n_docs, n_docs_exact, docs: [{source, doc_id, title, url, word_start}]}], find_s}`` (in the
unit ``tokens``, words are tokens); ``verify`` what it checked. The heavy modules are imported
inside the commands, so building the parser needs no extra.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record comes."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _log_to_stderr() -> None:
    """The build's progress and warnings on stderr, where nothing configured logging."""
    logger = logging.getLogger("copyprobe")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def cmd_index_build(args: argparse.Namespace) -> dict:
    from copyprobe.spans.build import build_index

    _log_to_stderr()
    t0 = time.perf_counter()
    m = build_index(args.corpus, args.out, unit=args.unit, shards=args.shards, cpus=args.cpus,
                    mem_gb=args.mem_gb, tokenizer=args.tokenizer, builder=args.builder)
    return {"out": args.out, "unit": m["unit"], "n_docs": m["n_docs"],
            "skipped_docs": m["skipped_docs"], "bytes": m["bytes"],
            "shards": len(m["shards"]), "digest": m["digest"], "reused": m["reused"],
            "token_dtype": m["token_dtype"], "tokenizer": m.get("tokenizer"),
            "seconds": round(time.perf_counter() - t0, 3)}


def _query(args: argparse.Namespace) -> str:
    """The text to find: TEXT, or read from --query-file (``-``: standard input)."""
    if (args.text is None) == (args.query_file is None):
        raise ValueError("give the text to find as TEXT or with --query-file, not both"
                         if args.text is not None else
                         "no text to find: give TEXT, --query-file PATH or - (standard input)")
    source = args.query_file if args.query_file is not None else args.text
    if args.query_file is None and source != "-":
        return source
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: not UTF-8 text ({exc})") from None
    except FileNotFoundError:
        raise ValueError(f"{source}: no such query file") from None


def cmd_index_find(args: argparse.Namespace) -> dict:
    from copyprobe.spans.index import SpanIndex

    text = _query(args)
    with SpanIndex.open(args.index, unit=args.unit, tokenizer=args.tokenizer,
                        verify="full" if args.verify else "blocks") as index:
        t0 = time.perf_counter()
        spans = index.find_spans(text, min_words=args.min_words, max_docs=args.max_docs,
                                 scan_cap=args.scan_cap)
        find_s = time.perf_counter() - t0
        m = index.manifest
        return {"index": {"path": args.index, "unit": m["unit"], "n_docs": m["n_docs"],
                          "bytes": m["bytes"], "shards": len(m["shards"]),
                          "digest": m["digest"], "tokenizer": m.get("tokenizer"),
                          "verified": index.verified},
                "words": len(index.tokenize(text)),
                "spans": [{**{k: v for k, v in asdict(s).items() if k != "docs"},
                           "docs": [d.as_dict() for d in s.docs]} for s in spans],
                "find_s": round(find_s, 6)}


def cmd_index_verify(args: argparse.Namespace) -> dict:
    from copyprobe.spans.index import SpanIndex

    with SpanIndex.open(args.index, verify="full") as index:
        m = index.manifest
        return {"index": args.index, "digest": m["digest"], "n_docs": m["n_docs"],
                "shards": len(m["shards"]), **index.verified, "ok": True}


def add_commands(sub: argparse._SubParsersAction) -> None:
    from copyprobe.spans.encoding import DEFAULT_UNIT, UNITS
    from copyprobe.spans.layout import BUILDERS

    g = sub.add_parser("index", help="the span index: build one over corpora, find a text's "
                                     "verbatim spans in it, verify one",
                       description="Suffix-array span indexes over your corpora (infini-gram, "
                                   "byte level): every long verbatim span of a text with the "
                                   "documents it occurs in.")
    group = g.add_subparsers(dest="index_command", required=True, metavar="COMMAND",
                             title="index commands")
    b = group.add_parser("build", help="build a span index over corpora",
                         description="Build a span index over CORPUS files (CORPUS-schema "
                                     "Parquet or any Parquet with a text column, JSONL(.gz) "
                                     "with a text key, folders of .txt/.md files) in DIR. An "
                                     "index of the same documents already in DIR is reused; "
                                     "else the new index is built beside DIR and swapped in "
                                     "whole (readers see the old or the new one).")
    b.add_argument("corpus", nargs="+", metavar="CORPUS", help="corpus files or folders")
    b.add_argument("--out", required=True, metavar="DIR", help="the index folder")
    b.add_argument("--unit", default=DEFAULT_UNIT, choices=UNITS,
                   help="what a word is: words (normalised, case and punctuation ignored), "
                        "whitespace (str.split, strict) or tokens (a model's token ids: "
                        "--tokenizer)")
    b.add_argument("--tokenizer", metavar="PATH", default=None,
                   help="with --unit tokens: a local GGUF model file (its vocabulary, through "
                        "llama.cpp), a tokenizer.json or a model folder holding one")
    b.add_argument("--shards", type=_positive_int, default=1,
                   help="contiguous shards of about equal bytes (built one after the other)")
    b.add_argument("--cpus", type=_positive_int, default=1,
                   help="processes per suffix-array build")
    b.add_argument("--mem-gb", type=_positive_int, default=2,
                   help="memory (GiB) a suffix-array build may plan with")
    b.add_argument("--builder", default="auto", choices=BUILDERS,
                   help="who builds the suffix arrays: infini-gram's indexer (engine), "
                        "copyprobe's numpy builder (the same bytes, slower; no 32 GiB need "
                        "for u32), or auto (copyprobe for u32 shards only)")
    b.set_defaults(func=cmd_index_build)
    f = group.add_parser("find", help="the verbatim spans of a text found in an index",
                         description="Every maximal span of TEXT (or of the text of "
                                     "--query-file) of at least --min-words words found in "
                                     "the index DIR, with its count and documents. The index "
                                     "is verified first (every block's CRC-32; --verify: also "
                                     "every file's sha256).")
    f.add_argument("index", metavar="DIR", help="a built index folder (holding index.json)")
    f.add_argument("text", metavar="TEXT", nargs="?",
                   help="the text to look up (quote it; - reads it from standard input)")
    f.add_argument("--query-file", metavar="PATH",
                   help="read the text to look up from this UTF-8 file (- : standard input)")
    f.add_argument("--min-words", type=int, default=8, help="shortest span reported")
    f.add_argument("--max-docs", type=int, default=5, help="documents listed per span")
    f.add_argument("--scan-cap", type=int, default=10_000,
                   help="occurrences read per span (n_docs is exact up to this count)")
    f.add_argument("--unit", choices=UNITS, default=None,
                   help="refuse an index built in another unit")
    f.add_argument("--tokenizer", metavar="PATH", default=None,
                   help="a token index: refuse it unless built with this tokenizer file "
                        "(default: the file its manifest names)")
    f.add_argument("--verify", action="store_true",
                   help="also compare every file's sha256 with the manifest before finding "
                        "(the full check of 'index verify')")
    f.set_defaults(func=cmd_index_find)
    v = group.add_parser("verify", help="check every file of an index against its manifest",
                         description="The full check of the index DIR: the manifest, every "
                                     "file's size, the CRC-32 of each of its blocks and its "
                                     "sha256, and a probe query. Exit status 1 with a line "
                                     "naming the file (and block) that differs.")
    v.add_argument("index", metavar="DIR", help="a built index folder (holding index.json)")
    v.set_defaults(func=cmd_index_verify)
