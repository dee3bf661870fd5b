"""The figure of a (model, document): the book from start to end, with each near-verbatim
block drawn where it lies (the paper's extraction-by-position figure)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def plot_blocks(blocks: pd.DataFrame, book_words: int, path: str | Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 1.6))
    spans = [(int(s), int(e - s)) for s, e in zip(blocks["book_start"], blocks["book_end"])]
    ax.broken_barh(spans, (0, 1), color="tab:red")
    ax.set_xlim(0, max(1, book_words))
    ax.set_yticks([])
    ax.set_xlabel("position in the book (words)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
