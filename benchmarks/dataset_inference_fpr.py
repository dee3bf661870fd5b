"""Dataset inference's measured false-positive rate under each way of combining its splits
(prints figures, asserts nothing): ``false_positive_rate`` on Gaussian null data (every
document drawn alike, so every p < alpha is a false positive) for each of
:data:`copyprobe.membership.inference.AGGREGATES`, beside alpha.

    python benchmarks/dataset_inference_fpr.py [--halvings 200] [--splits 10]

Figures: docs/benchmarks.md ("Dataset inference's false-positive rate").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from copyprobe.membership.inference import AGGREGATES, false_positive_rate

#: (documents, features) of the null sets
SHAPES = ((60, 4), (40, 7), (200, 7))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--halvings", type=int, default=200)
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    print(f"{'documents':>9} {'features':>8} {'aggregate':<13}{'rate':>6}  {'95% CI':<16}"
          f"{'alpha':>6}{'s':>7}")
    for seed, (n, f) in enumerate(SHAPES):
        x = np.random.default_rng(seed).normal(size=(n, f))
        for name in AGGREGATES:
            t0 = time.perf_counter()
            r = false_positive_rate(x, halvings=args.halvings, splits=args.splits,
                                    alpha=args.alpha, seed=seed, aggregate=name)
            lo, hi = r["rate_ci"]
            print(f"{n:>9} {f:>8} {name:<13}{r['rate']:>6.3f}  [{lo:.3f}, {hi:.3f}]"
                  f"{args.alpha:>8.2f}{time.perf_counter() - t0:>7.1f}")


if __name__ == "__main__":
    main()
