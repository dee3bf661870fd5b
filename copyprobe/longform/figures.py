"""The study's figures: of a (model, document), the book from start to end with each
near-verbatim block drawn where it lies (the paper's extraction-by-position figure); across
documents, nv-recall against the exact p_z map's mean log p_z per token, per model
(docs/longform.md)."""

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


def plot_vs_pz(rows: pd.DataFrame, models: pd.DataFrame, path: str | Path) -> list[str]:
    """Per model, one point per document measured by both studies: mean log p_z per token
    (x) against nv-recall (y), the model's Spearman rho (``models``: compare.per_model) in
    its legend entry; returns the legend's entries (none: the figure says there is no row)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rho = dict(zip(models["model"], models["spearman_rho"]))
    fig, ax = plt.subplots(figsize=(6, 4))
    legend = []
    for model, g in rows.groupby("model", sort=True):
        n = len(g)
        label = f"{model} ({n} document{'s' if n != 1 else ''}"
        r = rho.get(model)
        label += f", Spearman rho {r:.2f})" if r is not None and not pd.isna(r) else ")"
        ax.scatter(g["mean_log_pz_per_token"], g["nv_recall"], label=label, s=18)
        legend.append(label)
    if legend:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no document measured by both studies", ha="center",
                transform=ax.transAxes)
    ax.set_xlabel("mean log p_z per token (extraction study)")
    ax.set_ylabel("nv-recall (long-form)")
    ax.set_title("Long-form extraction beside the exact p_z map, per document", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return legend
