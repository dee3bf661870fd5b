"""Throughput and memory benchmark of copyprobe.matching (paper mode and word mode).

Synthetic corpus: each document is ``--words`` words drawn from a Zipf-distributed
vocabulary of made-up words (with commas, full stops and capitalised sentence starts).
The reference is the document's last sixth; the generation is about as long as the
reference.  Half the generations are fresh random text only; the other half mix fresh
text with copied spans of the reference (5-60 words, with 3% word substitutions and 2%
deletions), copying with a per-document probability drawn from U(0.2, 0.8).  Documents are generated on the fly from ``(seed, index)``, so both
modes see identical inputs and the corpus never sits in memory.  Only the scoring calls
are timed, and the timed pass runs without tracemalloc (which roughly halves numpy-heavy
throughput).  Peak memory is then measured by a separate pass over the first
``--mem-docs`` documents with tracemalloc on (results kept, as in the timed pass), plus
the process's ``ru_maxrss``.

Usage::

    python benchmarks/matching.py [--docs 10000] [--words 1000] [--seed 0] [--mem-docs 1000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from copyprobe.matching import paper_fk, paper_match, word_fk, word_match  # noqa: E402

VOCAB_SIZE = 4000
ZIPF_EXPONENT = 1.1
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ng"]


def make_vocabulary(rng: np.random.Generator, size: int = VOCAB_SIZE) -> list[str]:
    """``size`` distinct made-up words of one to four syllables."""
    words: set[str] = set()
    while len(words) < size:
        n_syll = int(rng.integers(1, 5))
        words.add("".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), n_syll)))
    return sorted(words)


class Corpus:
    """Deterministic synthetic documents: ``doc(i) -> (document, reference, generation)``."""

    def __init__(self, seed: int, n_words: int) -> None:
        self.seed = seed
        self.n_words = n_words
        self.vocab = np.array(make_vocabulary(np.random.default_rng(seed)), dtype=object)
        ranks = np.arange(1, len(self.vocab) + 1, dtype=float)
        weights = ranks**-ZIPF_EXPONENT
        self.cdf = np.cumsum(weights / weights.sum())

    def _words(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = np.minimum(np.searchsorted(self.cdf, rng.random(n)), len(self.vocab) - 1)
        words = self.vocab[idx].tolist()
        punct = rng.random(n)
        for i in np.flatnonzero(punct < 0.14):
            words[i] += "," if punct[i] < 0.08 else "."
            if i + 1 < n and punct[i] >= 0.08:
                words[i + 1] = words[i + 1].capitalize()
        return words

    def doc(self, index: int) -> tuple[str, str, str]:
        rng = np.random.default_rng([self.seed, index])
        words = self._words(rng, self.n_words)
        words[0] = words[0].capitalize()
        ref_words = words[len(words) - max(1, len(words) // 6) :]
        gen: list[str] = []
        # Half the generations copy nothing; the others copy spans at a varying rate.
        copy_rate = 0.0 if rng.random() < 0.5 else float(rng.uniform(0.2, 0.8))
        while len(gen) < len(ref_words):
            if rng.random() < copy_rate:
                length = int(rng.integers(5, 61))
                start = int(rng.integers(0, max(1, len(ref_words) - length + 1)))
                for w in ref_words[start : start + length]:
                    r = rng.random()
                    if r < 0.02:
                        continue  # deletion
                    gen.append(self._words(rng, 1)[0] if r < 0.05 else w)  # substitution
            else:
                gen.extend(self._words(rng, int(rng.integers(5, 41))))
        return " ".join(words), " ".join(ref_words), " ".join(gen[: len(ref_words)])


def run_mode(
    name: str,
    corpus: Corpus,
    n_docs: int,
    score: Callable[[str, str, str], object],
) -> tuple[list[object], float]:
    """Score ``n_docs`` documents, printing progress every ~10%; returns results, seconds."""
    results: list[object] = []
    scoring = 0.0
    step = max(1, n_docs // 10)
    wall = time.perf_counter()
    for i in range(n_docs):
        document, reference, generation = corpus.doc(i)
        t0 = time.perf_counter()
        results.append(score(document, reference, generation))
        scoring += time.perf_counter() - t0
        if (i + 1) % step == 0 or i + 1 == n_docs:
            print(
                f"  [{name}] {i + 1}/{n_docs} docs ({100 * (i + 1) / n_docs:.0f}%), "
                f"scoring {scoring:.1f} s, wall {time.perf_counter() - wall:.1f} s, "
                f"{(i + 1) / scoring:.0f} docs/s",
                flush=True,
            )
    return results, scoring


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _paper(document: str, reference: str, generation: str) -> object:
    return paper_match(reference, generation, document)


def _word(document: str, reference: str, generation: str) -> object:
    return word_match(reference, generation)


def iter_modes() -> Iterator[tuple[str, Callable[[str, str, str], object]]]:
    yield "paper", _paper
    yield "word", _word


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000, help="documents per mode")
    parser.add_argument("--words", type=int, default=1_000, help="words per document")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed")
    parser.add_argument(
        "--mem-docs", type=int, default=1_000, help="documents in the tracemalloc pass"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    corpus = Corpus(args.seed, args.words)
    doc, ref, gen = corpus.doc(0)
    print(
        f"corpus: {args.docs} docs x {args.words} words (vocabulary {len(corpus.vocab)}, "
        f"Zipf s={ZIPF_EXPONENT}); doc 0: {len(doc)} chars, reference {len(ref.split())} "
        f"words / {len(ref)} chars, generation {len(gen.split())} words / {len(gen)} chars"
    )
    # Warm caches (token pattern, hash power tables) outside the timed region.
    word_match(ref, gen)
    paper_match(ref, gen, doc)

    for name, score in iter_modes():
        print(f"{name} mode:", flush=True)
        results, seconds = run_mode(name, corpus, args.docs, score)
        if name == "paper":
            summary = f"f_k = {paper_fk(results)}"  # type: ignore[arg-type]
        else:
            fk = word_fk(results)  # type: ignore[arg-type]
            summary = f"survival = {fk['survival']}\n  kgrams = {fk['kgrams']}"
        print(
            f"{name} mode: {args.docs} docs in {seconds:.1f} s scoring time = "
            f"{args.docs / seconds:.0f} docs/s; maxrss {_maxrss_mib():.1f} MiB\n  {summary}",
            flush=True,
        )
        del results

    mem_docs = min(args.mem_docs, args.docs)
    for name, score in iter_modes():
        tracemalloc.start()
        kept = []
        for i in range(mem_docs):
            kept.append(score(*corpus.doc(i)))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del kept
        print(
            f"{name} mode memory: tracemalloc peak {peak / 2**20:.2f} MiB over {mem_docs} docs "
            f"(results kept); maxrss {_maxrss_mib():.1f} MiB",
            flush=True,
        )
    print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
