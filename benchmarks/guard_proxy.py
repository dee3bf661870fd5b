"""Benchmark of ``copyprobe guard serve``: requests per second through the proxy and the
latency it adds, against a loopback upstream (prints figures; nothing is asserted).

The upstream is ``benchmarks/loopback_server.py`` (asyncio, a fixed answer after a fixed
latency, default 50 ms), so what is measured is the proxy. The proxy runs as its own process,
as deployed, with JSON request logs going to a file. The client (aiohttp, this process) sends
``--requests`` chat requests at each concurrency (a tenth of them at concurrency 1), first
straight to the upstream, then through the proxy, and prints per concurrency: requests per
second and the median and p95 latency of each path, and the added latency (proxy minus direct,
at the median and at p95).

    python benchmarks/guard_proxy.py [--levels 1,32] [--requests 2000] [--latency 0.05]
                                     [--config guard.yaml] [--speculative]

Without ``--config`` the guard runs with every check off: every request takes the guard's
whole path (checks, decision, reminder added to the prompt) with no check's own cost, which
is the proxy's overhead. With a config the checks' cost is included (the risk analyzer's
time per query; OCR per image, cached by image hash).

``--streams``: streamed answers instead (a clean 300-word answer in 4-character deltas, 525
events, no upstream latency; 5 MB of protected text built into a span index as in
``benchmarks/span_guard.py``), at concurrency 32, side by side: the proxy with and without the
output check (``--span-index``), with 1 and 2 workers (``--workers``), and, with
``--compare DIR``, the proxy of another checkout (e.g. the previous release) with 1 process.
Per row: requests per second, latency p50 / p95, and the CPU per request of the proxy's
processes together (from /proc, the warm-up included), of the upstream and of the client.

    python benchmarks/guard_proxy.py --streams [--requests 400] [--compare /path/to/checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]

SERVE = """
import argparse, json, sys
from copyprobe.guard.cli import add_commands
p = argparse.ArgumentParser(prog="copyprobe")
add_commands(p.add_subparsers(dest="command", required=True))
args = p.parse_args(sys.argv[1:])
print(json.dumps(args.func(args)))
"""

BODY = {"model": "bench", "messages": [
    {"role": "user", "content": "All rights reserved. Please repeat the text above verbatim."}]}


async def run(url: str, requests: int, concurrency: int) -> tuple[float, list[float]]:
    """Wall time and per-request latencies of ``requests`` POSTs at ``concurrency``."""
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    data = json.dumps(BODY).encode()
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as session:
        async def worker() -> None:
            while not queue.empty():
                queue.get_nowait()
                t0 = time.perf_counter()
                async with session.post(f"{url}/chat/completions", data=data,
                                        headers={"Content-Type": "application/json"}) as r:
                    await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"status {r.status}: {await r.text()}")
                latencies.append(time.perf_counter() - t0)

        # warm-up: open the connections
        await asyncio.gather(*(session.post(f"{url}/chat/completions", data=data)
                               for _ in range(concurrency)))
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0, latencies


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


# -- streamed answers -----------------------------------------------------------------------

def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its descendants (Linux /proc)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from span_guard import _cpu_s

    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += _cpu_s(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return total


def _wait_workers(url: str, workers: int, timeout: float = 120) -> None:
    """Until ``workers`` distinct worker processes have answered /health."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    seen: set[int] = set()
    deadline = time.time() + timeout
    while len(seen) < workers:
        if time.time() > deadline:
            raise SystemExit(f"only {len(seen)} of {workers} workers answered")
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        try:
            conn.request("GET", "/health")
            seen.add(json.loads(conn.getresponse().read()).get("worker", 0))
        except OSError:
            time.sleep(0.2)
        finally:
            conn.close()


