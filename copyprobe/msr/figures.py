"""Figures: f_k for D_pre vs D_post (the MSR paper's Figure 1) and per-document distributions."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_fk(result: Mapping[str, Any], path: str | Path) -> None:
    ks = result["ks"]
    fig, ax = plt.subplots(figsize=(6, 4))
    p, w = result["paper"], result["word"]
    ax.plot(ks, p["f_pre"], "o-", color="tab:blue", label=f"D_pre, paper mode (n={result['n_pre']})")
    ax.plot(ks, p["f_post"], "s-", color="tab:orange",
            label=f"D_post, paper mode (n={result['n_post']})")
    ax.plot(ks, w["survival_pre"], "o--", color="tab:blue", alpha=0.5, label="D_pre, word mode")
    ax.plot(ks, w["survival_post"], "s--", color="tab:orange", alpha=0.5,
            label="D_post, word mode")
    ax.set_xlabel("verbatim match length k (words)")
    ax.set_ylabel("f_k (documents)")
    ax.set_title(f"{result['model']} on {result['dataset']}\n{p['verdict']}", fontsize=9)
    ax.set_xticks(ks)
    ax.set_ylim(bottom=0)
    if not any(p["f_pre"]) and not any(p["f_post"]):
        ax.text(0.5, 0.5, "no document reached k words", transform=ax.transAxes,
                ha="center", va="center", color="gray")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_per_document(result: Mapping[str, Any], path: str | Path) -> None:
    s = result["scores"]
    pre, post = np.asarray(s["longest_pre"]), np.asarray(s["longest_post"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for arr, label, color in ((pre, "D_pre", "tab:blue"), (post, "D_post", "tab:orange")):
        if arr.size:
            xs = np.sort(arr)
            ax.step(xs, 1.0 - np.arange(1, xs.size + 1) / xs.size, where="post", color=color,
                    label=f"{label} (n={arr.size}, median {np.median(arr):g}, max {arr.max()})")
    d = result["per_document"]
    auc = d.get("roc_auc")
    ax.set_xlabel("longest common word substring with the held-out segment (words)")
    ax.set_ylabel("share of documents with a longer match")
    auc_text = f"ROC-AUC {auc:.3f}" if auc is not None else "ROC-AUC undefined"
    ax.set_title(f"{result['model']} on {result['dataset']}: per document\n{auc_text}",
                 fontsize=9)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
