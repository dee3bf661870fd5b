"""The standard per-document membership scores from one teacher-forced pass.

Each score reads the per-token log-probabilities of a document (natural log) and, for
Min-k%++, the mean and standard deviation of the log-probability under the model's full
next-token distribution at each position. Definitions as MIMIR (iamgroot42/mimir) and the
papers give them (docs/membership.md); every score is stored with its natural sign, and
:data:`MEASURES` says which direction points to "member".
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

#: Min-k% and Min-k%++ at these k (percent of the document's tokens)
KS = (10, 20)

#: each score and its sign: +1 when a higher value means "more likely a member", -1 when lower
MEASURES: dict[str, int] = {
    "loss": -1,
    "zlib_ratio": -1,
    **{f"min_k_{k}": 1 for k in KS},
    **{f"min_kpp_{k}": 1 for k in KS},
    "reference_ratio": -1,
}
#: the scores that need the next-token distribution's moments
NEEDS_MOMENTS = tuple(f"min_kpp_{k}" for k in KS)
#: the scores that need a reference model
NEEDS_REFERENCE = ("reference_ratio",)


def oriented(data: Any, names: Sequence[str]) -> np.ndarray:
    """The ``names`` columns of a per-document table as one row a document, each signed by
    :data:`MEASURES` so that higher means "member" (dataset inference's features)."""
    values = data[list(names)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    return values * np.array([MEASURES[n] for n in names])


def loss(logprobs: Sequence[float]) -> float:
    """Mean negative log-likelihood per token."""
    return -math.fsum(logprobs) / len(logprobs)


def zlib_bytes(text: str) -> int:
    """The length in bytes of the zlib-compressed UTF-8 text (default level, as MIMIR)."""
    return len(zlib.compress(text.encode("utf-8")))


def zlib_ratio(logprobs: Sequence[float], text: str) -> float:
    """Loss over the zlib-compressed length of the text (Carlini et al. 2021, MIMIR)."""
    return loss(logprobs) / zlib_bytes(text)


def lowest_k_mean(values: Sequence[float], k: float) -> float:
    """The mean of the ``k`` percent lowest values: ``max(1, floor(n * k / 100))`` of them
    (MIMIR takes ``floor``; at least one, so that a short document has a score)."""
    arr = np.sort(np.asarray(values, dtype=np.float64))
    m = max(1, int(len(arr) * k / 100))
    return float(arr[:m].mean())


def min_k(logprobs: Sequence[float], k: float) -> float:
    """Min-k% (Shi et al. 2024): the mean log-probability of the k% least likely tokens."""
    return lowest_k_mean(logprobs, k)


def standardised(logprobs: Sequence[float], mean: Sequence[float],
                 std: Sequence[float]) -> np.ndarray:
    """Each token's ``(log p - mu) / sigma`` (a position whose distribution has no spread,
    sigma 0, is divided by 1e-12: Min-k%++ takes the lowest, so such a token counts only if
    it was not the one certain token)."""
    lp, mu, sd = (np.asarray(x, dtype=np.float64) for x in (logprobs, mean, std))
    return (lp - mu) / np.maximum(sd, 1e-12)


def min_k_plus_plus(logprobs: Sequence[float], mean: Sequence[float], std: Sequence[float],
                    k: float) -> float:
    """Min-k%++ (Zhang et al. 2024): Min-k% of the standardised log-probabilities."""
    return lowest_k_mean(standardised(logprobs, mean, std), k)


def document_scores(logprobs: Sequence[float], text: str, *,
                    mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                    reference_loss: float | None = None) -> dict[str, float]:
    """The scores of one document: ``n_tokens``, ``loss``, ``zlib_ratio``, ``min_k_K`` and,
    given the moments, ``min_kpp_K`` for each K of :data:`KS`, and ``reference_ratio`` (loss
    minus ``reference_loss``) given a reference model's loss on the same tokens."""
    if not logprobs:
        raise ValueError("a document without scored tokens has no membership score")
    out: dict[str, float] = {"n_tokens": len(logprobs), "loss": loss(logprobs),
                             "zlib_ratio": zlib_ratio(logprobs, text)}
    for k in KS:
        out[f"min_k_{k}"] = min_k(logprobs, k)
    if mean is not None and std is not None:
        for k in KS:
            out[f"min_kpp_{k}"] = min_k_plus_plus(logprobs, mean, std, k)
    if reference_loss is not None:
        out["reference_ratio"] = out["loss"] - reference_loss
    return out

