"""nv-recall's speed on a book-sized text (prints figures, asserts nothing).

A synthetic book of ``--book-words`` words drawn from a Zipf-like vocabulary (so common
words recur as in prose), and an output of ``--passages`` passages of ``--passage-words``
words copied from random places of the book with one word in ``--every`` replaced, in
shuffled order, plus as many words of unrelated text; or (``--whole``) the whole book written
out in order with one word in ``--every`` replaced (the case of a model that writes the book
out, where every block is equally long). Prints, for each matching
(``ordered``, the default, and ``any_order``), the time to find the blocks, the nv-recall
measured and the share of the book copied verbatim (the substituted words do not count; the
ordered matching finds only passages in the book's order, so less of a shuffled output).
Beside ``ordered``, the baseline it replaces: difflib's SequenceMatcher on the same words
(``--skip-difflib`` leaves it out; it takes minutes), and it stops with an error unless both
give the same matches and nv-recall. Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import time
from difflib import SequenceMatcher

from copyprobe.longform.nvrecall import (
    Params,
    any_order_matches,
    covered,
    kept,
    ordered_matches,
    words,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--book-words", type=int, default=80_000)
    ap.add_argument("--passages", type=int, default=20)
    ap.add_argument("--passage-words", type=int, default=500)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--whole", action="store_true",
                    help="the output is the whole book in order, one word in --every changed")
    ap.add_argument("--skip-difflib", action="store_true",
                    help="leave out the difflib baseline of the ordered matching")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = [f"v{i}" for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    book = rng.choices(vocab, weights, k=args.book_words)
    out: list[str] = []
    if args.whole:
        out = [("zzz" if (i + 1) % args.every == 0 else w) for i, w in enumerate(book)]
        verbatim_share = 1 - 1 / args.every
        print(f"book {args.book_words} words, output the whole book "
              f"(1 word in {args.every} changed)")
    else:
        starts = sorted(rng.sample(range(0, args.book_words - args.passage_words,
                                         args.passage_words), args.passages))
        for s in rng.sample(starts, len(starts)):
            out += [("zzz" if (i + 1) % args.every == 0 else w)
                    for i, w in enumerate(book[s:s + args.passage_words])]
            out += rng.choices(vocab, weights, k=args.passage_words)
        verbatim = args.passage_words - args.passage_words // args.every
        verbatim_share = args.passages * verbatim / len(book)
        print(f"book {args.book_words} words, output {len(out)} words ({args.passages} "
              f"passages of {args.passage_words}, 1 word in {args.every} changed)")
    book_words, out_words = words(" ".join(book)), words(" ".join(out))
    runs = {"ordered": lambda: ordered_matches(book_words, out_words),
            "any_order": lambda: any_order_matches(book_words, out_words, 5)}
    if not args.skip_difflib:
        runs["ordered, difflib (baseline)"] = lambda: [
            (m.a, m.b, m.size) for m in SequenceMatcher(
                None, book_words, out_words, autojunk=False).get_matching_blocks() if m.size]
    seen: dict[str, tuple[list[tuple[int, int, int]], float]] = {}
    for name, run in runs.items():
        t0 = time.perf_counter()
        matches = run()
        found = kept(matches, Params())
        dt = time.perf_counter() - t0
        recall = covered(found) / len(book)
        seen[name] = (matches, recall)
        print(f"{name}: {len(matches)} matches, {len(found)} blocks in {dt:.2f} s; nv-recall "
              f"{recall:.4f} (copied verbatim: {verbatim_share:.4f})")
    if "ordered, difflib (baseline)" in seen:
        if seen["ordered"] != seen["ordered, difflib (baseline)"]:
            raise SystemExit("ordered and difflib differ: matches or nv-recall")
        print(f"ordered = difflib: the same {len(seen['ordered'][0])} matches and nv-recall "
              f"{seen['ordered'][1]:.4f}")


if __name__ == "__main__":
    main()
