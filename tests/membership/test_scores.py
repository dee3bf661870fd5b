"""Each membership score against values computed by hand on a tiny case."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from copyprobe.generation.logprob_scoring import TokenScores, logit_scores, logit_scores_and_moments
from copyprobe.membership.scores import (
    document_scores,
    lowest_k_mean,
    min_k,
    min_k_plus_plus,
    zlib_ratio,
)

# three positions over a vocabulary of three tokens; the targets are tokens 0, 2 and 1
LOGITS = np.log(np.array([[0.5, 0.25, 0.25], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1]]))
TARGETS = [0, 2, 1]


def test_log_probs_and_moments_by_hand():
    logprobs, argmax = logit_scores(LOGITS, TARGETS)
    assert logprobs == pytest.approx([math.log(0.5), math.log(0.1), math.log(0.8)])
    assert argmax == [True, False, True]
    again, _, mean, std = logit_scores_and_moments(LOGITS, TARGETS)
    assert again == logprobs  # bit for bit
    # row 0: mu = 0.5 ln .5 + 2 * .25 ln .25; E[(ln p)^2] = .5 ln^2 .5 + .5 ln^2 .25
    mu0 = 0.5 * math.log(0.5) + 0.5 * math.log(0.25)
    var0 = 0.5 * math.log(0.5) ** 2 + 0.5 * math.log(0.25) ** 2 - mu0 ** 2
    assert mean[0] == pytest.approx(mu0) and std[0] == pytest.approx(math.sqrt(var0))
    mu2 = 0.8 * math.log(0.8) + 0.2 * math.log(0.1)
    var2 = 0.8 * math.log(0.8) ** 2 + 0.2 * math.log(0.1) ** 2 - mu2 ** 2
    assert mean[2] == pytest.approx(mu2) and std[2] == pytest.approx(math.sqrt(var2))
    # a shift of the logits changes nothing; a uniform row has no spread
    assert logit_scores_and_moments(LOGITS + 7.0, TARGETS)[2] == pytest.approx(mean)
    assert logit_scores_and_moments(np.zeros((1, 4)), [0])[3] == pytest.approx([0.0])
    # a -inf logit: the token has probability 0 and adds nothing to the moments
    two = logit_scores_and_moments(np.array([[0.0, -np.inf, 1.0]]), [2])
    q = 1 / (1 + math.e)
    assert two[2][0] == pytest.approx(q * math.log(q) + (1 - q) * math.log(1 - q))


def test_scores_by_hand():
    lp = [math.log(0.5), math.log(0.1), math.log(0.8), math.log(0.4), math.log(0.9),
          math.log(0.6), math.log(0.7), math.log(0.3), math.log(0.2), math.log(0.05)]
    text = "a small document"
    out = document_scores(lp, text)
    nll = -sum(lp) / 10
    assert out["loss"] == pytest.approx(nll)
    assert out["zlib_ratio"] == pytest.approx(nll / len(zlib.compress(text.encode())))
    assert zlib_ratio(lp, text) == out["zlib_ratio"]
    # k = 10%: the single lowest; k = 20%: the mean of the two lowest
    assert out["min_k_10"] == pytest.approx(math.log(0.05))
    assert out["min_k_20"] == pytest.approx((math.log(0.05) + math.log(0.1)) / 2)
    assert "min_kpp_10" not in out and "reference_ratio" not in out
    assert document_scores(lp, text, reference_loss=1.5)["reference_ratio"] == \
        pytest.approx(nll - 1.5)


def test_min_k_plus_plus_by_hand():
    logprobs, _, mean, std = logit_scores_and_moments(LOGITS, TARGETS)
    z = [(a - m) / s for a, m, s in zip(logprobs, mean, std)]
    # 3 tokens: 10% and 20% both take max(1, floor(0.3 or 0.6)) = 1, the lowest z
    assert min_k_plus_plus(logprobs, mean, std, 20) == pytest.approx(min(z))
    assert min_k_plus_plus(logprobs, mean, std, 100) == pytest.approx(sum(z) / 3)
    out = document_scores(logprobs, "x", mean=mean, std=std)
    assert out["min_kpp_10"] == pytest.approx(min(z)) and out["n_tokens"] == 3


def test_lowest_k_takes_at_least_one_and_floor_otherwise():
    assert lowest_k_mean([3.0, 1.0, 2.0], 10) == 1.0
    assert lowest_k_mean(list(range(20)), 20) == pytest.approx(1.5)  # 4 lowest: 0..3
    assert min_k([-1.0, -2.0], 50) == -2.0
    with pytest.raises(ValueError, match="without scored tokens"):
        document_scores([], "x")


def test_token_scores_carry_the_moments_through_the_cache_format():
    s = TokenScores(token_ids=(1, 2), logprobs=(-1.0, -2.0), argmax=(True, False),
                    path="one_pass", n_context_tokens=1, dist_mean=(-0.5, -0.7),
                    dist_std=(0.2, 0.3))
    again = TokenScores.from_dict(s.as_dict())
    assert again == s and again.has_moments
    plain = TokenScores(token_ids=(1,), logprobs=(-1.0,), argmax=(True,), path="one_pass",
                        n_context_tokens=1)
    assert "dist_mean" not in plain.as_dict() and not plain.has_moments
    with pytest.raises(ValueError, match="distribution means"):
        TokenScores(token_ids=(1, 2), logprobs=(-1.0, -2.0), argmax=(True, False),
                    path="one_pass", n_context_tokens=1, dist_mean=(0.0,), dist_std=(0.0,))
