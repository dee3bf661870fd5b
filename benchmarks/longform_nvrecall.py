"""nv-recall's speed on a book-sized text (prints figures, asserts nothing).

A synthetic book of ``--book-words`` words drawn from a Zipf-like vocabulary (so common
words recur as in prose), and an output of ``--passages`` passages of ``--passage-words``
words copied from random places of the book with one word in ``--every`` replaced, in
shuffled order, plus as many words of unrelated text. Prints, for each matching
(``ordered``, the default, and ``any_order``), the time to find the blocks, the nv-recall
measured and the share of the book copied verbatim (the substituted words do not count; the
ordered matching finds only passages in the book's order, so less of a shuffled output).
Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import time

from copyprobe.longform.nvrecall import Params, blocks, covered, words


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--book-words", type=int, default=80_000)
    ap.add_argument("--passages", type=int, default=20)
    ap.add_argument("--passage-words", type=int, default=500)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = [f"v{i}" for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    book = rng.choices(vocab, weights, k=args.book_words)
    starts = sorted(rng.sample(range(0, args.book_words - args.passage_words,
                                     args.passage_words), args.passages))
    out: list[str] = []
    for s in rng.sample(starts, len(starts)):
        out += [("zzz" if (i + 1) % args.every == 0 else w)
                for i, w in enumerate(book[s:s + args.passage_words])]
        out += rng.choices(vocab, weights, k=args.passage_words)
    verbatim = args.passage_words - args.passage_words // args.every
    print(f"book {args.book_words} words, output {len(out)} words "
          f"({args.passages} passages of {args.passage_words}, 1 word in {args.every} changed)")
    for matching in ("ordered", "any_order"):
        t0 = time.perf_counter()
        found = blocks(words(" ".join(book)), words(" ".join(out)),
                       Params(matching=matching, min_match_words=1 if matching == "ordered"
                              else 5))
        dt = time.perf_counter() - t0
        print(f"{matching}: {len(found)} blocks in {dt:.2f} s; nv-recall "
              f"{covered(found) / len(book):.4f} (copied verbatim: "
              f"{args.passages * verbatim / len(book):.4f})")


if __name__ == "__main__":
    main()
