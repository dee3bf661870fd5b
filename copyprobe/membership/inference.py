"""Dataset inference (Maini et al. 2024, arXiv 2406.06443): was a suspect set S trained on,
compared with a set V known not to be (assumed drawn from the same distribution)?

Per split: half of each set (seeded) fits a linear model (logistic regression on the
per-document scores, each clipped at the 2.5th and 97.5th percentiles and standardised on
the fitting half, as the authors' code does); on the other halves a one-sided Welch t-test
asks whether S's combined scores are higher than V's. The split is repeated and the
p-values combined by :data:`AGGREGATES` (default twice their median, valid under any
dependence; the harmonic mean of the authors' code is the other choice, and measured
anti-conservative: docs/membership.md). :func:`false_positive_rate` measures what the test claims:
the share of p < alpha over random halvings of a non-member set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as _sps
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from copyprobe.stats.common import clopper_pearson, finite_or_none

#: documents each set needs at least: half fits the linear model, half is tested
MIN_PER_SET = 10
#: the share of each feature's values clipped at either end (2.5% each side)
CLIP = 0.05


def harmonic_mean(p_values: Any) -> float:
    """The harmonic mean of the p-values (0 when one of them is 0), as the authors'
    ``analysis.py`` combines the p-values of repeated t-tests."""
    p = np.asarray(p_values, dtype=float)
    return 0.0 if (p <= 0).any() else float(len(p) / np.sum(1.0 / p))


def twice_median(p_values: Any) -> float:
    """Twice the median p-value, at most 1: valid under any dependence between them
    (Rüschendorf 1982; Vovk and Wang 2020)."""
    return min(1.0, 2.0 * float(np.median(np.asarray(p_values, dtype=float))))


#: how the splits' p-values are combined
AGGREGATES = {"harmonic": harmonic_mean, "twice_median": twice_median}
#: the default combination (config ``statistics.di_aggregate``)
DEFAULT_AGGREGATE = "twice_median"


def _check(suspect: np.ndarray, validation: np.ndarray) -> None:
    for name, arr in (("suspect", suspect), ("validation", validation)):
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise ValueError(f"dataset inference: the {name} set's features must be a "
                             f"(documents, features) array, not shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"dataset inference: the {name} set has non-finite features")
    if suspect.shape[1] != validation.shape[1]:
        raise ValueError(f"dataset inference: {suspect.shape[1]} suspect features against "
                         f"{validation.shape[1]} validation features")
    small = [f"{name} has {len(arr)}" for name, arr in (("suspect", suspect),
                                                          ("validation", validation))
             if len(arr) < MIN_PER_SET]
    if small:
        raise ValueError(f"dataset inference needs at least {MIN_PER_SET} documents in each set "
                         f"(half of each fits the linear model, the other half is tested); "
                         f"{' and '.join(small)}")


def split_p_value(suspect: np.ndarray, validation: np.ndarray,
                  rng: np.random.Generator) -> float:
    """One split's p-value: fit on a random half of each set, Welch-test the other halves."""
    s, v = rng.permutation(len(suspect)), rng.permutation(len(validation))
    s_fit, s_test = suspect[s[:len(s) // 2]], suspect[s[len(s) // 2:]]
    v_fit, v_test = validation[v[:len(v) // 2]], validation[v[len(v) // 2:]]
    fit = np.vstack([s_fit, v_fit])
    lo, hi = np.quantile(fit, [CLIP / 2, 1 - CLIP / 2], axis=0)
    scaler = StandardScaler().fit(np.clip(fit, lo, hi))

    def prepared(x: np.ndarray) -> np.ndarray:
        return scaler.transform(np.clip(x, lo, hi))

    model = LogisticRegression(max_iter=1000).fit(
        prepared(fit), np.r_[np.ones(len(s_fit)), np.zeros(len(v_fit))])
    a = model.decision_function(prepared(s_test))
    b = model.decision_function(prepared(v_test))
    if np.ptp(np.r_[a, b]) == 0:  # no spread at all: no evidence either way
        return 1.0
    return float(_sps.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def dataset_inference(suspect: Any, validation: Any, *, splits: int = 10, seed: int = 0,
                      aggregate: str = DEFAULT_AGGREGATE) -> dict[str, Any]:
    """Dataset inference of ``suspect`` against ``validation`` (arrays of per-document
    features, one row a document). Returns ``p_value`` (the splits' p-values combined by
    ``aggregate``, a name in :data:`AGGREGATES`), ``p_values`` (each split's), ``splits``,
    ``aggregate``, ``n_suspect``, ``n_validation`` and ``features``. ``ValueError`` when a
    set has fewer than :data:`MIN_PER_SET` documents, for non-finite or mismatched features,
    or an unknown ``aggregate``."""
    s, v = np.asarray(suspect, dtype=float), np.asarray(validation, dtype=float)
    _check(s, v)
    if splits < 1:
        raise ValueError(f"dataset inference: splits must be >= 1, got {splits}")
    if aggregate not in AGGREGATES:
        raise ValueError(f"dataset inference: aggregate {aggregate!r} is none of "
                         f"{sorted(AGGREGATES)}")
    rng = np.random.default_rng(seed)
    ps = [split_p_value(s, v, rng) for _ in range(splits)]
    return {"p_value": AGGREGATES[aggregate](ps), "aggregate": aggregate,
            "p_values": [finite_or_none(p) for p in ps], "splits": splits,
            "n_suspect": len(s), "n_validation": len(v), "features": int(s.shape[1])}


def false_positive_rate(nonmembers: Any, *, halvings: int = 200, alpha: float = 0.05,
                        splits: int = 10, seed: int = 0,
                        aggregate: str = DEFAULT_AGGREGATE) -> dict[str, Any]:
    """The measured false-positive rate of :func:`dataset_inference`: ``halvings`` random
    halvings of a non-member set, each half tested against the other; ``rate`` is the share
    of p < ``alpha``, with its exact 95% interval (``rate_ci``). Needs at least
    2 * :data:`MIN_PER_SET` documents."""
    x = np.asarray(nonmembers, dtype=float)
    if len(x) < 2 * MIN_PER_SET:
        raise ValueError(f"measuring dataset inference's false-positive rate needs at least "
                         f"{2 * MIN_PER_SET} non-member documents (two halves of "
                         f"{MIN_PER_SET}); the set has {len(x)}")
    if halvings < 1:
        raise ValueError(f"halvings must be >= 1, got {halvings}")
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(halvings):
        order = rng.permutation(len(x))
        half = len(x) // 2
        p = dataset_inference(x[order[:half]], x[order[half:]], splits=splits,
                              seed=seed + 1 + i, aggregate=aggregate)["p_value"]
        hits += p < alpha
    lo, hi = clopper_pearson(hits, halvings)
    return {"rate": hits / halvings, "rate_ci": [float(lo), float(hi)], "false_positives": hits,
            "halvings": halvings, "alpha": alpha, "n": len(x), "aggregate": aggregate}


def smallest_detecting_size(members: Any, nonmembers: Any, *, alpha: float = 0.05,
                            splits: int = 10, seed: int = 0,
                            aggregate: str = DEFAULT_AGGREGATE) -> dict[str, Any]:
    """The smallest number of documents per set at which dataset inference of members
    against non-members gives p < ``alpha``: sizes from :data:`MIN_PER_SET` up to the
    smaller set, each on a seeded random subset of each set. Returns ``size`` (None: not
    detected even with every document), ``alpha`` and ``p_values`` (size: p, up to the
    first detection)."""
    m, v = np.asarray(members, dtype=float), np.asarray(nonmembers, dtype=float)
    _check(m, v)
    rng = np.random.default_rng(seed)
    ps: dict[str, float] = {}
    for n in range(MIN_PER_SET, min(len(m), len(v)) + 1):
        sm, sv = m[rng.permutation(len(m))[:n]], v[rng.permutation(len(v))[:n]]
        p = dataset_inference(sm, sv, splits=splits, seed=seed + n, aggregate=aggregate)
        ps[str(n)] = p["p_value"]
        if p["p_value"] < alpha:
            return {"size": n, "alpha": alpha, "p_values": ps}
    return {"size": None, "alpha": alpha, "p_values": ps}
