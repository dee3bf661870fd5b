"""The extraction study's figures from a constructed WINDOWS table: each is a PNG, draws what
its data says (a line per p and split; a row per document, the likeliest first), and an empty
table draws a note instead of failing."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from copyprobe.extraction.figures import plot_extraction_map, plot_log_pz, plot_np_curves

sys.path.insert(0, str(Path(__file__).parent))
from windows_table import NS, PS, windows_table  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_three_figures(tmp_path):
    w = windows_table()
    fig = plot_log_pz(w, tmp_path / "log_pz.png", title="m on ds")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["D_pre (12 windows)", "D_post (12 windows)", "p_z = 0.5"]
    fig = plot_np_curves(w, tmp_path / "np.png", ns=NS, ps=PS)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 * len(PS)
    pre_half = next(ln for ln in lines if ln.get_label() == "D_pre, p=0.5")
    assert list(pre_half.get_ydata())[0] == 4 / 12  # p_z >= 0.5 at n = 1
    fig = plot_extraction_map(w, tmp_path / "map.png", top=2)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles[0].startswith("doc0 (D_pre): 4 windows, max p_z 0.9")
    assert titles[1].startswith("doc2 (D_pre)")  # 0.8, the next likeliest
    dark = [p.get_facecolor() for p in fig.axes[0].patches]
    assert len(dark) == 4 and dark[0] == dark[1] != dark[2]  # 0.9, 0.6 reach p_z 0.5
    assert fig.axes[0].get_ylabel() == "p_z"  # some window reaches 0.05: Cooper et al.'s axis
    # where every p_z is small (small models) the map is drawn in log10 p_z, same colours
    small = w.assign(log_pz=w["log_pz"] - 20.0)
    fig = plot_extraction_map(small, tmp_path / "small.png", top=2)
    assert fig.axes[0].get_ylabel() == "log10 p_z"
    low, high = fig.axes[0].get_ylim()
    assert high == 0 and low <= math.log10(0.9) - 20 / math.log(10)
    assert len({p.get_facecolor() for p in fig.axes[0].patches}) == 1  # none reaches 0.5
    with pytest.raises(ValueError, match="scale"):
        plot_extraction_map(w, tmp_path / "x.png", scale="sqrt")
    for name in ("log_pz.png", "np.png", "map.png", "small.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)


def test_figures_of_a_table_without_a_scored_window(tmp_path):
    w = windows_table()
    w = w[w["status"] == "skipped"]
    for fig in (plot_log_pz(w, tmp_path / "a.png"),
                plot_np_curves(w, tmp_path / "b.png", ns=NS, ps=PS),
                plot_extraction_map(w, tmp_path / "c.png")):
        assert [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith(
            "no scored window")]


def test_the_workflow_map_counts_in_the_unit_its_window_files_state(tmp_path):
    """The workflow's figures read the unit from the WINDOWS files' provenance: windows cut in
    words are drawn against the word offset, not the token offset; files in two units stop."""
    from copyprobe.artifacts import provenance, write_table
    from copyprobe.extraction.figures import plot_study_figures
    from copyprobe.artifacts import read_meta
    from copyprobe.extraction.window_scoring import merge_window_files, windows_unit
    from copyprobe.extraction.tables import WINDOWS

    w = windows_table()
    paths = []
    for k, (part, unit) in enumerate(((w[w["split"] == "pre"], "words"),
                                      (w[w["split"] == "post"], "words"),
                                      (w[w["split"] == "post"], "tokens"))):
        paths.append(tmp_path / f"w{k}.parquet")
        write_table(part, paths[-1], WINDOWS, provenance("extraction_score", {}, unit=unit))
    merged = tmp_path / "merged.parquet"  # the merge of two shards keeps their unit
    assert len(merge_window_files(paths[:2], merged)) == len(w)
    assert read_meta(merged)["unit"] == "words"
    settings = {"ns": NS, "ps": PS, "headline": {"n": 1, "p": 0.5}}
    out = {name: tmp_path / f"{name}.png" for name in ("log_pz", "np_curves", "map")}
    figs = plot_study_figures([merged], out, settings, title="m on ds")
    assert figs["map"].axes[-1].get_xlabel() == "word offset of the window's suffix in the document"
    assert all(p.read_bytes().startswith(PNG) for p in out.values())
    figs = plot_study_figures(paths[2:], out, settings, title="m on ds")
    assert figs["map"].axes[-1].get_xlabel().startswith("token offset")
    with pytest.raises(ValueError, match="different units: .*w1.parquet: words.*w2.parquet: tokens"):
        windows_unit(paths[1:])
