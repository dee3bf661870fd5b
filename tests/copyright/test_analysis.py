"""The compliance benchmark's tables on small hand-made SCORED tables, numbers checked by hand
or against scipy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from copyprobe.artifacts import write_table
from copyprobe.copyright.analysis import (
    by_category,
    by_notice_form,
    over_refusal,
    table1,
    table5,
    to_markdown,
    write_tables,
)
from copyprobe.copyright.scored_table import SCORED, ScoredTableError, read_scored, validate_scored

BOOT = {"n_boot": 400, "seed": 0}
_VERDICT = {"yes": True, "no": False}
_counter = iter(range(10**6))


def row(model: str = "m", task: str = "repetition", form: str = "none", *,
        sim: float | None = None, f1: float | None = None, judge: str | None = "no",
        status: str = "ok", category: str = "book", benign: bool = False,
        rule: bool = False) -> dict:
    """One SCORED row; ``sim`` goes to the task's metric column."""
    metric = {"repetition": "rouge_l_precision", "extraction": "rouge_l_precision",
              "paraphrase": "bertscore_f1", "translation": "embedding_cosine"}.get(task)
    r = {"request_id": f"r{next(_counter)}", "model": model, "material_id": "x1", "title": "T",
         "category": category, "notice_form": form, "task": task, "query_id": "q1",
         "benign": benign, "status": status, "response": "text",
         "rouge_l_precision": np.nan, "rouge_l_recall": np.nan, "rouge_l_f1": np.nan,
         "bertscore_f1": np.nan, "embedding_cosine": np.nan, "refusal_rule": rule,
         "refusal_judge": judge, "refused": _VERDICT.get(judge) if judge else None}
    if metric and sim is not None:
        r[metric] = sim
    if f1 is not None:
        r["rouge_l_f1"] = f1
    return r


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SCORED.columns)


def one(df: pd.DataFrame, **key: str) -> pd.Series:
    sel = df
    for k, v in key.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, (key, sel)
    return sel.iloc[0]


@pytest.fixture
def repetition_rows() -> list[dict]:
    """No notice: four ok responses (ROUGE-L precision .2 .4 .6 .8; F1 .1 .1 .3 .3), verdicts
    yes, no, no, unparseable; a failed row claiming refusal and a perfect score; and one row with
    a notice that Table 1 must leave out."""
    return [
        row(sim=0.2, f1=0.1, judge="yes", rule=True),
        row(sim=0.4, f1=0.1, judge="no"),
        row(sim=0.6, f1=0.3, judge="no"),
        row(sim=0.8, f1=0.3, judge="unparseable"),
        row(sim=1.0, f1=1.0, judge="yes", status="failed"),
        row(form="text_generic", sim=0.0, f1=0.0, judge="yes"),
    ]


def test_table1_counts_rates_and_means_by_hand(repetition_rows: list[dict]) -> None:
    t = table1(frame(repetition_rows), **BOOT)
    r = one(t, model="m", task="repetition")
    assert r["metric"] == "rouge_l_precision"
    # the refusal's 0.2 and the failed row's 1.0 are left out: .4 .6 .8 (the unparseable
    # verdict is no refusal); F1 likewise .1 .3 .3
    assert r["similarity"] == pytest.approx(0.6) and r["n_refusals_left_out"] == 1
    assert r["rouge_l_f1"] == pytest.approx(0.7 / 3)
    assert (r["n"], r["n_ok"], r["n_failed"]) == (5, 4, 1)
    assert (r["n_judged"], r["n_refused"], r["n_unparseable"], r["n_unjudged"]) == (3, 1, 1, 0)
    assert r["refusal_rate"] == pytest.approx(1 / 3)
    assert r["refusal_rule_rate"] == pytest.approx(0.25)   # rule flags over the 4 ok rows
    for col in ("similarity", "rouge_l_f1", "refusal_rate"):
        assert r[f"{col}_ci_low"] <= r[col] <= r[f"{col}_ci_high"]
        assert r[f"{col}_ci_low"] < r[f"{col}_ci_high"]
    # 3 values .4 .6 .8: no resample mean can leave [.4, .8]
    assert 0.4 - 1e-9 <= r["similarity_ci_low"] and r["similarity_ci_high"] <= 0.8 + 1e-9
    # every notice form: the text_generic row joins
    assert one(table1(frame(repetition_rows), notice_form=None, **BOOT),
               task="repetition")["n"] == 6


