"""Figures: integer ticks for words and counts, whole-count y axes also for all-zero data,
readable legends, and the multi-model and sweep figures; ticks are read back from the
returned matplotlib Figure."""

from __future__ import annotations

import matplotlib.image
import pytest

from copyprobe.msr.figures import (
    plot_fk,
    plot_fk_models,
    plot_fk_sweep,
    plot_helm,
    plot_per_document,
)

PRE_POST = {"a": ("pre", 9, 9, 8, 0.9), "b": ("pre", 6, 7, 4, 0.7),
            "c": ("post", 2, 2, 0, 0.2), "d": ("post", 1, 1, 1, 0.1)}
ZEROS = {"a": ("pre", 1, 1, 0, 0.1), "c": ("post", 0, 0, 0, 0.0)}


def ticks(fig, ax, axis):
    """Labels of the ticks inside the visible range of ``axis`` ('x' or 'y')."""
    fig.canvas.draw()
    lo, hi = sorted(getattr(ax, f"get_{axis}lim")())
    i = 0 if axis == "x" else 1
    return [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()
            if lo - 1e-9 <= t.get_position()[i] <= hi + 1e-9]


def legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def assert_png(path, min_width=400):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert matplotlib.image.imread(path).shape[1] >= min_width


def test_fk_all_zero_counts_get_whole_count_ticks(tmp_path, make_result):
    fig = plot_fk(make_result(ZEROS), tmp_path / "fk.png")
    ax = fig.axes[0]
    assert ticks(fig, ax, "x") == [str(k) for k in range(5, 13)]
    assert ticks(fig, ax, "y") == ["0", "1"]  # not 0.00 .. 0.05
    assert ax.get_ylim()[0] == 0
    assert "no document's match reached 5 words" in [t.get_text() for t in ax.texts]
    assert_png(tmp_path / "fk.png")


def test_fk_counts_and_legend(tmp_path, make_result):
    r = make_result(PRE_POST)
    assert r["paper"]["f_pre"] == [2, 1, 1, 1, 0, 0, 0, 0]
    fig = plot_fk(r, tmp_path / "fk.png")
    ax = fig.axes[0]
    assert ticks(fig, ax, "y") == ["0", "1", "2"]
    assert legend(ax) == ["D_pre, paper mode (2 documents)", "D_post, paper mode (2 documents)",
                          "D_pre, word mode", "D_post, word mode"]
    # the legend sits below the axes, where it cannot hide a curve
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent()
    assert box.y1 <= ax.get_window_extent().y0


def test_per_document_x_axis_has_whole_words_only(tmp_path, make_result):
    fig = plot_per_document(make_result(ZEROS), tmp_path / "pd.png")
    assert ticks(fig, fig.axes[0], "x") == ["0", "1", "2"]  # max match 1 word: no 0.2 .. 1.2
    fig = plot_per_document(make_result(PRE_POST), tmp_path / "pd.png")
    ax = fig.axes[0]
    assert ticks(fig, ax, "x") == [str(i) for i in range(11)]
    assert legend(ax)[0] == "D_pre (2 documents, median 8, max 9)"
    # D_pre matches 9 and 7 words: all longer than 0..6, one longer than 7 and 8, none at 9
    pre = ax.get_lines()[0]
    assert list(pre.get_xdata()) == list(range(11))
    assert list(pre.get_ydata()) == [1.0] * 7 + [0.5, 0.5, 0.0, 0.0]
    assert_png(tmp_path / "pd.png")


def test_fk_models_one_colour_per_model(tmp_path, make_result):
    results = [make_result(PRE_POST, model="gpt-3.5"), make_result(ZEROS, model="llama")]
    fig = plot_fk_models(results, tmp_path / "fig1.png", title="Figure 1: Wikipedia")
    ax = fig.axes[0]
    assert ax.get_title() == "Figure 1: Wikipedia"
    # two columns, D_pre left and D_post right: one legend row per model
    assert legend(ax) == ["gpt-3.5: D_pre (2 documents)", "llama: D_pre (1 document)",
                          "gpt-3.5: D_post (2 documents)", "llama: D_post (1 document)"]
    fig.canvas.draw()
    x0 = [t.get_window_extent().x0 for t in ax.get_legend().get_texts()]
    assert x0[0] == x0[1] < x0[2] == x0[3]
    lines = ax.get_lines()
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color()
    assert (lines[0].get_linestyle(), lines[1].get_linestyle()) == ("-", "--")
    assert list(lines[0].get_ydata()) == [2, 1, 1, 1, 0, 0, 0, 0]
    assert ticks(fig, ax, "y") == ["0", "1", "2"]
    assert_png(tmp_path / "fig1.png")
    with pytest.raises(ValueError, match=r"one dataset per figure, got \['oer', 'wiki'\]"):
        plot_fk_models([results[0], make_result(ZEROS, dataset="oer")], tmp_path / "x.png",
                       title="t")


def test_fk_sweep_variants_on_their_own_thresholds(tmp_path, make_result):
    # the input-length ablation: k_max = L / n, so 75 words with n = 6 stops at k = 12 and a
    # shorter run at k = 7
    short = make_result(PRE_POST, k_max=7)
    full = make_result(PRE_POST)
    fig = plot_fk_sweep({"40": short, "75": full}, tmp_path / "fig4.png",
                        title="Figure 4", parameter="input words")
    ax = fig.axes[0]
    assert ticks(fig, ax, "x") == [str(k) for k in range(5, 13)]
    assert legend(ax)[0] == "input words = 40: D_pre (2 documents)"
    assert list(ax.get_lines()[0].get_xdata()) == [5, 6, 7]
    assert_png(tmp_path / "fig4.png")
    with pytest.raises(ValueError, match="no results"):
        plot_fk_sweep({}, tmp_path / "y.png", title="t", parameter="n")


def test_helm_figure_prefix_in_words_and_edit_similarity(tmp_path, make_result):
    fig = plot_helm(make_result(PRE_POST), tmp_path / "helm.png")
    lcp, es = fig.axes
    assert ticks(fig, lcp, "x") == ["D_pre (2)", "D_post (2)"]
    assert ticks(fig, lcp, "y") == [str(i) for i in range(9)]  # prefixes 8, 4, 0, 1 words
    assert ticks(fig, es, "y") == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert lcp.get_title() == "Cliff's delta -1.000 (post vs pre)"
    assert_png(tmp_path / "helm.png")
    fig = plot_helm(make_result(ZEROS), tmp_path / "helm0.png")
    assert ticks(fig, fig.axes[0], "y") == ["0", "1"]
