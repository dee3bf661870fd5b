"""The fast ordered matching returns difflib's matching blocks exactly: seeded random word
sequences (small vocabularies, so ties and repeats abound) and book-like shapes (an output
copying passages in order with substitutions and unrelated words between), against
``SequenceMatcher(None, a, b, autojunk=False)``."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from copyprobe.longform import ordered
from copyprobe.longform.nvrecall import Params, blocks, kept


def difflib_blocks(a, b):
    return [(m.a, m.b, m.size)
            for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks() if m.size]


def random_pair(rng: random.Random):
    vocab = rng.choice([1, 2, 3, 4, 6, 10, 40])
    a = [f"w{rng.randrange(vocab)}" for _ in range(rng.randrange(0, 90))]
    b = [f"w{rng.randrange(vocab)}" for _ in range(rng.randrange(0, 90))]
    return a, b


def book_pair(rng: random.Random):
    """A Zipf-like book and an output that copies some of its passages in the book's order
    (sometimes one out of order or twice), one word in a few changed (at random or evenly),
    junk between."""
    vocab = [f"v{i}" for i in range(rng.choice([5, 30, 300]))]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    book = rng.choices(vocab, weights, k=rng.randrange(200, 1200))
    out: list[str] = rng.choices(vocab, weights, k=rng.randrange(0, 30))
    starts = sorted(rng.sample(range(len(book) - 60), rng.randrange(1, 6)))
    if rng.random() < 0.3:
        starts.append(rng.choice(starts))  # a passage again, out of order
    every, evenly = rng.choice([5, 12, 40]), rng.random() < 0.5  # evenly: equal blocks tie
    for s in starts:
        n = rng.randrange(10, 60)
        out += ["zzz" if (k % every == every - 1 if evenly else rng.randrange(every) == 0)
                else w for k, w in enumerate(book[s:s + n])]
        out += rng.choices(vocab, weights, k=rng.randrange(0, 40))
    return book, out


@pytest.mark.parametrize("small", [ordered.SMALL, 0])  # 0: every step by the automaton
def test_random_sequences_give_difflibs_blocks(monkeypatch, small):
    monkeypatch.setattr(ordered, "SMALL", small)
    for seed in range(600):
        a, b = random_pair(random.Random(seed))
        assert ordered.matching_blocks(a, b) == difflib_blocks(a, b), seed


@pytest.mark.parametrize("small", [ordered.SMALL, 0])
def test_book_shaped_outputs_give_difflibs_blocks_and_nv_recall(monkeypatch, small):
    monkeypatch.setattr(ordered, "SMALL", small)
    params = Params(passes=Params().passes[:1])
    for seed in range(60):
        book, out = book_pair(random.Random(1000 + seed))
        want = difflib_blocks(book, out)
        assert ordered.matching_blocks(book, out) == want, seed
        assert blocks(book, out, params) == kept(want, params), seed


def test_ties_go_to_the_earliest_in_the_book_then_in_the_output(monkeypatch):
    # "x y" occurs twice in each; difflib takes a's first, then b's first of it
    a, b = "q x y r x y".split(), "x y s x y".split()
    assert ordered.longest(a, b, 0, len(a), 0, len(b)) == (1, 0, 2)
    ids = {w: n for n, w in enumerate(dict.fromkeys(a + b))}
    ai, bi = [ids[w] for w in a], [ids[w] for w in b]
    for args in ((ai, bi, 0, 6, 0, 5), (ai, bi, 2, 6, 0, 5), (bi, ai, 0, 5, 0, 6)):
        assert ordered.longest(*args) == ordered._longest_small(*args)
    monkeypatch.setattr(ordered, "SMALL", 0)
    for args in ((ai, bi, 0, 6, 0, 5), (ai, bi, 2, 6, 0, 5), (bi, ai, 0, 5, 0, 6)):
        assert ordered.longest(*args) == ordered._longest_small(*args)
    assert ordered.matching_blocks(a, b) == difflib_blocks(a, b)


def test_a_whole_book_with_evenly_spaced_changes():
    # every block as long as the next: each step takes the first, the rest decided from
    # the first scan's runs
    rng = random.Random(7)
    book = [f"v{rng.randrange(50)}" for _ in range(800)]
    out = ["zzz" if k % 25 == 24 else w for k, w in enumerate(book)]
    assert ordered.matching_blocks(book, out) == difflib_blocks(book, out)


def test_no_common_word_and_empty_inputs():
    assert ordered.matching_blocks([], ["a"]) == ordered.matching_blocks(["a"], []) == []
    assert ordered.matching_blocks(["a", "b"], ["c"]) == []