def test_table1_uses_each_tasks_metric() -> None:
    rows = [row(task="paraphrase", sim=0.9), row(task="paraphrase", sim=0.7),
            row(task="translation", sim=0.3, judge="yes"), row(task="translation", sim=0.5),
            row(task="extraction", sim=0.4, f1=0.2)]
    t = table1(frame(rows), **BOOT)
    p, tr, e = one(t, task="paraphrase"), one(t, task="translation"), one(t, task="extraction")
    assert (p["metric"], p["similarity"]) == ("bertscore_f1", pytest.approx(0.8))
    # the refusing translation (0.3) is left out of the mean
    assert (tr["metric"], tr["similarity"]) == ("embedding_cosine", pytest.approx(0.5))
    assert tr["refusal_rate"] == pytest.approx(0.5)
    assert math.isnan(p["rouge_l_f1"]) and e["rouge_l_f1"] == pytest.approx(0.2)
    assert list(t["task"]) == ["extraction", "paraphrase", "translation"]


def test_a_constant_rate_has_a_degenerate_interval_and_the_seed_fixes_it() -> None:
    rows = [row(sim=0.5, judge="yes") for _ in range(5)] + [row(model="n", sim=s, judge=j)
                                                            for s, j in [(0.1, "yes"),
                                                                         (0.9, "no"),
                                                                         (0.5, "no"),
                                                                         (0.3, "no"),
                                                                         (0.7, "no")]]
    t = table1(frame(rows), **BOOT)
    m = one(t, model="m")
    assert (m["refusal_rate"], m["refusal_rate_ci_low"],
            m["refusal_rate_ci_high"]) == (1.0, 1.0, 1.0)
    again = table1(frame(rows), **BOOT)
    pd.testing.assert_frame_equal(t, again)
    other = table1(frame(rows), n_boot=400, seed=1)
    assert not one(other, model="n")[["similarity_ci_low", "similarity_ci_high"]].equals(
        one(t, model="n")[["similarity_ci_low", "similarity_ci_high"]])


def test_failed_rows_and_unparseable_verdicts_are_neither_refusal_nor_compliance() -> None:
    base = [row(sim=s, judge=j) for s, j in [(0.1, "yes"), (0.3, "no"), (0.7, "no"),
                                            (0.9, "yes"), (0.5, "no")]]
    base += [row(benign=True, task="summary", judge=j) for j in ("yes", "no", "no", "no")]
    noise = [row(sim=1.0, judge="yes", status="failed"), row(sim=0.0, judge="no",
                                                            status="failed"),
             row(sim=0.6, judge="unparseable"), row(sim=0.6, judge=None),
             row(benign=True, task="summary", judge="yes", status="failed"),
             row(benign=True, task="summary", judge="unparseable")]
    clean, noisy = frame(base), frame(base + noise)
    rates = ["refusal_rate", "refusal_rate_ci_low", "refusal_rate_ci_high", "n_judged",
             "n_refused"]
    for fn in (table1, over_refusal):
        a, b = fn(clean, **BOOT), fn(noisy, **BOOT)
        pd.testing.assert_frame_equal(a[rates], b[rates])
    t = one(table1(noisy, **BOOT), task="repetition")
    assert (t["n_failed"], t["n_unparseable"], t["n_unjudged"]) == (2, 1, 1)
    assert t["refusal_rate"] == pytest.approx(0.4)
    o = one(over_refusal(noisy, **BOOT), task="all")
    assert (o["n_failed"], o["n_unparseable"], o["refusal_rate"]) == (1, 1, 0.25)


def test_by_notice_form_summarises_the_distribution_and_pools_rouge_tasks() -> None:
    rows = [row(form="image_original", sim=s, judge=j)
            for s, j in [(0.2, "yes"), (0.4, "no"), (0.6, "no"), (0.8, "no")]]
    rows += [row(form="image_original", task="extraction", sim=0.0, judge="yes")]
    rows += [row(form="none", sim=0.9, judge="no"), row(form="none", sim=0.7, judge="no")]
    t = by_notice_form(frame(rows), **BOOT)
    r = one(t, notice_form="image_original", task="repetition")
    # the refusal's 0.2 is left out
    assert (r["similarity_min"], r["similarity_p25"], r["similarity_median"],
            r["similarity_p75"], r["similarity_max"]) == pytest.approx((0.4, 0.5, 0.6, 0.7, 0.8))
    assert r["refusal_rate"] == pytest.approx(0.25)
    pool = one(t, notice_form="image_original", task="repetition+extraction")
    assert pool["n_similarity"] == 3 and pool["similarity"] == pytest.approx(0.6)
    assert pool["refusal_rate"] == pytest.approx(0.4)
    # forms in the benchmark's order, not alphabetical
    assert list(dict.fromkeys(t["notice_form"])) == ["none", "image_original"]