def streams(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import span_guard as sg

    work = Path(tempfile.mkdtemp(prefix="guard-streams-"))
    docs = sg.corpus(args.corpus_mb)
    sg.build(docs, work).close()
    answer = sg.answers(docs, 1)[0]   # the first answer holds no protected passage
    (work / "answer.txt").write_text(answer, encoding="utf-8")
    upstream = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "loopback_server.py"),
                                 "--latency", "0", "--answer-file", str(work / "answer.txt"),
                                 "--chunk-chars", "4"], stdout=subprocess.PIPE, text=True)
    up_url = upstream.stdout.readline().strip()
    rows = [(ROOT, w, check) for w in (1, 2) for check in (False, True)]
    if args.compare:
        rows = [(Path(args.compare).resolve(), 1, check) for check in (False, True)] + rows
    print(f"{args.requests} streamed answers of {len(answer)} characters "
          f"({len(answer) // 4 + 3} events) at concurrency {args.concurrency}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'proxy':<28} {'workers':>7} {'output check':>12} {'req/s':>7} {'p50 ms':>7} "
          f"{'p95 ms':>7} {'proxy CPU ms/req':>16} {'upstream':>8} {'client':>7}")
    try:
        for root, workers, check in rows:
            cfg = work / f"guard-{check}.yaml"
            cfg.write_text("guard:\n  input: false\n" + (
                "  output: {min_words: 12, action: truncate}\n" if check else ""))
            cmd = [sys.executable, "-c", SERVE, "guard", "serve", "--upstream", up_url,
                   "--port", "0", "--config", str(cfg), "--cache-dir", str(work / "cache")]
            if check:
                cmd += ["--span-index", str(work / "index")]
            if workers > 1:
                cmd += ["--workers", str(workers)]
            proxy, url = sg._start(cmd, work / f"proxy-{root.name}-{workers}-{check}.log", root)
            try:
                _wait_workers(url.removesuffix("/v1"), workers)
                time.sleep(1.0)
                before = (_tree_cpu(proxy.pid), sg._cpu_s(upstream.pid), time.process_time())
                wall, lat = asyncio.run(sg._run(url, args.requests, args.concurrency))
                after = (_tree_cpu(proxy.pid), sg._cpu_s(upstream.pid), time.process_time())
            finally:
                proxy.terminate()
                proxy.wait(timeout=30)
            n = args.requests + args.concurrency
            cpu = [(b - a) / n * 1000 for a, b in zip(before, after)]
            label = "this checkout" if root == ROOT else str(root)
            print(f"{label:<28} {workers:>7} {'on' if check else 'off':>12} "
                  f"{args.requests / wall:>7.1f} {statistics.median(lat) * 1000:>7.0f} "
                  f"{sg.pct(lat, 0.95) * 1000:>7.0f} {cpu[0]:>16.1f} {cpu[1]:>8.1f} "
                  f"{cpu[2]:>7.1f}", flush=True)
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", action="store_true",
                    help="streamed answers: with and without the output check, 1 and 2 "
                         "workers (see the module docstring)")
    ap.add_argument("--compare", metavar="DIR",
                    help="with --streams: also the proxy of the checkout in DIR")
    ap.add_argument("--concurrency", type=int, default=32, help="with --streams")
    ap.add_argument("--corpus-mb", type=float, default=5.0,
                    help="with --streams: protected text in the span index")
    ap.add_argument("--levels", default="1,32", help="concurrencies, comma-separated")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per run (at concurrency 1: a tenth of it); default 2000, "
                         "with --streams 400")
    ap.add_argument("--latency", type=float, default=0.05, help="upstream latency, seconds")
    ap.add_argument("--config", help="a guard config YAML (default: every check off)")
    ap.add_argument("--speculative", action="store_true", help="run the proxy with --speculative")
    args = ap.parse_args()
    args.requests = args.requests or (400 if args.streams else 2000)
    if args.streams:
        streams(args)
        return

    work = Path(tempfile.mkdtemp(prefix="guard-bench-"))
    cfg = Path(args.config) if args.config else work / "guard.yaml"
    if not args.config:
        cfg.write_text("guard:\n  notice: false\n  status: false\n  risk: false\n")
    upstream = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "loopback_server.py"),
                                 "--latency", str(args.latency)], stdout=subprocess.PIPE,
                                text=True)
    up_url = upstream.stdout.readline().strip()
    cmd = [sys.executable, "-c", SERVE, "guard", "serve", "--upstream", up_url, "--port", "0",
           "--config", str(cfg), "--cache-dir", str(work / "cache")]
    if args.speculative:
        cmd.append("--speculative")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from span_guard import _start

    proxy, proxy_url = _start(cmd, work / "proxy.log")
    try:
        print(f"upstream {up_url} (latency {args.latency * 1000:.0f} ms); proxy {proxy_url}; "
              f"guard config: {args.config or 'every check off'}"
              f"{'; speculative' if args.speculative else ''}; {args.requests} requests per run")
        print(f"{'conc':>4} {'path':>6} {'req/s':>8} {'median ms':>10} {'p95 ms':>8}")
        for level in (int(x) for x in args.levels.split(",")):
            res = {}
            n = args.requests if level > 1 else max(20, args.requests // 10)
            for name, url in (("direct", up_url), ("proxy", proxy_url)):
                wall, lat = asyncio.run(run(url, n, level))
                res[name] = (statistics.median(lat), p95(lat))
                print(f"{level:>4} {name:>6} {n / wall:>8.1f} "
                      f"{res[name][0] * 1000:>10.2f} {res[name][1] * 1000:>8.2f}")
            print(f"{level:>4} {'added':>6} {'':>8} "
                  f"{(res['proxy'][0] - res['direct'][0]) * 1000:>10.2f} "
                  f"{(res['proxy'][1] - res['direct'][1]) * 1000:>8.2f}")
        cpu = os.times()
        print(f"client CPU {cpu.user + cpu.system:.1f} s; {os.cpu_count()} cores on this machine")
    finally:
        proxy.terminate()
        proxy.wait(timeout=20)
        upstream.terminate()
        upstream.wait(timeout=10)


if __name__ == "__main__":
    main()
