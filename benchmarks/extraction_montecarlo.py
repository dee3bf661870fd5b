"""Samples the sequential Monte Carlo test needs, against a fixed design of the same width.

For models without prompt log-probabilities the extraction study estimates ``p_z`` by
sampling continuations and counting exact reproductions of the suffix
(:mod:`copyprobe.extraction.montecarlo`). The sequential test draws ``--batch`` samples at a
time, up to ``--max-samples``, and stops once its Clopper-Pearson interval (Bonferroni over
the planned looks) lies wholly on one side of the threshold ``q* = pz_threshold(n, p)``. The
fixed design draws, at every true rate ``q``, the number of samples whose one-look interval
is as wide as the sequential test's at its last look, and decides once.

For each (n,p) target and true hit rate ``q`` it prints, from ``--trials`` simulated sample
streams: the mean samples of the sequential test, its decision rates and error rate (the
fraction of wrong decisions), the fixed design's samples and error rate, and the saving
(fixed samples / sequential mean; above 1 the sequential test is cheaper). Simulation only:
no model is loaded.

Usage::

    python benchmarks/extraction_montecarlo.py [--trials 4000] [--seed 0] [--batch 10]
                                               [--max-samples 100] [--alpha 0.05]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from copyprobe.extraction.discoverability import pz_threshold
from copyprobe.extraction.montecarlo import SequentialTest, compare_sequential_fixed

#: True per-sample hit rates simulated.
Q_VALUES = (0.0, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9)
#: (n, p) targets: the thresholds q* 0.5, 0.067 and 0.0069.
TARGETS = ((1, 0.5), (10, 0.5), (100, 0.5))

COLUMNS = {"q": "q", "seq_mean_samples": "seq samples", "seq_extractable": "seq extr",
           "seq_not_extractable": "seq not", "seq_undecided": "seq undec",
           "seq_error": "seq error", "fixed_samples": "fixed samples",
           "fixed_undecided": "fixed undec", "fixed_error": "fixed error", "saving": "saving"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--max-samples", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    for n, p in TARGETS:
        test = SequentialTest(threshold=pz_threshold(n, p), alpha=args.alpha,
                              batch=args.batch, max_samples=args.max_samples)
        table = compare_sequential_fixed(Q_VALUES, test, rng_seed=args.seed,
                                         trials=args.trials)
        print(f"\n(n={n}, p={p}): threshold q* = {test.threshold:.4g}; batch {test.batch}, at "
              f"most {test.max_samples} samples, {test.planned_looks} looks at level "
              f"{1 - test.look_alpha:.4f} (alpha {test.alpha} overall); {args.trials} trials")
        shown = table[list(COLUMNS)].rename(columns=COLUMNS)
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        mean_seq = table["seq_mean_samples"].mean()
        print(f"mean over the q grid: sequential {mean_seq:.1f} samples, fixed "
              f"{table['fixed_samples'].mean():.1f}, the fixed design without early stop "
              f"{test.max_samples}")
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()
