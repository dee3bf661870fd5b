"""Monte Carlo extraction estimates for models that give no prompt log-probabilities.

Reference: docs/extraction.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from copyprobe.stats.common import clopper_pearson

__all__ = [
    "DECISIONS",
    "MCResult",
    "SequentialTest",
    "clopper_pearson",
    "compare_sequential_fixed",
    "fixed_design_samples",
    "run_sequential",
]

#: The outcomes of a sequential test.
DECISIONS = ("extractable", "not_extractable", "undecided")


def _decide(lo: Any, hi: Any, threshold: float) -> np.ndarray:
    """Decision codes: 0 extractable (``lo >= threshold``), 1 not extractable
    (``hi < threshold``), 2 undecided (indices into :data:`DECISIONS`)."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    return np.where(lo >= threshold, 0, np.where(hi < threshold, 1, 2))


@dataclass(frozen=True)
class SequentialTest:
    """A group-sequential Clopper-Pearson test of ``p_z >= threshold``.

    Samples are drawn ``batch`` at a time, at most ``max_samples`` in all. After each batch
    from ``min_samples`` samples on (and always at ``max_samples``) the test *looks*: it
    computes the Clopper-Pearson interval at level ``1 - alpha / planned_looks`` and stops
    with ``not_extractable`` when ``hi < threshold``, with ``extractable`` when
    ``lo >= threshold``; after the last look without either it is ``undecided``.

    Error control (Bonferroni over the looks): a wrong decision at a look needs that look's
    interval to miss the true rate, which happens with probability at most
    ``alpha / planned_looks``; summed over the planned looks the chance of any wrong decision
    is at most ``alpha``, however the looks depend on each other. With the default
    ``min_samples = batch`` the planned looks are ``ceil(max_samples / batch)``.

    ``threshold`` is the per-sample hit rate ``q*`` that decides; for an (n,p) target it is
    ``pz_threshold(n, p)``.
    """

    threshold: float
    alpha: float = 0.05
    batch: int = 10
    max_samples: int = 100
    min_samples: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in (0, 1], got {self.threshold!r}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha!r}")
        for name in ("batch", "max_samples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.min_samples is None:
            object.__setattr__(self, "min_samples", self.batch)
        m = self.min_samples
        if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= self.max_samples:
            raise ValueError(f"min_samples must be an integer in [1, max_samples="
                             f"{self.max_samples}], got {m!r}")

    def look_points(self) -> list[int]:
        """The sample counts at which the test looks."""
        ends = list(range(self.batch, self.max_samples, self.batch)) + [self.max_samples]
        return [e for e in ends if e >= self.min_samples]

    @property
    def planned_looks(self) -> int:
        """How many looks the test plans (the Bonferroni divisor)."""
        return len(self.look_points())

    @property
    def look_alpha(self) -> float:
        """The level of each look's interval: ``alpha / planned_looks``."""
        return self.alpha / self.planned_looks


@dataclass(frozen=True)
class MCResult:
    """The outcome of a sequential test: ``hits`` of ``samples``, the last look's interval
    ``[lo, hi]`` (at the per-look level), the ``decision`` (one of :data:`DECISIONS`) and
    the number of ``looks`` taken."""

    hits: int
    samples: int
    lo: float
    hi: float
    decision: str
    looks: int

    @property
    def estimate(self) -> float:
        """The observed hit rate ``hits / samples`` (NaN without samples)."""
        return self.hits / self.samples if self.samples else math.nan

    def as_dict(self) -> dict[str, Any]:
        """The fields and the estimate, as a JSON-able dict (no NaN: ``None``)."""
        out = asdict(self)
        out["estimate"] = None if not self.samples else self.estimate
        return out


def run_sequential(sample: Callable[[int, int], Sequence[bool]],
                   test: SequentialTest) -> MCResult:
    """Run ``test``, drawing samples through ``sample(start, count)``.

    ``sample`` is called with ``start = 0, batch, 2 * batch, ...`` (the last call may ask for
    fewer than ``batch`` to end at ``max_samples``) and must return exactly ``count`` hit
    flags, those of sample indices ``start .. start + count - 1``; a wrong count is a
    ``ValueError``.
    """
    hits = samples = looks = 0
    points = test.look_points()
    lo, hi = 0.0, 1.0
    stops = sorted(set(range(test.batch, test.max_samples, test.batch)) | {test.max_samples})
    for end in stops:
        count = end - samples
        flags = list(sample(samples, count))
        if len(flags) != count:
            raise ValueError(f"sample({samples}, {count}) returned {len(flags)} flags, "
                             f"expected {count}")
        hits += sum(bool(f) for f in flags)
        samples = end
        if end not in points:
            continue
        looks += 1
        lo, hi = clopper_pearson(hits, samples, test.look_alpha)
        code = int(_decide(lo, hi, test.threshold))
        if code != 2:
            return MCResult(hits, samples, lo, hi, DECISIONS[code], looks)
    return MCResult(hits, samples, lo, hi, "undecided", looks)


def _width(k: np.ndarray, m: np.ndarray, alpha: float) -> np.ndarray:
    lo, hi = clopper_pearson(k, m, alpha)
    return np.asarray(hi) - np.asarray(lo)


def fixed_design_samples(width: float, p0: float, alpha: float = 0.05,
                         limit: int = 10_000_000) -> int:
    """The smallest sample count ``m`` whose Clopper-Pearson interval (level ``1 - alpha``,
    one look) at ``round(p0 * m)`` hits is at most ``width`` wide: what a fixed-size design
    needs for that precision when the true rate is ``p0``. ``ValueError`` when even
    ``limit`` samples do not reach it."""
    if not 0.0 < width <= 1.0:
        raise ValueError(f"width must lie in (0, 1], got {width!r}")
    if not 0.0 <= p0 <= 1.0:
        raise ValueError(f"p0 must lie in [0, 1], got {p0!r}")
    upper = 1
    while float(_width(np.round(p0 * upper), np.asarray(upper), alpha)) > width:
        upper *= 2
        if upper > limit:
            raise ValueError(f"no fixed design of at most {limit} samples reaches width "
                             f"{width} at rate {p0}")
    for chunk in range(1, upper + 1, 100_000):
        m = np.arange(chunk, min(chunk + 100_000, upper + 1))
        ok = np.flatnonzero(_width(np.round(p0 * m), m, alpha) <= width)
        if ok.size:
            return int(m[ok[0]])
    return upper  # unreachable: ``upper`` itself qualifies


def _simulate_sequential(flags: np.ndarray, test: SequentialTest) -> tuple[np.ndarray,
                                                                            np.ndarray,
                                                                            np.ndarray]:
    """Samples used, decision codes and final interval width of ``test`` on each row of
    ``flags`` (trials x max_samples hit flags), vectorised over rows."""
    trials = flags.shape[0]
    cum = np.cumsum(flags, axis=1)
    used = np.full(trials, test.max_samples)
    code = np.full(trials, 2)
    width = np.full(trials, np.nan)
    open_ = np.ones(trials, dtype=bool)
    for end in test.look_points():
        k = cum[open_, end - 1]
        lo, hi = clopper_pearson(k, np.full(k.shape, end), test.look_alpha)
        c = _decide(lo, hi, test.threshold)
        rows = np.flatnonzero(open_)
        width[rows] = np.asarray(hi) - np.asarray(lo)
        stop = rows[c != 2]
        used[stop] = end
        code[stop] = c[c != 2]
        open_[stop] = False
    return used, code, width


def _errors(code: np.ndarray, q: float, threshold: float) -> float:
    wrong = 1 if q >= threshold else 0  # deciding "not extractable" is wrong when q >= q*
    return float(np.mean(code == wrong))


def compare_sequential_fixed(true_q_values: Sequence[float], test: SequentialTest,
                             rng_seed: int = 0, trials: int = 2000) -> pd.DataFrame:
    """Simulated cost and errors of ``test`` against a fixed design of the same width.

    For each true hit rate ``q`` the sequential test runs on ``trials`` simulated sample
    streams (Bernoulli(q), ``numpy.random.default_rng(rng_seed)``). The fixed design is
    the sample count that gives, at level ``1 - alpha`` and rate ``q``, an interval as wide
    as the sequential test's at its last look (``max_samples`` at ``1 - look_alpha``): both
    designs end with the same precision, the fixed one always pays for all of it. It decides
    once, with the same rule, on simulated streams of its own.

    Columns: ``q``, ``threshold``, ``seq_mean_samples``, ``seq_extractable``,
    ``seq_not_extractable``, ``seq_undecided`` (fractions of trials), ``seq_error`` (fraction
    of trials with the wrong decision: ``not_extractable`` although ``q >= threshold`` or
    ``extractable`` although ``q < threshold``), ``width``, ``fixed_samples``,
    ``fixed_undecided``, ``fixed_error`` and ``saving`` (``fixed_samples /
    seq_mean_samples``).
    """
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    rng = np.random.default_rng(rng_seed)
    rows = []
    for q in true_q_values:
        q = float(q)
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"true rates must lie in [0, 1], got {q}")
        flags = rng.random((trials, test.max_samples)) < q
        used, code, _ = _simulate_sequential(flags, test)
        k_end = round(q * test.max_samples)
        width = float(_width(np.asarray(k_end), np.asarray(test.max_samples), test.look_alpha))
        fixed = fixed_design_samples(width, q, test.alpha)
        k_fixed = rng.binomial(fixed, q, size=trials)
        lo, hi = clopper_pearson(k_fixed, np.full(trials, fixed), test.alpha)
        fixed_code = _decide(lo, hi, test.threshold)
        rows.append({
            "q": q, "threshold": test.threshold,
            "seq_mean_samples": float(used.mean()),
            "seq_extractable": float(np.mean(code == 0)),
            "seq_not_extractable": float(np.mean(code == 1)),
            "seq_undecided": float(np.mean(code == 2)),
            "seq_error": _errors(code, q, test.threshold),
            "width": width, "fixed_samples": fixed,
            "fixed_undecided": float(np.mean(fixed_code == 2)),
            "fixed_error": _errors(fixed_code, q, test.threshold),
            "saving": fixed / float(used.mean()),
        })
    return pd.DataFrame(rows)
