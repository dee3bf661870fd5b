"""Benchmark of the output-side guard (copyprobe.guard.output): the latency its check adds per
streamed chunk, and the proxy's requests per second at concurrency 32 with and without it
(prints figures; nothing is asserted).

The protected materials are a seeded corpus of pseudo-words with Zipf frequencies
(``--corpus-mb``, default 5 MB: the size of a benchmark's materials), built into a span index
(copyprobe.spans.build, infini-gram) in a temporary folder and opened with SpanIndex.

* Per chunk: ``--answers`` answers of about 300 words (fresh words, with a 40-word passage of
  a protected document planted in every other one) are streamed in deltas of
  ``--chunk-chars`` characters (4: about one token) through an OutputStream, and each
  ``feed`` is timed (``stream``: the check itself); the same deltas as SSE events through the
  proxy's StreamRelay (``relay``: parsing the event, the check, rewriting it). A stream stops
  at its protected span, as the proxy does.
* Proxy: ``benchmarks/loopback_server.py`` streams a clean 300-word answer in 4-character
  deltas (no latency); ``copyprobe guard serve`` runs as its own process with no input check
  (``input: false``) and with or without ``--span-index``; an aiohttp client sends
  ``--requests`` streaming requests at concurrency 32 and reads each stream to its end.

    python benchmarks/span_guard.py [--corpus-mb 5] [--answers 50] [--requests 400]

Measured 2026-12-01 on the 2-core VM shared with three other jobs (Python 3.11, infini-gram
2.6.0; a 5.0 MB corpus of 369 documents, index 20.1 MB, built in 3-5 s; min_words 12; 50
answers, 20 328 chunks of 4 characters; 400 streamed answers of 2098 characters, 525 chunks
each, through the proxy at concurrency 32):

    python benchmarks/span_guard.py                 (later, alone on the machine: load 2.8)
      per chunk, stream: p50 8 us, p99 21 us, p99.9 576 us
      per chunk, relay (SSE parse + check + rewrite): p50 29 us, p99 108 us, p99.9 659 us
      proxy: 62.4 req/s without the output check (p50 0.40 s, p95 0.98 s per stream),
             15.0 req/s with it (p50 2.1 s, p95 2.6 s)
    python benchmarks/span_guard.py                 (prefilter auto: on; load average 6.0)
      per chunk, stream: p50 26 us, p99 96 us, p99.9 1.7 ms
      per chunk, relay (SSE parse + check + rewrite): p50 60 us, p99 190 us, p99.9 2.7 ms
      proxy: 31.8 req/s without the output check (p50 1.0 s, p95 1.16 s per stream),
             13.8 req/s with it (p50 2.3 s, p95 3.1 s)
    python benchmarks/span_guard.py --no-prefilter  (an index query per word; load 9.7)
      per chunk, stream: p50 88 us, p99 4.1 ms, p99.9 7.9 ms
      per chunk, relay: p50 125 us, p99 4.2 ms, p99.9 8.0 ms
      proxy: 48.7 req/s without, 8.1 req/s with the output check
    python benchmarks/span_guard.py                 (main, then this branch, twice, alternating;
                                                     load 18-29 from other jobs)
      main:   relay p50 39 / 41 us; proxy 18.9 / 20.5 req/s without, 11.2 / 13.8 with the check
      branch: relay p50 30 / 28 us; proxy 19.0 / 19.0 req/s without, 10.1 / 12.2 with;
              CPU per request (2nd run): proxy 8.4 ms without, 39.1 ms with the check,
              upstream 7.6 / 7.2 ms, client 5.0 / 6.1 ms
      (at such load requests/s are noise; the CPU per request is the figure to compare)

So the issue's 1 ms p99 per chunk holds with the prefilter (the default for an index of at
most 4 million windows) and not without it: an engine query costs about 80 us at the median,
but its thread per shard waits for a core on a loaded machine (p99 about 4 ms). The p99.9
includes the chunk that hits (find_spans of the span: about 1-20 ms) and scheduling delays.
With the check the proxy serves about half (prefilter) or a sixth (without) of the requests
per second it serves without it: the relay's CPU, about 60 us a chunk (525 a stream), is paid
under the GIL by the proxy's 32 threads, beside the relaying itself. The runs' "without"
figures differ by the machine's load (31.8, 48.7, 62.4 req/s).

Why the check costs the proxy 4-6x its throughput (profiled 2026-12-01 in the proxy process
itself: py-spy 0.4.3 ``record --gil --nonblocking`` and the CPU time of each process from
/proc, the benchmark's proxy, upstream and client; the VM at load 7-30 from other jobs): it is
the Python work per streamed event, all under the proxy's one GIL; no bug limits it.

* The proxy's CPU per streamed request is 7.3 ms without the check and 42-47 ms with it
  (before the change below), at concurrency 1 and 32 alike (43 and 44 ms): it is paid per
  event, not in contention between the 32 handler threads (the relay in 32 threads, each
  releasing the GIL after every event, costs 7-20% more CPU per stream than in one).
* Where it goes (py-spy --gil, concurrency 1, samples holding the GIL): StreamRelay.feed 51%
  (json.loads 11%, the check itself, OutputStream.feed, 9%, the tokenizer 4%, json.dumps 5%,
  the rest the relay's own Python), writing the rewritten events 20%, urllib3's chunk reads
  11%. StreamRelay.feed costs about 20 ms a stream in the proxy against 11-13 ms (525
  events, best of 30) in a tight loop: a loop's figure (as the first profile's 21 ms) is a
  hot-cache lower bound; in the proxy two syscalls and other threads run between two events.
* So one proxy process serves at most 1 / (CPU per request): 21-24 req/s with the check, on
  any number of cores; on this 2-core VM the client (aiohttp, 6-10 ms a request) and the
  upstream (7-8 ms) share the two cores with it, and 13-15 req/s is about 60% of that.
  Without the check, 62-80 req/s is bounded by the client and upstream.
* Not the cause: the upstream (7-8 ms CPU a request either way); index opening or tokenizer
  loading (the OutputGuard and its index are built once at start; the profile shows neither);
  a lock on the shared index (the mmap search is lock-free; no lock waits in the profile).
* Found on the way: a passed stream's upstream connection went back to the pool with its
  chunked terminator unread (the relay stops at ``[DONE]``); the next answer on it could be a
  502 (seen under py-spy as ``ResponseNotReady``). The proxy now reads the body to its end.
* Reduced: the relay's Python per event (one data line parsed without splitting, one JSON
  encoder, no per-event dict comprehensions): the relay loop 13.3 -> 10.6 ms a stream, the
  proxy's CPU per request 46.9 / 46.2 -> 36.1 / 37.3 ms (old / new interleaved, load 26-32).
  What is left is the JSON parse and dump of each event (about 10 us), the tokenizer (3-5 us
  a word) and the writes; past that, several proxy processes (one GIL each) would scale it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

SERVE = """
import argparse, json, sys
from copyprobe.guard.cli import add_commands
p = argparse.ArgumentParser(prog="copyprobe")
add_commands(p.add_subparsers(dest="command", required=True))
args = p.parse_args(sys.argv[1:])
print(json.dumps(args.func(args)))
"""

BODY = {"model": "bench", "stream": True,
        "messages": [{"role": "user", "content": "Tell me about the lighthouse."}]}


# -- the corpus and the index -------------------------------------------------------------------

def vocabulary(n: int, rng: random.Random) -> list[str]:
    out, seen = [], set()
    while len(out) < n:
        w = "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou")
                    for _ in range(rng.randint(1, 4)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def corpus(mb: float, seed: int = 0, doc_words: int = 2000) -> list[list[str]]:
    """Documents (word lists) of about ``mb`` megabytes, words drawn with Zipf weights."""
    rng = random.Random(seed)
    vocab = vocabulary(50_000, rng)
    weights = [1 / (r + 1) for r in range(len(vocab))]
    docs, size = [], 0
    while size < mb * 1e6:
        words = rng.choices(vocab, weights, k=doc_words)
        docs.append(words)
        size += sum(map(len, words)) + len(words)
    return docs


def build(docs: list[list[str]], work: Path) -> Any:
    """The span index of ``docs`` (built in ``work``), opened."""
    from copyprobe.spans.build import build_index
    from copyprobe.spans.index import SpanIndex

    src = work / "protected.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for i, words in enumerate(docs):
            f.write(json.dumps({"doc_id": f"doc-{i:05d}", "source": "materials",
                                "title": f"Work {i}", "text": " ".join(words)}) + "\n")
    t0 = time.perf_counter()
    build_index([src], work / "index", cpus=2, mem_gb=2)
    took = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in (work / "index").rglob("*") if p.is_file())
    print(f"index: {len(docs)} documents, corpus {src.stat().st_size / 1e6:.1f} MB, index "
          f"{size / 1e6:.1f} MB, built in {took:.1f} s")
    return SpanIndex.open(work / "index")


def answers(docs: list[list[str]], n: int, seed: int = 1, words: int = 300) -> list[str]:
    """``n`` answers of ``words`` fresh words; every other one holds a 40-word passage of a
    protected document in its middle."""
    rng = random.Random(seed)
    fresh = vocabulary(5000, random.Random(seed + 100))
    out = []
    for i in range(n):
        text = [w.upper() if rng.random() < 0.02 else w for w in rng.choices(fresh, k=words)]
        if i % 2:
            d = rng.choice(docs)
            at = rng.randrange(len(d) - 40)
            text[words // 2:words // 2 + 40] = d[at:at + 40]
        out.append(" ".join(text) + ".")
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# -- per-chunk latency ------------------------------------------------------------------------

def chunk_latency(index: Any, texts: list[str], *, min_words: int = 12,
                  chunk_chars: int = 4, prefilter: bool | None = None
                  ) -> dict[str, list[float]]:
    """Seconds per ``feed`` of an OutputStream (``stream``) and per SSE event through the
    proxy's StreamRelay (``relay``), over every chunk of every answer up to its stop."""
    from copyprobe.guard.output import OutputGuard
    from copyprobe.guard.relay import StreamRelay

    guard = OutputGuard(index, min_words=min_words, action="truncate", prefilter=prefilter)
    times: dict[str, list[float]] = {"stream": [], "relay": []}
    clock = time.perf_counter
    for text in texts:
        pieces = [text[i:i + chunk_chars] for i in range(0, len(text), chunk_chars)]
        s = guard.stream()
        for p in pieces:
            t0 = clock()
            _, f = s.feed(p)
            times["stream"].append(clock() - t0)
            if f is not None:
                break
        relay = StreamRelay(guard)
        for p in pieces:
            event = b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk",
                                            "choices": [{"index": 0, "delta": {"content": p},
                                                         "finish_reason": None}]}).encode() \
                + b"\n\n"
            t0 = clock()
            relay.feed(event)
            times["relay"].append(clock() - t0)
            if relay.done:
                break
    return times


