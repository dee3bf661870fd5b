"""Figures of the extraction study, drawn from WINDOWS tables (copyprobe.extraction.tables).

* :func:`plot_log_pz`: the distribution of log10 p_z of the scored windows, per split;
* :func:`plot_np_curves`: the share of windows (n,p)-discoverable against n, one line per p,
  D_pre and D_post apart;
* :func:`plot_extraction_map`: a document's windows along its tokens against p_z, one row per
  document of the ``top`` documents by largest p_z (Cooper et al. 2025's picture);
* :func:`plot_study_figures`: the three of one (model, dataset), from its WINDOWS files.

Every function saves a PNG and returns the matplotlib Figure (closed, still readable), so
tests can read it back. An empty input draws the axes with a note instead of failing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from copyprobe.extraction.tables import split_label  # noqa: E402
from copyprobe.store import atomic_write  # noqa: E402

SPLITS = ("D_pre", "D_post")
SPLIT_STYLE = {"D_pre": {"linestyle": "-", "marker": "o", "color": "C0"},
               "D_post": {"linestyle": "--", "marker": "s", "color": "C1"}}
LOG10 = math.log(10)


def _save(fig: Figure, path: str | Path) -> Figure:
    fmt = Path(path).suffix.lstrip(".") or "png"
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))
    plt.close(fig)
    return fig


def _scored(windows: pd.DataFrame) -> pd.DataFrame:
    """The scored rows: a finite log p_z, or -inf (a Monte Carlo window without a hit)."""
    lp = windows["log_pz"].astype(float)
    w = windows[(windows["status"] == "scored") & (np.isfinite(lp) | np.isneginf(lp))]
    return w.assign(split=w["split"].map(split_label))


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="gray")


def plot_log_pz(windows: pd.DataFrame, path: str | Path, *, title: str = "") -> Figure:
    """Histogram of log10 p_z per split (a density per split, so unequal sizes compare)."""
    w = _scored(windows)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    values = w["log_pz"].astype(float) / LOG10
    if len(values):
        lo, hi = float(values.min()), max(float(values.max()), 0.0)
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 31)
        for split in SPLITS:
            v = values[w["split"] == split]
            if len(v):
                ax.hist(v, bins=bins, density=True, histtype="step", linewidth=1.5,
                        linestyle=SPLIT_STYLE[split]["linestyle"],
                        color=SPLIT_STYLE[split]["color"], label=f"{split} ({len(v)} windows)")
        ax.axvline(math.log10(0.5), color="gray", linewidth=0.8, linestyle=":",
                   label="p_z = 0.5")
        ax.legend(loc="upper left", fontsize="small")
    else:
        _note(ax, "no scored window")
    ax.set_xlabel("log10 p_z of the window's suffix")
    ax.set_ylabel("density")
    ax.set_title(title or "log p_z per split")
    return _save(fig, path)


def plot_np_curves(windows: pd.DataFrame, path: str | Path, *, ns: Sequence[int],
                   ps: Sequence[float], title: str = "") -> Figure:
    """Share of windows (n,p)-discoverable against n (log axis), one line per p and split."""
    from copyprobe.extraction.discoverability import np_curve

    w = _scored(windows)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    drawn = False
    for split in SPLITS:
        part = w[w["split"] == split]
        if not len(part):
            continue
        curve = np_curve(part, ns, ps)
        for i, p in enumerate(ps):
            c = curve[curve["p"] == p].sort_values("n")
            ax.plot(c["n"], c["fraction"], linestyle=SPLIT_STYLE[split]["linestyle"],
                    marker=SPLIT_STYLE[split]["marker"], color=f"C{i}",
                    label=f"{split}, p={p:g}")
            drawn = True
    ax.set_xscale("log")
    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("n (samples drawn)")
    ax.set_ylabel("share of windows (n,p)-discoverable")
    ax.set_title(title or "(n,p)-discoverability")
    if drawn:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize="small")
    else:
        _note(ax, "no scored window")
    return _save(fig, path)


def plot_extraction_map(windows: pd.DataFrame, path: str | Path, *, top: int = 8,
                        threshold: tuple[int, float] | None = (1, 0.5),
                        title: str = "", scale: str = "auto", unit: str = "tokens") -> Figure:
    """One row per document (the ``top`` by largest p_z): p_z of each window against the
    token offset where its suffix starts; windows at or above the (n, p) threshold's p_z are
    drawn dark. Failed windows are marked by an x on the axis. ``unit``: what the offsets
    count (``tokens``, or ``words`` for windows cut in words). ``scale``: ``linear`` (p_z
    from 0 to 1, Cooper et al.'s picture), ``log`` (log10 p_z, where every p_z is small, as
    for small models) or ``auto`` (linear when some window reaches p_z 0.05, else log)."""
    from copyprobe.extraction.discoverability import pz_threshold

    real = windows[windows["window_index"] >= 0]
    w = _scored(real)
    best = (w.groupby("doc_id")["log_pz"].max().sort_values(ascending=False).head(top)
            if len(w) else pd.Series(dtype=float))
    rows = max(len(best), 1)
    fig, axes = plt.subplots(rows, 1, figsize=(8.0, 0.9 + 1.1 * rows), sharex=False,
                             squeeze=False)
    cut = pz_threshold(*threshold) if threshold else None
    if scale == "auto":
        scale = "linear" if len(best) and math.exp(best.max()) >= 0.05 else "log"
    if scale not in ("linear", "log"):
        raise ValueError(f"plot_extraction_map: scale {scale!r} is not linear, log or auto")
    finite = w["log_pz"].astype(float)
    finite = finite[np.isfinite(finite)]
    floor = (min(-12.0, math.floor(float(finite.min()) / math.log(10))) if len(finite)
             else -12.0)
    if not len(best):
        failed = int((real["status"] == "failed").sum())
        _note(axes[0][0], f"no scored window ({failed} failed)" if failed else
              "no scored window: every text is shorter than one window" if not len(real)
              else "no scored window")
    for ax, (doc, top_lp) in zip(axes[:, 0], best.items(), strict=False):
        d = real[real["doc_id"] == doc].sort_values("window_index")
        ok = d[d["status"] == "scored"]
        x = (ok["start_token"] + ok["n_prefix_tokens"]).to_numpy()
        pz = np.exp(ok["log_pz"].astype(float).to_numpy())
        width = float(d["n_tokens"].max() or 1)
        colors = ["C3" if cut is not None and v >= cut else "C0" for v in pz]
        bad = d[d["status"] == "failed"]
        bad_x = bad["start_token"] + bad["n_prefix_tokens"]
        if scale == "linear":
            ax.bar(x, pz, width=width, align="edge", color=colors, linewidth=0)
            ax.plot(bad_x, np.zeros(len(bad)), "kx", markersize=4)
            if cut is not None:
                ax.axhline(cut, color="gray", linewidth=0.6, linestyle=":")
            ax.set_ylim(0, 1)
            ax.set_yticks([0, 0.5, 1])
            ax.set_ylabel("p_z", fontsize="small")
        else:
            with np.errstate(divide="ignore"):
                lg = np.maximum(np.log10(pz), floor)
            ax.bar(x, lg - floor, bottom=floor, width=width, align="edge", color=colors,
                   linewidth=0)
            ax.plot(bad_x, np.full(len(bad), floor), "kx", markersize=4)
            if cut is not None:
                ax.axhline(math.log10(cut), color="gray", linewidth=0.6, linestyle=":")
            ax.set_ylim(floor, 0)
            ax.set_ylabel("log10 p_z", fontsize="small")
        split = split_label(str(d["split"].iloc[0]))
        ax.set_title(f"{doc} ({split}): {len(ok)} windows, max p_z {math.exp(top_lp):.3g}",
                     fontsize="small", loc="left")
    axes[-1][0].set_xlabel(f"{unit[:-1]} offset of the window's suffix in the document")
    fig.suptitle(title or "extraction map")
    fig.tight_layout()
    return _save(fig, path)


def plot_study_figures(paths: Sequence[str | Path], out: dict[str, str | Path],
                       settings: dict, title: str) -> dict[str, Figure]:
    """The workflow's three figures of one (model, dataset) from its WINDOWS files
    (``out``: paths for ``log_pz``, ``np_curves``, ``map``; ``settings``: ``ns``, ``ps``,
    ``headline``); the map's axis counts in the files' unit (tokens or words)."""
    from copyprobe.artifacts import read_table
    from copyprobe.extraction.window_scoring import windows_unit
    from copyprobe.extraction.tables import WINDOWS

    windows = pd.concat([read_table(p, WINDOWS) for p in paths])
    head = settings["headline"]
    return {"log_pz": plot_log_pz(windows, out["log_pz"], title=title),
            "np_curves": plot_np_curves(windows, out["np_curves"], ns=settings["ns"],
                                        ps=settings["ps"], title=title),
            "map": plot_extraction_map(windows, out["map"], title=title,
                                       threshold=(head["n"], head["p"]),
                                       unit=windows_unit(paths))}
