"""The bit-parallel ROUGE-L gives rouge-score's own numbers."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rouge_score import rouge_scorer

from copyprobe.copyright.metrics.rouge import RougeL, lcs_length, rouge_l, rouge_l_many, tokens

# words that exercise the tokenizer: stems (running/runs/ran), words of 3 characters or fewer
# (never stemmed), digits, case, punctuation glued to words, non-ASCII letters (separators for
# rouge-score) and tokens that vanish entirely
WORDS = ("the a of cat cats running runs ran run connection connected connecting generously "
         "gen 42 2024 Copyright (c) All-rights reserved. naïve café © — “quoted” x7 ALPHA "
         "alpha, beta; gamma! delta? e.g. U.S.A. don't it's 3.14 α β ...").split()


def _text(rng: random.Random, n: int) -> str:
    vocab = WORDS + [f"w{i}" for i in range(rng.choice((3, 30, 300)))]
    return rng.choice((" ", "  ", "\n", "\t")).join(rng.choice(vocab) for _ in range(n))


def _mutate(rng: random.Random, text: str) -> str:
    """A copy with some words deleted, replaced and inserted: a response that regurgitates."""
    out = []
    for w in text.split():
        r = rng.random()
        if r < 0.1:
            continue
        out.append(rng.choice(WORDS) if r < 0.2 else w)
        if rng.random() < 0.05:
            out.append(rng.choice(WORDS))
    return " ".join(out)


def _length(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.06:
        return 0
    if r < 0.12:
        return 1
    if r < 0.13:
        return rng.randint(1900, 2100)
    return rng.randint(2, 400)


def _pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        ref = _text(rng, _length(rng))
        kind = i % 4
        if kind == 0:  # independent texts
            pred = _text(rng, _length(rng))
        elif kind == 1:  # heavy overlap: an edited copy
            pred = _mutate(rng, ref)
        elif kind == 2:  # a copied span with text around it
            w = ref.split()
            a = rng.randint(0, len(w))
            b = rng.randint(a, len(w))
            pred = " ".join([_text(rng, rng.randint(0, 20)), *w[a:b],
                             _text(rng, rng.randint(0, 20))])
        else:  # punctuation only or one token on either side
            pred = rng.choice(("...", "— ©", "", "cat", "CATS!", ref))
        pairs.append((pred, ref))
    return pairs


def test_thousand_random_pairs_equal_rouge_score() -> None:
    pairs = _pairs(1000, seed=20261130)
    preds, refs = [p for p, _ in pairs], [r for _, r in pairs]
    n_tokens = [len(tokens(t)) for t in preds + refs]
    # the sample covers what it claims: empty, single-token and ~2,000-token texts
    assert min(n_tokens) == 0 and 1 in n_tokens and max(n_tokens) > 1800
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = np.array([tuple(scorer.score(r, p)["rougeL"]) for p, r in pairs])
    got = rouge_l_many(preds, refs)
    assert got.shape == (1000, 3)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    # and the one-pair function agrees too
    for i in range(0, 1000, 97):
        np.testing.assert_allclose(rouge_l(*pairs[i]), expected[i], rtol=0, atol=1e-9)
    # the sample is not degenerate: zeros, perfect scores and values between
    assert (expected[:, 2] == 0).sum() > 50 and (expected[:, 2] == 1).sum() > 10
    assert ((expected[:, 2] > 0.3) & (expected[:, 2] < 0.99)).sum() > 200


def test_lcs_length_matches_the_dynamic_program() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 80))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 80))]
        table = rouge_scorer._lcs_table(a, b)
        assert lcs_length(a, b) == table[-1][-1] == lcs_length(b, a)


def test_hand_checked_pairs() -> None:
    # precision is over the prediction, recall over the reference
    p, r, f = rouge_l("The cat sat.", "the cat sat on the mat")
    assert (p, r) == (1.0, 0.5) and f == pytest.approx(2 / 3)
    # stemming: "running cats" and "run cat" are the same tokens; short words are not stemmed
    assert rouge_l("Running cats", "run cat") == (1.0, 1.0, 1.0)
    assert tokens("Running cats ran, the © x7") == ["run", "cat", "ran", "the", "x7"]
    # no tokens on either side: all zero, as rouge-score
    assert rouge_l("", "the cat") == rouge_l("the cat", "...") == (0.0, 0.0, 0.0)
    # a subsequence, not a substring: "a c e" in "a b c d e"
    assert rouge_l("a c e", "a b c d e")[0] == 1.0


def test_many_names_the_bad_row_and_checks_lengths() -> None:
    with pytest.raises(TypeError, match=r"row 1: the prediction is float nan"):
        rouge_l_many(["a b", float("nan")], ["a b", "c"])
    with pytest.raises(TypeError, match=r"row 0: the reference is NoneType"):
        rouge_l_many(["a"], [None])
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        rouge_l_many(["a", "b"], ["a"])


def test_cached_references_give_the_same_scores_as_fresh_ones() -> None:
    scorer = RougeL()
    ref = "the quick brown fox jumps over the lazy dog"
    first = scorer.many(["the quick fox", "lazy dogs jump", "nothing here"], [ref] * 3)
    again = scorer.many(["nothing here", "the quick fox"], [ref, ref])
    np.testing.assert_array_equal(again, first[[2, 0]])
    np.testing.assert_array_equal(first[1], rouge_l("lazy dogs jump", ref))
    # the settings name the rouge-score release whose tokenizer is used
    from importlib.metadata import version

    assert RougeL.settings()["rouge_score_version"] == version("rouge-score")