# -- proxy throughput -------------------------------------------------------------------------

async def _run(url: str, requests: int, concurrency: int) -> tuple[float, list[float]]:
    import aiohttp

    latencies: list[float] = []
    left = list(range(requests))
    data = json.dumps(BODY).encode()
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as session:
        async def one() -> None:
            t0 = time.perf_counter()
            async with session.post(f"{url}/chat/completions", data=data,
                                    headers={"Content-Type": "application/json"}) as r:
                body = await r.read()
                if r.status != 200 or not body.endswith(b"data: [DONE]\n\n"):
                    raise RuntimeError(f"status {r.status}: {body[-200:]!r}")
            latencies.append(time.perf_counter() - t0)

        async def worker() -> None:
            while left:
                left.pop()
                await one()

        await asyncio.gather(*(one() for _ in range(concurrency)))  # warm-up
        latencies.clear()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0, latencies


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc; NaN elsewhere)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _start(cmd: list[str], log: Path, root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """The proxy command started with ``root``'s copyprobe, logging to ``log``: the process
    and its URL (from its start line)."""
    out = log.open("w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=out,
                            env={**os.environ, "PYTHONPATH": str(root)})
    deadline = time.time() + 60
    while time.time() < deadline:
        out.seek(0)
        first = out.readline()
        if first.strip():
            return proc, json.loads(first)["url"]
        if proc.poll() is not None:
            raise SystemExit(f"proxy did not start:\n{log.read_text()}")
        time.sleep(0.1)
    raise SystemExit("proxy did not start in 60 s")


def proxy_throughput(index_dir: Path | None, answer: str, work: Path, *, requests: int = 400,
                     concurrency: int = 32, min_words: int = 12,
                     prefilter: bool | None = None) -> dict[str, Any]:
    """Requests per second and latency through the proxy (its own process) of streamed
    answers from the loopback upstream; with the output check when ``index_dir``."""
    (work / "answer.txt").write_text(answer, encoding="utf-8")
    upstream = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "loopback_server.py"),
                                 "--latency", "0", "--answer-file", str(work / "answer.txt"),
                                 "--chunk-chars", "4"], stdout=subprocess.PIPE, text=True)
    up_url = upstream.stdout.readline().strip()
    cfg = work / "guard.yaml"
    pre = "null" if prefilter is None else str(prefilter).lower()
    cfg.write_text(f"guard:\n  input: false\n  output: {{min_words: {min_words}, "
                   f"action: truncate, prefilter: {pre}}}\n" if index_dir
                   else "guard:\n  input: false\n")
    cmd = [sys.executable, "-c", SERVE, "guard", "serve", "--upstream", up_url, "--port", "0",
           "--config", str(cfg), "--cache-dir", str(work / "cache")]
    if index_dir is not None:
        cmd += ["--span-index", str(index_dir)]
    proxy, url = _start(cmd, work / f"proxy-{bool(index_dir)}.log")
    try:
        before = (_cpu_s(proxy.pid), _cpu_s(upstream.pid), time.process_time())
        wall, lat = asyncio.run(_run(url, requests, concurrency))
        after = (_cpu_s(proxy.pid), _cpu_s(upstream.pid), time.process_time())
        # CPU per request of each process (over the warm-up's requests too)
        n = requests + concurrency
        cpu = {k: (b - a) / n for k, a, b in zip(("proxy", "upstream", "client"), before,
                                                 after)}
        return {"rps": requests / wall, "p50": statistics.median(lat), "p95": pct(lat, 0.95),
                "cpu": cpu}
    finally:
        proxy.terminate()
        proxy.wait(timeout=20)
        upstream.terminate()
        upstream.wait(timeout=10)


