"""Figures of the MSR study, drawn from stats JSON results (see copyprobe.msr.analysis).

Reference: docs/msr.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from copyprobe.msr.analysis import split_scores  # noqa: E402
from copyprobe.store import atomic_write  # noqa: E402

PRE_STYLE = {"linestyle": "-", "marker": "o"}
POST_STYLE = {"linestyle": "--", "marker": "s"}


def _k_axis(ax: Axes, ks: Iterable[int]) -> None:
    """x: one integer tick per threshold k (thinned to whole numbers when there are many)."""
    ks = sorted(set(int(k) for k in ks))
    ax.set_xlabel("verbatim match length k (words)")
    if ks and len(ks) <= 16:
        ax.set_xticks(ks)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ks:
        ax.set_xlim(ks[0] - 0.5, ks[-1] + 0.5)


def _count_axis(ax: Axes, counts: Iterable[float], label: str) -> None:
    """y: whole counts from 0; at least 0..1 so that all-zero data still has integer ticks."""
    top = max((float(c) for c in counts), default=0.0)
    ax.set_ylabel(label)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=2))
    ax.set_ylim(0, max(top, 1.0) * 1.08)


def _legend(ax: Axes, entries: int, *, pairs: bool = False) -> None:
    """Below the axes, so that it never hides a curve. With ``pairs`` (lines drawn as D_pre,
    D_post, D_pre, ...) the D_pre entries fill the first column and D_post the second, so each
    row of the legend is one model or setting."""
    handles, labels = ax.get_legend_handles_labels()
    if pairs:
        order = [*range(0, len(handles), 2), *range(1, len(handles), 2)]
        handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              ncol=2 if entries > 3 or pairs else 1, frameon=False)


def _save(fig: Figure, path: str | Path) -> Figure:
    fmt = Path(path).suffix.lstrip(".") or "png"  # the temporary name has no image suffix
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))
    plt.close(fig)
    return fig


def _no_data_text(ax: Axes, counts: Iterable[float], k_min: int | None) -> None:
    if not any(counts):
        text = ("no document reached k words" if k_min is None
                else f"no document's match reached {k_min} words")
        ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center",
                color="gray")


def plot_fk(result: Mapping[str, Any], path: str | Path) -> Figure:
    """f_k of D_pre and D_post (paper mode solid, word mode faint) for one result."""
    ks = result["k_values"]
    p, w = result["paper"], result["word"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    n_pre, n_post = result["documents_pre"], result["documents_post"]
    ax.plot(ks, p["f_pre"], color="tab:blue", **PRE_STYLE,
            label=f"D_pre, paper mode ({_documents(n_pre)})")
    ax.plot(ks, p["f_post"], color="tab:orange", **POST_STYLE,
            label=f"D_post, paper mode ({_documents(n_post)})")
    ax.plot(ks, w["survival_pre"], color="tab:blue", alpha=0.4, **PRE_STYLE,
            label="D_pre, word mode")
    ax.plot(ks, w["survival_post"], color="tab:orange", alpha=0.4, **POST_STYLE,
            label="D_post, word mode")
    _k_axis(ax, ks)
    counts = [*p["f_pre"], *p["f_post"], *w["survival_pre"], *w["survival_post"]]
    _count_axis(ax, counts, "f_k (documents)")
    ax.set_title(f"{result['model']} on {result['dataset']}\n{p['verdict']}", fontsize=9)
    _no_data_text(ax, counts, ks[0] if ks else None)
    _legend(ax, 4)
    return _save(fig, path)


def _documents(n: int) -> str:
    return f"{n} document" if n == 1 else f"{n} documents"


def _fk_lines(ax: Axes, series: Sequence[tuple[str, Mapping[str, Any]]], *,
              ordered: bool = False) -> list[float]:
    """One colour per labelled result (a sequential colour map when the settings are
    ordered, e.g. input lengths): D_pre solid, D_post dashed (paper mode)."""
    if ordered:
        colors = [plt.get_cmap("viridis")(x) for x in np.linspace(0.0, 0.85, len(series))]
    else:
        colors = list(plt.get_cmap("tab10").colors)
    counts: list[float] = []
    for i, (label, r) in enumerate(series):
        ks, p = r["k_values"], r["paper"]
        c = colors[i % len(colors)]
        ax.plot(ks, p["f_pre"], color=c, **PRE_STYLE,
                label=f"{label}: D_pre ({_documents(r['documents_pre'])})")
        ax.plot(ks, p["f_post"], color=c, **POST_STYLE,
                label=f"{label}: D_post ({_documents(r['documents_post'])})")
        counts += [*p["f_pre"], *p["f_post"]]
    return counts


def plot_fk_models(results: Sequence[Mapping[str, Any]], path: str | Path, *,
                   title: str) -> Figure:
    """Paper-mode f_k of several models on one dataset (the MSR paper's Figures 1 and 2)."""
    if not results:
        raise ValueError("plot_fk_models: no results to plot")
    datasets = sorted({r["dataset"] for r in results})
    if len(datasets) > 1:
        raise ValueError(f"plot_fk_models: one dataset per figure, got {datasets}")
    return _fk_figure([(r["model"], r) for r in results], path, title=title, ordered=False)


def plot_fk_sweep(results_by_label: Mapping[str, Mapping[str, Any]], path: str | Path, *,
                  title: str, parameter: str) -> Figure:
    """Paper-mode f_k of variants of one model (shot counts, input lengths, temperatures),
    each variant on its own thresholds (the input-length ablation ends at k = L / n)."""
    if not results_by_label:
        raise ValueError("plot_fk_sweep: no results to plot")
    series = [(f"{parameter} = {label}", r) for label, r in results_by_label.items()]
    return _fk_figure(series, path, title=title, ordered=True)


def _fk_figure(series: Sequence[tuple[str, Mapping[str, Any]]], path: str | Path, *,
               title: str, ordered: bool) -> Figure:
    """D_pre and D_post f_k lines of several labelled results on one axis."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    counts = _fk_lines(ax, series, ordered=ordered)
    ks = [k for _, r in series for k in r["k_values"]]
    _k_axis(ax, ks)
    _count_axis(ax, counts, "f_k (documents, paper mode)")
    ax.set_title(title, fontsize=10)
    _no_data_text(ax, counts, min(ks) if ks else None)
    _legend(ax, 2 * len(series), pairs=True)
    return _save(fig, path)


def _split(result: Mapping[str, Any], split: str, score: str) -> np.ndarray:
    return np.asarray(split_scores(result, split, score), dtype=float)


def plot_per_document(result: Mapping[str, Any], path: str | Path) -> Figure:
    """Share of documents whose longest common word substring is longer than x words, for
    every whole x from 0 to one past the longest match (D_pre solid, D_post dashed)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    data = {s: _split(result, s, "longest") for s in ("pre", "post")}
    top = int(max((a.max() for a in data.values() if a.size), default=0))
    xs = np.arange(0, top + 2)
    for split, label, color, style in (("pre", "D_pre", "tab:blue", "-"),
                                       ("post", "D_post", "tab:orange", "--")):
        arr = data[split]
        if arr.size:
            share = [(arr > x).mean() for x in xs]
            ax.step(xs, share, where="post", color=color, linestyle=style, linewidth=1.8,
                    label=f"{label} ({_documents(arr.size)}, median {np.median(arr):g}, "
                          f"max {arr.max():g})")
    d = result["per_document"]
    auc = d.get("roc_auc")
    ax.set_xlabel("longest common word substring with the held-out segment (words)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, top + 1)
    ax.set_ylabel("share of documents with a longer match")
    auc_text = f"ROC-AUC {auc:.3f}" if auc is not None else "ROC-AUC undefined"
    ax.set_title(f"{result['model']} on {result['dataset']}: per document\n{auc_text}",
                 fontsize=9)
    ax.set_ylim(0, 1.02)
    _legend(ax, 2)
    return _save(fig, path)


def plot_helm(result: Mapping[str, Any], path: str | Path) -> Figure:
    """HELM's longest common prefix (words) and edit similarity, each document a point and
    each split a box, D_pre beside D_post."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))
    metrics = (("longest_common_prefix", "longest common prefix (words)"),
               ("edit_similarity", "edit similarity (0-1)"))
    rng = np.random.default_rng(0)  # horizontal jitter of the points only
    for ax, (score, label) in zip(axes, metrics, strict=True):
        data = [_split(result, s, score) for s in ("pre", "post")]
        ax.boxplot([x if x.size else np.array([np.nan]) for x in data],
                   tick_labels=[f"D_pre ({data[0].size})", f"D_post ({data[1].size})"],
                   widths=0.5, showfliers=False, medianprops={"color": "black"})
        for i, (x, color) in enumerate(zip(data, ("tab:blue", "tab:orange"), strict=True)):
            ax.scatter(i + 1 + rng.uniform(-0.12, 0.12, x.size), x, s=10, color=color,
                       alpha=0.6)
        ax.set_ylabel(label)
        stats = result["helm"][score]
        delta = stats.get("cliffs_delta")
        ax.set_title("Cliff's delta " + (f"{delta:+.3f}" if delta is not None else "undefined")
                     + " (post vs pre)", fontsize=9)
        if score == "longest_common_prefix":
            _count_axis(ax, np.concatenate(data), label)
        else:
            ax.set_ylim(0, 1.02)
            ax.set_yticks([0.0, 0.25, 0.5, 0.75, 1.0])
    fig.suptitle(f"{result['model']} on {result['dataset']}: HELM prefix and edit similarity",
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
