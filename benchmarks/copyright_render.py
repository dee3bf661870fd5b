"""Speed of rendering materials to PNG pages (copyprobe.copyright.render).

Synthetic materials: ``--materials`` texts of ``--words`` words drawn from a Zipf-distributed
vocabulary of made-up words of 2-10 letters, in paragraphs of 60-120 words. Each material is
rendered to files twice, as the benchmark needs it: without a footer and with a copyright
notice as the footer (the two image notice forms). It prints images per second and total time
for a cold run into an empty folder, then for a warm run over the same folder (every page
already there, so nothing is drawn again).

Usage::

    python benchmarks/copyright_render.py [--materials 250] [--words 600] [--overflow truncate]
"""

from __future__ import annotations

import argparse
import string
import tempfile
import time

import numpy as np

from copyprobe.copyright.render import RenderSettings, render_to_files

FOOTER = "Copyright © 2021 Example Press. All rights reserved."


def make_materials(n: int, words: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list(string.ascii_lowercase))
    vocab = ["".join(rng.choice(letters, size=rng.integers(2, 11))) for _ in range(5000)]
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    texts = []
    for _ in range(n):
        drawn = list(rng.choice(vocab, size=words, p=p))
        paragraphs, i = [], 0
        while i < len(drawn):
            k = int(rng.integers(60, 121))
            paragraphs.append(" ".join(drawn[i:i + k]).capitalize() + ".")
            i += k
        texts.append("\n\n".join(paragraphs))
    return texts


def run(texts: list[str], settings: RenderSettings, out_dir: str) -> tuple[int, int, float]:
    start = time.perf_counter()
    images = truncated = 0
    for text in texts:
        for footer in (None, FOOTER):
            pages = render_to_files(text, settings, footer, out_dir)
            images += len(pages)
            truncated += pages[0].truncated
    return images, truncated, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--materials", type=int, default=250)
    ap.add_argument("--words", type=int, default=600)
    ap.add_argument("--overflow", choices=("truncate", "paginate"), default="truncate")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    texts = make_materials(args.materials, args.words, args.seed)
    settings = RenderSettings(overflow=args.overflow)
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("cold (all drawn)", "warm (all present)"):
            images, truncated, seconds = run(texts, settings, tmp)
            print(f"{label}: {args.materials} materials x 2 forms -> {images} images "
                  f"({truncated} renders truncated) in {seconds:.1f} s, "
                  f"{images / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