def measure(*, corpus_mb: float = 5.0, n_answers: int = 50, requests: int = 400,
            concurrency: int = 32, min_words: int = 12, prefilter: bool | None = None
            ) -> list[str]:
    """Both measurements, as the printed lines (benchmarks/span_index.py prints them too)."""
    lines = []
    work = Path(tempfile.mkdtemp(prefix="span-guard-bench-"))
    docs = corpus(corpus_mb)
    index = build(docs, work)
    texts = answers(docs, n_answers)
    chunk_latency(index, texts[:4], min_words=min_words, prefilter=prefilter)  # warm up
    t = chunk_latency(index, texts, min_words=min_words, prefilter=prefilter)
    lines.append(f"output check on {corpus_mb:g} MB of protected text, min_words {min_words}")
    for name, xs in t.items():
        lines.append(f"per chunk ({name}, 4-char deltas, {len(xs)} chunks): p50 "
                     f"{pct(xs, 0.5) * 1e6:.0f} us, p99 {pct(xs, 0.99) * 1e6:.0f} us, p99.9 "
                     f"{pct(xs, 0.999) * 1e6:.0f} us")
    clean = texts[0]
    lines.append(f"proxy: {requests} streamed answers of {len(clean)} chars "
                 f"({len(clean) // 4 + 1} chunks) at concurrency {concurrency}")
    for label, idx in (("without output check", None), ("with output check", work / "index")):
        r = proxy_throughput(idx, clean, work, requests=requests, concurrency=concurrency,
                             min_words=min_words, prefilter=prefilter)
        lines.append(f"  {label}: {r['rps']:.1f} req/s, latency p50 {r['p50'] * 1000:.0f} ms, "
                     f"p95 {r['p95'] * 1000:.0f} ms; CPU per request: "
                     + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r["cpu"].items()))
    lines.append(f"prefilter: {'off' if prefilter is False else 'auto'}; {os.cpu_count()} "
                 f"cores on this machine, load average {os.getloadavg()[0]:.1f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus-mb", type=float, default=5.0)
    ap.add_argument("--answers", type=int, default=50)
    ap.add_argument("--requests", type=int, default=400, help="proxy requests per run")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--min-words", type=int, default=12)
    ap.add_argument("--no-prefilter", action="store_true",
                    help="query the index for every word (no WindowFilter)")
    args = ap.parse_args()
    for line in measure(corpus_mb=args.corpus_mb, n_answers=args.answers,
                        requests=args.requests, concurrency=args.concurrency,
                        min_words=args.min_words,
                        prefilter=False if args.no_prefilter else None):
        print(line, flush=True)


if __name__ == "__main__":
    main()
