"""ROUGE-L with rouge-score's exact numbers, at benchmark scale.

Reference: docs/copyright-metrics.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from nltk.stem import porter
from rouge_score import scoring, tokenize

from copyprobe.copyright.metrics._inputs import check_pairs

__all__ = ["RougeL", "lcs_length", "rouge_l", "rouge_l_many", "tokens"]


class _CachedStemmer:
    """NLTK's Porter stemmer (the one rouge-score's DefaultTokenizer builds), memoized per word:
    stemming is a pure function of the word, so the cache changes no result."""

    def __init__(self) -> None:
        self._stemmer = porter.PorterStemmer()
        self._cache: dict[str, str] = {}

    def stem(self, word: str) -> str:
        out = self._cache.get(word)
        if out is None:
            out = self._cache[word] = self._stemmer.stem(word)
        return out


_STEMMER = _CachedStemmer()


def tokens(text: str) -> list[str]:
    """rouge-score's tokens of ``text`` with stemming (``DefaultTokenizer(use_stemmer=True)``)."""
    return tokenize.tokenize(text, _STEMMER)


def _masks(seq: Sequence[str]) -> dict[str, int]:
    """For each distinct token, the int whose bit ``i`` is set where ``seq[i]`` is that token."""
    positions: dict[str, list[int]] = {}
    for i, tok in enumerate(seq):
        positions.setdefault(tok, []).append(i)
    masks = {}
    for tok, where in positions.items():
        m = 0
        for i in where:
            m |= 1 << i
        masks[tok] = m
    return masks


def _lcs_from_masks(masks: dict[str, int], n_bits: int, other: Sequence[str]) -> int:
    # V starts all ones; per token y of the other sequence, with U = V & M[y]:
    # V <- (V + U) | (V - U). The zeros of V's low n_bits bits count the LCS. Carries above
    # bit n_bits - 1 never reach the low bits (addition and subtraction propagate upwards only)
    # and U is a subset of V, so the loop can skip masking and mask once at the end.
    v = (1 << n_bits) - 1
    get = masks.get
    for tok in other:
        m = get(tok)
        if m:
            u = v & m
            v = (v + u) | (v - u)
    return n_bits - (v & ((1 << n_bits) - 1)).bit_count()


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    if not a or not b:
        return 0
    if len(a) < len(b):  # bits over the longer one: fewer (if wider) big-int steps
        a, b = b, a
    return _lcs_from_masks(_masks(a), len(a), b)


def _score(lcs: int, n_pred: int, n_ref: int) -> tuple[float, float, float]:
    # rouge_score.rouge_scorer._score_lcs: all three are 0 when either side has no tokens
    if not n_pred or not n_ref:
        return 0.0, 0.0, 0.0
    precision = lcs / n_pred
    recall = lcs / n_ref
    return precision, recall, scoring.fmeasure(precision, recall)


def rouge_l(prediction: str, reference: str) -> tuple[float, float, float]:
    """ROUGE-L (precision, recall, F1) of ``prediction`` against ``reference``, with stemming.

    The same numbers as ``RougeScorer(["rougeL"], use_stemmer=True).score(reference,
    prediction)["rougeL"]`` (note rouge-score takes the reference first).
    """
    p, r = tokens(prediction), tokens(reference)
    return _score(lcs_length(p, r), len(p), len(r))


class RougeL:
    """ROUGE-L over many pairs, tokenizing each distinct text once and building the bit masks
    of each distinct reference once."""

    @staticmethod
    def settings() -> dict[str, str]:
        """What determines the scores, for provenance."""
        from importlib.metadata import version

        return {"metric": "rouge_l", "tokenizer": "rouge_score.tokenize", "stemmer": "porter",
                "lcs": "bit-parallel", "rouge_score_version": version("rouge-score"),
                "nltk_version": version("nltk")}

    def __init__(self) -> None:
        self._tokens: dict[str, list[str]] = {}
        self._ref_masks: dict[str, dict[str, int]] = {}

    def _tok(self, text: str) -> list[str]:
        out = self._tokens.get(text)
        if out is None:
            out = self._tokens[text] = tokens(text)
        return out

    def score(self, prediction: str, reference: str) -> tuple[float, float, float]:
        p, r = self._tok(prediction), self._tok(reference)
        if not p or not r:
            return _score(0, len(p), len(r))
        masks = self._ref_masks.get(reference)
        if masks is None:
            masks = self._ref_masks[reference] = _masks(r)
        return _score(_lcs_from_masks(masks, len(r), p), len(p), len(r))

    def many(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        predictions, references = check_pairs("rouge_l_many", predictions, references)
        out = np.empty((len(predictions), 3), dtype=np.float64)
        for i, (pred, ref) in enumerate(zip(predictions, references, strict=True)):
            out[i] = self.score(pred, ref)
        return out


def rouge_l_many(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """ROUGE-L of each pair: an array of shape ``(n, 3)``, columns precision, recall, F1."""
    return RougeL().many(predictions, references)