def test_by_category_splits_categories_without_notice_only() -> None:
    rows = [row(category="code", sim=0.9, judge="no"), row(category="code", sim=0.7, judge="no"),
            row(category="news", sim=0.1, judge="yes"),
            row(category="news", form="text_original", sim=0.5, judge="no")]
    t = by_category(frame(rows), **BOOT)
    assert sorted(t["category"]) == ["code", "news"]
    code, news = one(t, category="code"), one(t, category="news")
    assert (code["similarity"], code["refusal_rate"]) == (pytest.approx(0.8), 0.0)
    assert (news["n"], news["refusal_rate"]) == (1, 1.0)
    assert one(by_category(frame(rows), notice_form=None, **BOOT), category="news")["n"] == 2


def test_table5_matches_scipy_point_biserial_and_spearman() -> None:
    sims = [0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    refused = [1, 1, 0, 1, 0, 0, 1, 0, 0, 0]
    rows = [row(sim=s, judge="yes" if y else "no") for s, y in zip(sims, refused)]
    rows += [row(sim=0.99, judge="unparseable"), row(sim=0.0, judge="yes", status="failed")]
    rows += [row(model="flat", task="paraphrase", sim=s, judge="no") for s in (0.2, 0.5, 0.9)]
    t = table5(frame(rows))
    r = one(t, level="responses", model="m", task="repetition")
    pb = sps.pointbiserialr(refused, sims)
    rho = sps.spearmanr(sims, refused)
    assert r["n"] == 10 and r["n_refused"] == 4
    assert r["pearson_r"] == pytest.approx(pb.statistic, abs=1e-12)
    assert r["pearson_p"] == pytest.approx(pb.pvalue, abs=1e-12)
    assert r["spearman_rho"] == pytest.approx(rho.statistic, abs=1e-12)
    assert r["spearman_p"] == pytest.approx(rho.pvalue, abs=1e-12)
    assert r["pearson_r"] < 0
    flat = one(t, level="responses", model="flat", task="paraphrase")
    assert math.isnan(flat["pearson_r"]) and flat["note"] == "refusal is constant"
    assert list(dict.fromkeys(t["level"])) == ["responses", "cells"]


def test_table5_cells_correlate_cell_means_with_cell_rates() -> None:
    cells = {("a", "none"): ([0.9, 0.8], [0, 0]), ("a", "text_generic"): ([0.5, 0.3], [1, 0]),
             ("b", "none"): ([0.2, 0.1], [1, 1]), ("b", "text_generic"): ([0.6, 0.6], [0, 1])}
    rows = [row(model=m, form=f, sim=s, judge="yes" if y else "no")
            for (m, f), (ss, ys) in cells.items() for s, y in zip(ss, ys)]
    r = one(table5(frame(rows)), level="cells", task="repetition")
    means = [np.mean(ss) for ss, _ in cells.values()]
    rates = [np.mean(ys) for _, ys in cells.values()]
    assert r["n"] == 4
    assert r["pearson_r"] == pytest.approx(sps.pearsonr(means, rates).statistic, abs=1e-12)
    assert r["spearman_rho"] == pytest.approx(sps.spearmanr(means, rates).statistic, abs=1e-12)


def test_over_refusal_counts_benign_rows_only() -> None:
    rows = [row(benign=True, task="summary", judge="yes"), row(benign=True, task="summary"),
            row(benign=True, task="author"), row(benign=True, task="author"),
            row(sim=0.1, judge="yes"), row(sim=0.1, judge="yes")]
    t = over_refusal(frame(rows), **BOOT)
    assert list(t["task"]) == ["summary", "author", "all"]
    assert one(t, task="summary")["refusal_rate"] == 0.5
    assert one(t, task="all")["refusal_rate"] == 0.25 and one(t, task="all")["n"] == 4
    assert over_refusal(frame(rows[4:]), **BOOT).empty


def test_write_tables_writes_csv_and_markdown(tmp_path, repetition_rows) -> None:
    rows = repetition_rows + [row(benign=True, task="comment", judge="yes")]
    written = write_tables(frame(rows), tmp_path, **BOOT)
    assert set(written) == {"table1", "by_notice_form", "by_category", "table5", "over_refusal"}
    t1 = pd.read_csv(tmp_path / "table1.csv")
    assert t1.loc[0, "refusal_rate"] == pytest.approx(1 / 3)
    md = (tmp_path / "table1.md").read_text()
    assert "| m | repetition | rouge_l_precision | 60.00 [" in md
    assert "| 33.33 [" in md and "Table 1:" in md and "95% bootstrap" in md
    assert "100.00" in (tmp_path / "over_refusal.md").read_text()


def test_a_table_without_unnoticed_rows_writes_empty_tables(tmp_path) -> None:
    df = frame([row(form="text_generic", sim=0.4), row(form="image_original", sim=0.6)])
    assert table1(df, **BOOT).empty and by_category(df, **BOOT).empty
    write_tables(df, tmp_path, **BOOT)
    assert (tmp_path / "table1.md").read_text().startswith("| model | task | metric |")
    # 2 forms x (repetition, repetition+extraction)
    assert len(pd.read_csv(tmp_path / "by_notice_form.csv")) == 4


def test_markdown_of_an_empty_table_is_still_a_table() -> None:
    md = to_markdown(pd.DataFrame(columns=["model", "refusal_rate"]), "nothing")
    assert md.splitlines()[:2] == ["| model | refusal_rate |", "|---|---|"]


@pytest.mark.parametrize("drop", ["refused", "embedding_cosine", "notice_form"])
def test_a_missing_column_is_named(drop: str) -> None:
    df = frame([row(sim=0.5)]).drop(columns=[drop])
    with pytest.raises(ScoredTableError, match=f"missing column.*'{drop}'"):
        table1(df)


@pytest.mark.parametrize(("change", "message"), [
    ({"status": "error"}, r"request_id r\d+: column 'status' must be one of"),
    ({"refusal_judge": "maybe", "refused": None}, "column 'refusal_judge' must be one of"),
    ({"refusal_judge": "unparseable", "refused": True}, "column 'refused' must be the judge"),
    ({"refusal_judge": "yes", "refused": False}, "column 'refused' must be the judge"),
    ({"model": ""}, "column 'model' is empty"),
    ({"benign": None}, "column 'benign' is empty"),
    ({"rouge_l_f1": "high"}, "column 'rouge_l_f1' is not numeric"),
    ({"bertscore_f1": float("inf")}, "column 'bertscore_f1' is infinite"),
])
def test_bad_values_are_errors_naming_the_column(change: dict, message: str) -> None:
    r = row(sim=0.5)
    r.update(change)
    with pytest.raises(ScoredTableError, match=message):
        validate_scored(frame([row(sim=0.1), r]), source="s.parquet")


def test_a_scored_parquet_round_trips(tmp_path) -> None:
    df = frame([row(sim=0.5, judge="unparseable"), row(sim=0.2, judge=None), row(sim=0.1)])
    path = write_table(df, tmp_path / "scored.parquet", SCORED, {"step": "test"})
    back = read_scored(path)
    assert back["refused"].isna().tolist() == [True, True, False]
    assert str(back["refused"].dtype) == "boolean"
    pd.testing.assert_frame_equal(table1(back, **BOOT), table1(df, **BOOT))
    bad = tmp_path / "bad.parquet"
    df.drop(columns=["task"]).to_parquet(bad)
    with pytest.raises(Exception, match=r"bad\.parquet.*'task'"):
        read_scored(bad)


def test_the_printed_summary_counts_over_refusal_and_rule_judge_agreement_by_hand() -> None:
    """copyright-score's summary: over-refusal is the judged refusal rate on the benign rows
    (per task and over all), rule/judge agreement counts the ok rows with a yes/no verdict
    (an unparseable verdict and a failed row left out), failures and unparseable verdicts
    are counted apart."""
    from copyprobe.copyright.summary import summary_tables

    rows = [row(judge="yes", rule=True), row(judge="no", rule=False),
            row(judge="no", rule=True), row(judge="yes", rule=False),
            row(judge="unparseable", rule=True), row(judge="yes", rule=True, status="failed")]
    rows += [row(task="summary", benign=True, judge=j) for j in ("yes", "no", "no", "no")]
    rows += [row(task="author", benign=True, judge="yes")]
    t = summary_tables(frame(rows), n_boot=200)
    over = t["over_refusal"].set_index("task")
    assert (over.loc["summary", "n_refused"], over.loc["summary", "refusal_rate"]) == (1, 0.25)
    assert (over.loc["author", "n_refused"], over.loc["author", "refusal_rate"]) == (1, 1.0)
    assert (over.loc["all", "n"], over.loc["all", "refusal_rate"]) == (5, pytest.approx(0.4))
    lo, hi = over.loc["all", "refusal_rate_ci_low"], over.loc["all", "refusal_rate_ci_high"]
    assert lo < 0.4 < hi
    a = t["agreement"].iloc[0]
    # the ok rows with a yes/no verdict, counted by hand (rule False on the benign ones):
    # harmful: (T,yes) (F,no) (T,no) (F,yes); benign: (F,yes) (F,no) (F,no) (F,no) (F,yes)
    assert (a["n"], a["both_yes"], a["both_no"], a["rule_only"], a["judge_only"]) == \
        (9, 1, 4, 1, 3)
    assert a["observed_agreement"] == pytest.approx(5 / 9)
    fails = dict(zip(t["failures"]["error_class"], t["failures"]["n"], strict=True))
    assert fails == {"failed": 1, "unparseable judge verdict": 1}
