"""Speed and accuracy of curation's duplicate removal (exact hash + MinHash LSH, confirmed by
the exact shingle Jaccard).

Synthetic corpus: ``--docs`` documents of ``--words`` words drawn from a Zipf-distributed
vocabulary of made-up words, half dated before the cutoff and half after; ``--planted`` of them
are copies of another document with ``--changed`` of their words replaced (near duplicates at
a known Jaccard similarity), and as many again are exact copies with other case and spacing.
With 1,000 words, 1 % of words changed gives a word-5-shingle Jaccard of about 0.90 (above the
default threshold 0.8) and 3 % about 0.74 (below it: such copies are kept by design).
It prints documents per second of ``curate`` with and without de-duplication, how many planted
copies were dropped (recall), and how many other documents were dropped (false drops: always 0
by construction of the exact check, reported to show it).

Usage::

    python benchmarks/curation.py [--docs 2000] [--words 1000] [--planted 50] [--changed 0.01]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

import numpy as np
import pandas as pd

from copyprobe.artifacts import CORPUS
from copyprobe.curation import curate


def make_corpus(docs: int, words: int, planted: int, changed: float, seed: int) -> tuple[
        pd.DataFrame, set[str]]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i:05d}" for i in range(20000)])
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    texts = [" ".join(rng.choice(vocab, size=words, p=p)) for _ in range(docs)]
    copies: set[str] = set()
    for i in range(planted):  # near duplicates of document i, placed at the end
        w = texts[i].split()
        for j in rng.choice(words, size=int(words * changed), replace=False):
            w[j] = f"changed{j}"
        texts[docs - 1 - i] = " ".join(w)
        copies.add(f"d{docs - 1 - i:06d}")
    for i in range(planted, 2 * planted):  # exact copies with other case and spacing
        texts[docs - 1 - i] = "  " + texts[i].upper().replace(" ", "\n ")
        copies.add(f"d{docs - 1 - i:06d}")
    cutoff = dt.date(2024, 6, 30)
    rows = []
    for i, t in enumerate(texts):
        published = cutoff - dt.timedelta(days=400 - i % 7) if i < docs // 2 else (
            cutoff + dt.timedelta(days=400 + i % 7))
        row = dict.fromkeys(CORPUS.columns, "")
        row.update(doc_id=f"d{i:06d}", source="bench", title=f"d{i}", text=t,
                   published=published, retrieved_at=None, revision_timestamp=None,
                   as_of=None, rights_year=None)
        rows.append(row)
    return pd.DataFrame(rows, columns=CORPUS.columns), copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--words", type=int, default=1000)
    ap.add_argument("--planted", type=int, default=50)
    ap.add_argument("--changed", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    corpus, copies = make_corpus(a.docs, a.words, a.planted, a.changed, a.seed)
    cutoff = dt.date(2024, 6, 30)
    print(f"{a.docs} documents of {a.words} words; {len(copies)} planted copies "
          f"({a.planted} near with {a.changed:.0%} of words changed, {a.planted} exact)")
    for label, dedup in (("no dedup", {"exact": False, "near": False}),
                         ("exact only", {"exact": True, "near": False}),
                         ("exact + near (MinHash LSH)", None)):
        t0 = time.perf_counter()
        out = curate(corpus, model="m", cutoff=cutoff, dedup=dedup)
        s = time.perf_counter() - t0
        dropped = set(out.loc[~out["kept"], "doc_id"])
        print(f"{label:28s} {a.docs / s:8.0f} documents/s ({s:.2f} s); dropped "
              f"{len(dropped & copies)}/{len(copies)} planted copies, "
              f"{len(dropped - copies)} other documents")


if __name__ == "__main__":
    main()
