"""Benchmark of the HTTP clients a model-server call could use: requests per second, latency
and the client's CPU per request, against ``benchmarks/loopback_server.py`` (an asyncio
OpenAI-compatible server in its own process, a fixed answer after ``--latency`` seconds) at
concurrency 1, 8 and 64, the candidates side by side (prints figures; nothing is asserted);
then the synchronous clients (one request at a time): ``httpx2.Client``, ``openai.OpenAI`` and
the backend's own ``OpenAIBackend.generate`` (whatever stack it runs on).

Candidates, each posting the same chat request: ``httpx2`` (``httpx2.AsyncClient``, the guard
proxy's upstream client and the transport of the openai SDK), ``aiohttp``
(``aiohttp.ClientSession``), ``openai-sdk`` (``openai.AsyncOpenAI(...).chat.completions
.create``) and the backend itself (``OpenAIBackend.agenerate``, whatever it uses).

    python benchmarks/http_clients.py [--requests 600] [--latency 0.0] [--levels 1,8,64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BODY = {"model": "bench-model", "messages": [{"role": "user", "content": "Say echo."}],
        "temperature": 0.0, "max_tokens": 8}
HEADERS = {"Authorization": "Bearer not-needed"}

Post = Callable[[], Awaitable[None]]


async def _httpx2(base: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    import httpx2

    client = httpx2.AsyncClient(headers=HEADERS, timeout=60,
                                limits=httpx2.Limits(max_connections=None,
                                                     max_keepalive_connections=None))

    async def post() -> None:
        r = await client.post(f"{base}/chat/completions", json=BODY)
        r.raise_for_status()
        r.json()

    return post, client.aclose


async def _aiohttp(base: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    import aiohttp

    session = aiohttp.ClientSession(headers=HEADERS, connector=aiohttp.TCPConnector(limit=0))

    async def post() -> None:
        async with session.post(f"{base}/chat/completions", json=BODY) as r:
            r.raise_for_status()
            await r.json()

    return post, session.close


async def _sdk(base: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key="not-needed", max_retries=0)

    async def post() -> None:
        await client.chat.completions.create(**BODY)

    return post, client.close


async def _backend(base: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    from copyprobe.generation.base import Decoding
    from copyprobe.generation.openai_api import OpenAIBackend
    from copyprobe.prompt import Prompt

    backend = OpenAIBackend(model_id="bench-model", base_url=base, api_key_optional=True,
                            api_key_env="COPYPROBE_BENCH_NO_KEY")
    prompt = Prompt("chat", messages=({"role": "user", "content": "Say echo."},))
    decoding = Decoding(max_tokens=8)

    async def post() -> None:
        await backend.agenerate(prompt, decoding)

    return post, backend.aclose


CANDIDATES = {"httpx2": _httpx2, "aiohttp": _aiohttp, "openai-sdk": _sdk,
              "backend": _backend}


async def measure(make: Callable, base: str, concurrency: int, n: int) -> dict[str, float]:
    post, close = await make(base)
    for _ in range(min(concurrency, 8)):  # warm-up: connections made, imports done
        await post()
    latencies: list[float] = []
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            t = time.perf_counter()
            await post()
            latencies.append(time.perf_counter() - t)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await close()
    q = statistics.quantiles(latencies, n=20)
    return {"rps": n / wall, "p50_ms": 1e3 * statistics.median(latencies),
            "p95_ms": 1e3 * q[18], "cpu_ms": 1e3 * cpu / n}


def measure_sync(name: str, base: str, n: int) -> dict[str, float]:
    if name == "httpx2":
        import httpx2

        client = httpx2.Client(headers=HEADERS, timeout=60)

        def post() -> None:
            r = client.post(f"{base}/chat/completions", json=BODY)
            r.raise_for_status()
            r.json()
    elif name == "openai-sdk":
        import openai

        client = openai.OpenAI(base_url=base, api_key="not-needed", max_retries=0)

        def post() -> None:
            client.chat.completions.create(**BODY)
    else:
        from copyprobe.generation.base import Decoding
        from copyprobe.generation.openai_api import OpenAIBackend
        from copyprobe.prompt import Prompt

        client = OpenAIBackend(model_id="bench-model", base_url=base, api_key_optional=True,
                               api_key_env="COPYPROBE_BENCH_NO_KEY")
        prompt = Prompt("chat", messages=tuple(BODY["messages"]))
        decoding = Decoding(temperature=0.0, max_tokens=8)

        def post() -> None:
            client.generate(prompt, decoding)
    post()
    latencies = []
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        post()
        latencies.append(time.perf_counter() - t)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    client.close()
    return {"rps": n / wall, "p50_ms": 1e3 * statistics.median(latencies),
            "cpu_ms": 1e3 * cpu / n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--latency", type=float, default=0.0, help="the server's latency (s)")
    ap.add_argument("--levels", default="1,8,64")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    args = ap.parse_args()
    server = subprocess.Popen([sys.executable, str(HERE / "loopback_server.py"),
                               "--latency", str(args.latency)], stdout=subprocess.PIPE,
                              text=True)
    try:
        base = server.stdout.readline().strip()
        rows = []
        for level in map(int, args.levels.split(",")):
            for name in args.candidates.split(","):
                r = asyncio.run(measure(CANDIDATES[name], base, level, args.requests))
                rows.append((level, name, r))
                print(f"  c={level:<3} {name:<11} {r['rps']:8.0f} req/s  p50 {r['p50_ms']:6.2f} "
                      f"ms  p95 {r['p95_ms']:6.2f} ms  client CPU {r['cpu_ms']:5.2f} ms/req",
                      file=sys.stderr, flush=True)
        sync = {name: measure_sync(name, base, args.requests)
                for name in ("httpx2", "openai-sdk", "backend")}
    finally:
        server.terminate()
        server.wait()
    names = args.candidates.split(",")
    print(f"\n{args.requests} chat requests per cell, server latency {args.latency:g} s; "
          "req/s (client CPU ms per request):")
    print("| concurrency | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for level in map(int, args.levels.split(",")):
        cells = [f"{r['rps']:.0f} ({r['cpu_ms']:.2f})" for lv, n, r in rows if lv == level]
        print(f"| {level} | " + " | ".join(cells) + " |")
    print("\np50 / p95 latency (ms):")
    print("| concurrency | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for level in map(int, args.levels.split(",")):
        cells = [f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f}" for lv, n, r in rows if lv == level]
        print(f"| {level} | " + " | ".join(cells) + " |")
    print("\nsynchronous, one request at a time: req/s, p50 ms, client CPU ms per request")
    for name, r in sync.items():
        print(f"  {name:<11} {r['rps']:8.0f}  {r['p50_ms']:6.2f}  {r['cpu_ms']:5.2f}")


if __name__ == "__main__":
    main()
