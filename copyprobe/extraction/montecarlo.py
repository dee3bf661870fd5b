"""TEMP stand-in (drop at merge): the math helper's module replaces it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy.stats import beta


def clopper_pearson(k, m, alpha=0.05):
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, m - k + 1))
    hi = 1.0 if k == m else float(beta.ppf(1 - alpha / 2, k + 1, m - k))
    return lo, hi


@dataclass(frozen=True)
class SequentialTest:
    threshold: float
    alpha: float = 0.05
    batch: int = 10
    max_samples: int = 100


@dataclass(frozen=True)
class MCResult:
    hits: int
    samples: int
    lo: float
    hi: float
    decision: str
    looks: int


def run_sequential(sample: Callable[[int, int], Sequence[bool]], test: SequentialTest) -> MCResult:
    hits = m = looks = 0
    while m < test.max_samples:
        count = min(test.batch, test.max_samples - m)
        hits += sum(bool(x) for x in sample(m, count))
        m += count
        looks += 1
        lo, hi = clopper_pearson(hits, m, test.alpha)
        if lo >= test.threshold:
            return MCResult(hits, m, lo, hi, "extractable", looks)
        if hi < test.threshold:
            return MCResult(hits, m, lo, hi, "not_extractable", looks)
    lo, hi = clopper_pearson(hits, m, test.alpha)
    return MCResult(hits, m, lo, hi, "undecided", looks)
