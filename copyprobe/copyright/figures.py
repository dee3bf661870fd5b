"""Figures of the compliance benchmark, drawn from a SCORED table (copyprobe.copyright.scored_table).

* :func:`fig6`: ROUGE-L distributions per notice form, one panel per model (box plots);
* :func:`fig7`: per notice form and task, mean similarity and refusal rate of each model;
* :func:`fig8`: per material category and task, without a notice.

Each function writes a PNG and a caption beside it (same name, ``.md``) and returns the
matplotlib Figure (closed, still readable). The PNG is byte-for-byte reproducible for a given
table and matplotlib: Agg draws deterministically, PNG files get no timestamp, and the one
metadata entry matplotlib writes by default (``Software``, its version) is left out.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from copyprobe.artifacts import write_text  # noqa: E402
from copyprobe.copyright.analysis import (  # noqa: E402
    NO_NOTICE,
    ROUGE_TASKS,
    TASK_METRICS,
    infringement_rows,
    sort_rows,
)
from copyprobe.copyright.scored_table import validate_scored  # noqa: E402
from copyprobe.store import atomic_write  # noqa: E402

__all__ = ["fig6", "fig7", "fig8", "write_figures"]

_TASKS = tuple(TASK_METRICS)
_LABELS = {"rouge_l_precision": "ROUGE-L precision", "rouge_l_f1": "ROUGE-L F1",
           "rouge_l_recall": "ROUGE-L recall", "bertscore_f1": "BERTScore F1",
           "embedding_cosine": "embedding cosine"}


def _save(fig: Figure, path: str | os.PathLike[str], caption: str) -> Figure:
    p = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    atomic_write(p, buf.getvalue())
    write_text(p.with_suffix(".md"), f"![{p.stem}]({p.name})\n\n{caption}\n")
    return fig


def _ordered(df: pd.DataFrame, col: str) -> list[str]:
    return [str(v) for v in sort_rows(df[[col]].drop_duplicates(), [col])[col]]


def _empty(ax: plt.Axes, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="gray")


def fig6(scored: pd.DataFrame, path: str | os.PathLike[str], *,
         metric: str = "rouge_l_precision", tasks: Sequence[str] = ROUGE_TASKS) -> Figure:
    """One panel per model: a box plot of ``metric`` per notice form over the ok rows of
    ``tasks`` (means marked), the number of responses under each box."""
    scored = validate_scored(scored)
    df = infringement_rows(scored, None)
    df = df[(df["status"] == "ok") & df["task"].isin(tasks) & np.isfinite(df[metric])]
    models = _ordered(scored, "model")
    forms = _ordered(scored[~scored["benign"]], "notice_form")
    ncols = min(3, max(1, len(models)))
    nrows = -(-max(1, len(models)) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.ravel()[len(models):]:
        ax.set_visible(False)
    for ax, model in zip(axes.ravel(), models):
        m = df[df["model"] == model]
        data = [m.loc[m["notice_form"] == f, metric].to_numpy(dtype=float) for f in forms]
        ax.set_title(model, fontsize=10)
        if not any(d.size for d in data):
            _empty(ax)
        else:
            pos = [i for i, d in enumerate(data) if d.size]
            ax.boxplot([data[i] for i in pos], positions=pos, showmeans=True, widths=0.6)
        ax.set_xticks(range(len(forms)))
        ax.set_xticklabels([f"{f}\n(n={d.size})" for f, d in zip(forms, data)], fontsize=7,
                           rotation=30, ha="right")
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(_LABELS.get(metric, metric))
    fig.suptitle(f"{_LABELS.get(metric, metric)} per notice form ({', '.join(tasks)})")
    caption = (f"Figure 6: distribution of {_LABELS.get(metric, metric)} over the "
               f"{' and '.join(tasks)} responses, per notice form, one panel per model (box: "
               "quartiles; whiskers: 1.5 IQR; triangle: mean; n: responses). Failed responses "
               "are left out.")
    return _save(fig, path, caption)


def _bars(scored: pd.DataFrame, path: str | os.PathLike[str], group: str, caption: str,
          title: str) -> Figure:
    """Two rows of panels, one column per task: mean similarity (task metric) and refusal
    rate per ``group`` value (x), one bar per model (refusal over judged rows only; failed and
    unparseable rows left out; a missing bar is a group with no such row)."""
    models = _ordered(scored, "model")
    groups = _ordered(scored, group) if len(scored) else []
    fig, axes = plt.subplots(2, len(_TASKS), figsize=(3.6 * len(_TASKS), 6.4), squeeze=False)
    width = 0.8 / max(1, len(models))
    x = np.arange(len(groups))
    for col, task in enumerate(_TASKS):
        metric = TASK_METRICS[task][0]
        t = scored[(scored["task"] == task) & (scored["status"] == "ok")]
        top, bottom = axes[0, col], axes[1, col]
        top.set_title(task, fontsize=10)
        top.set_ylabel(_LABELS[metric])
        bottom.set_ylabel("refusal rate")
        for i, model in enumerate(models):
            m = t[t["model"] == model]
            sim = [m.loc[m[group] == g, metric].mean() for g in groups]
            judged = [m.loc[m[group] == g, "refused"].dropna().astype(float) for g in groups]
            rate = [j.mean() if len(j) else np.nan for j in judged]
            off = x + (i - (len(models) - 1) / 2) * width
            top.bar(off, sim, width, label=model)
            bottom.bar(off, rate, width, label=model)
        if t.empty:
            _empty(top)
            _empty(bottom)
        for ax in (top, bottom):
            ax.set_xticks(x)
            ax.set_xticklabels(groups, fontsize=7, rotation=30, ha="right")
            ax.set_ylim(0, 1.02)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, -0.04))
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path, caption)


def fig7(scored: pd.DataFrame, path: str | os.PathLike[str]) -> Figure:
    """Per notice form (x) and task (column): each model's mean similarity and refusal rate."""
    scored = validate_scored(scored)
    caption = ("Figure 7: per notice form and infringement task (repetition, extraction, "
               "paraphrase, translation), each model's mean similarity (top: ROUGE-L precision, "
               "BERTScore F1, embedding cosine as the task defines) and refusal rate (bottom: "
               "judged responses only; failed responses and unparseable verdicts left out).")
    return _bars(infringement_rows(scored, None), path, "notice_form", caption,
                 "Compliance per notice form and task")


def fig8(scored: pd.DataFrame, path: str | os.PathLike[str], *,
         notice_form: str | None = NO_NOTICE) -> Figure:
    """Per material category (x) and task (column), rows of ``notice_form`` only."""
    scored = validate_scored(scored)
    which = "without a notice" if notice_form == NO_NOTICE else (
        "all notice forms" if notice_form is None else f"notice form {notice_form}")
    caption = (f"Figure 8: per material category and infringement task, {which}: each model's "
               "mean similarity (top) and refusal rate (bottom; judged responses only).")
    return _bars(infringement_rows(scored, notice_form), path, "category", caption,
                 f"Compliance per material category ({which})")


def write_figures(scored: pd.DataFrame, out_dir: str | os.PathLike[str]) -> list[Path]:
    """fig6.png, fig7.png and fig8.png (each with its caption .md) under ``out_dir``."""
    scored = validate_scored(scored)
    out = Path(out_dir)
    paths = []
    for name, draw in (("fig6", fig6), ("fig7", fig7), ("fig8", fig8)):
        draw(scored, out / f"{name}.png")
        paths.append(out / f"{name}.png")
    return paths
