"""Figures 6-8 of the compliance benchmark: written, captioned, reproducible, and drawn from the
right rows."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from copyprobe.copyright.figures import fig6, fig7, fig8, write_figures
from copyprobe.copyright.scored_table import ScoredTableError

# The row builder of the analysis tests (tests are not a package: load it by path).
_spec = importlib.util.spec_from_file_location("_cr_rows", Path(__file__).with_name(
    "test_analysis.py"))
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
row, frame = _mod.row, _mod.frame

FORMS = ("none", "text_generic", "text_original", "image_generic", "image_original")
TASKS = ("repetition", "extraction", "paraphrase", "translation")


@pytest.fixture(scope="module")
def scored() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for model in ("alpha", "beta", "gamma"):
        for form in FORMS:
            for task in TASKS:
                for cat in ("code", "news"):
                    for _ in range(3):
                        rows.append(row(model=model, task=task, form=form, category=cat,
                                        sim=float(rng.random()), f1=None,
                                        judge=str(rng.choice(["yes", "no", "unparseable"]))))
    rows.append(row(model="alpha", sim=0.5, status="failed", category="code"))
    rows.append(row(model="alpha", benign=True, task="summary", judge="yes", category="code"))
    return frame(rows)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_figures_are_written_captioned_and_reproducible(scored, tmp_path: Path) -> None:
    paths = write_figures(scored, tmp_path / "a")
    assert [p.name for p in paths] == ["fig6.png", "fig7.png", "fig8.png"]
    for p in paths:
        with Image.open(p) as im:
            assert im.format == "PNG" and im.width > 300 and im.height > 200
            assert "Software" not in im.info
            # not a blank canvas: many distinct colours were drawn
            assert len(im.convert("RGB").getcolors(maxcolors=1 << 16) or []) > 20
        caption = p.with_suffix(".md").read_text()
        assert f"]({p.name})" in caption and f"Figure {p.stem[-1]}:" in caption
    again = write_figures(scored, tmp_path / "b")
    assert [_sha(p) for p in paths] == [_sha(p) for p in again]


def test_fig6_has_one_panel_per_model_and_one_box_per_notice_form(scored, tmp_path) -> None:
    fig = fig6(scored, tmp_path / "fig6.png")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["alpha", "beta", "gamma"]
    labels = [t.get_text() for t in panels[0].get_xticklabels()]
    # 3 responses x 2 categories x 2 ROUGE tasks per form; the failed row is not drawn
    assert labels == [f"{f}\n(n=12)" for f in FORMS]
    # one mean marker per box
    means = [ln for ln in panels[0].lines if ln.get_marker() == "^"]
    assert len(means) == len(FORMS)
    assert sorted(means[0].get_ydata()) == pytest.approx(
        [scored[(scored.model == "alpha") & (scored.notice_form == "none")
                & scored.task.isin(["repetition", "extraction"])
                & (scored.status == "ok")]["rouge_l_precision"].mean()])


def test_fig7_bars_are_the_mean_similarity_and_judged_refusal_rate(scored, tmp_path) -> None:
    fig = fig7(scored, tmp_path / "fig7.png")
    top, bottom = fig.axes[0], fig.axes[len(TASKS)]
    assert top.get_title() == "repetition"
    a = scored[(scored.model == "alpha") & (scored.task == "repetition")
               & (scored.status == "ok")]
    alpha_top = [p.get_height() for p in top.patches[:len(FORMS)]]
    alpha_bottom = [p.get_height() for p in bottom.patches[:len(FORMS)]]
    want_sim = [a[a.notice_form == f]["rouge_l_precision"].mean() for f in FORMS]
    want_rate = [a[a.notice_form == f]["refused"].dropna().astype(float).mean() for f in FORMS]
    assert alpha_top == pytest.approx(want_sim)
    assert alpha_bottom == pytest.approx(want_rate)


def test_fig8_groups_by_category_without_notice(scored, tmp_path) -> None:
    fig = fig8(scored, tmp_path / "fig8.png")
    ax = fig.axes[len(TASKS) - 1]  # translation, top row
    assert [t.get_text() for t in ax.get_xticklabels()] == ["code", "news"]
    g = scored[(scored.model == "alpha") & (scored.task == "translation")
               & (scored.notice_form == "none")]
    want = [g[g.category == c]["embedding_cosine"].mean() for c in ("code", "news")]
    assert [p.get_height() for p in ax.patches[:2]] == pytest.approx(want)
    assert "without a notice" in (tmp_path / "fig8.md").read_text()


def test_a_model_without_rouge_rows_gets_an_empty_panel(tmp_path) -> None:
    df = frame([row(model="a", sim=0.3), row(model="b", task="paraphrase", sim=0.8)])
    fig = fig6(df, tmp_path / "f.png")
    b = [ax for ax in fig.axes if ax.get_title() == "b"][0]
    assert [t.get_text() for t in b.texts] == ["no data"]


def test_a_missing_column_is_named(scored, tmp_path) -> None:
    with pytest.raises(ScoredTableError, match="missing column.*'category'"):
        fig8(scored.drop(columns=["category"]), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
