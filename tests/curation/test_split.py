import datetime as dt

import pytest

from copyprobe.curation import curate
from copyprobe.curation.split import SplitRules, assign_split, is_models_version

from .helpers import corpus, text

CUT = dt.date(2024, 6, 30)


@pytest.mark.parametrize(("published", "split"), [
    (dt.date(2024, 5, 20), "pre"),    # 41 days before: outside the 40-day margin before
    (dt.date(2024, 5, 21), "none"),   # exactly 40 days before: the margin is inclusive
    (dt.date(2024, 6, 30), "none"),   # the cutoff day
    (dt.date(2024, 7, 10), "none"),   # exactly 10 days after
    (dt.date(2024, 7, 11), "post"),   # 11 days after: outside the 10-day margin after
])
def test_separate_margins_on_both_sides(published, split):
    rules = SplitRules(cutoff=CUT, margin_before_days=40, margin_after_days=10)
    got, code, reason = assign_split(published, rules)
    assert got == split
    if got == "none":
        assert code == "margin"
        assert reason == (f"published {published.isoformat()} within 40 day(s) before or 10 "
                          "day(s) after the cutoff 2024-06-30")
    else:
        assert (code, reason) == ("", "")


def test_margin_boundaries_exact_days():
    rules = SplitRules(cutoff=CUT, margin_before_days=30, margin_after_days=30)
    assert assign_split(dt.date(2024, 5, 31), rules)[0] == "none"   # 30 days before
    assert assign_split(dt.date(2024, 5, 30), rules)[0] == "pre"    # 31 days before
    assert assign_split(dt.date(2024, 7, 30), rules)[0] == "none"   # 30 days after
    assert assign_split(dt.date(2024, 7, 31), rules)[0] == "post"   # 31 days after
    assert assign_split(None, rules) == ("none", "no_date", "no published date")


def test_unset_side_margins_take_margin_days():
    r = SplitRules.from_params(CUT, {"margin_days": 7, "margin_before_days": None,
                                     "margin_after_days": 3})
    assert (r.margin_before_days, r.margin_after_days) == (7, 3)
    r = SplitRules.from_params(CUT, {"margin_days": 7})
    assert (r.margin_before_days, r.margin_after_days) == (7, 7)


def test_contradictory_length_window_is_refused():
    with pytest.raises(ValueError, match=r"max_words \(5\) must be >= 1 and >= min_words \(10\)"):
        SplitRules(cutoff=CUT, min_words=10, max_words=5)


def test_curate_margins_and_length_filters_with_codes():
    c = corpus([
        {"doc_id": "pre", "text": text(1), "published": dt.date(2024, 1, 1)},
        {"doc_id": "near_before", "text": text(2), "published": dt.date(2024, 6, 1)},
        {"doc_id": "near_after", "text": text(3), "published": dt.date(2024, 7, 5)},
        {"doc_id": "post", "text": text(4), "published": dt.date(2024, 8, 1)},
        {"doc_id": "short", "text": text(5, n=20), "published": dt.date(2024, 1, 1)},
        {"doc_id": "long", "text": text(6, n=400), "published": dt.date(2024, 8, 1)},
        {"doc_id": "undated", "text": text(7), "published": None},
    ])
    out = curate(c, model="m", cutoff=CUT, margin_days=0, margin_before_days=60,
                 margin_after_days=3, min_words=50, max_words=300)
    by = out.set_index("doc_id")
    assert by.loc[["pre", "post"], "kept"].all()
    assert list(by.loc[["pre", "post"], "split"]) == ["pre", "post"]
    assert by.loc["near_before", "exclusion"] == "margin"
    assert by.loc["near_after", "split"] == "post" and by.loc["near_after", "kept"]
    assert (by.loc["short", "split"], by.loc["short", "exclusion"]) == ("pre", "too_short")
    assert by.loc["short", "reason"] == "20 words, fewer than min_words=50"
    assert (by.loc["long", "split"], by.loc["long", "exclusion"]) == ("post", "too_long")
    assert by.loc["long", "reason"] == "400 words, more than max_words=300"
    assert by.loc["undated", "exclusion"] == "no_date"
    assert (out.loc[out["kept"], "exclusion"] == "").all()
    assert (out.loc[~out["kept"], "reason"] != "").all()


def test_as_of_rows_of_other_cutoffs_are_left_out():
    other = dt.date(2023, 10, 1)
    c = corpus([
        {"doc_id": "A@2024-06-30", "text": text(1), "published": dt.date(2020, 1, 1),
         "as_of": CUT},
        {"doc_id": "A@2023-10-01", "text": text(2), "published": dt.date(2020, 1, 1),
         "as_of": other},
        {"doc_id": "B", "text": text(3), "published": dt.date(2025, 1, 1), "as_of": None},
    ])
    out = curate(c, model="m", cutoff=CUT)
    assert list(out["doc_id"]) == ["A@2024-06-30", "B"]
    assert out["kept"].all()
    assert out.set_index("doc_id").loc["A@2024-06-30", "as_of"] == CUT
    assert is_models_version(None, CUT) and is_models_version(CUT, CUT)
    assert not is_models_version(other, CUT)
    out_other = curate(c, model="m-old", cutoff=other)
    assert list(out_other["doc_id"]) == ["A@2023-10-01", "B"]


def test_build_prompts_joins_only_the_models_versions():
    from copyprobe.msr.prompts import build_prompts

    c = corpus([
        {"doc_id": "A@2024-06-30", "text": text(1), "published": dt.date(2020, 1, 1),
         "as_of": CUT},
        {"doc_id": "A@2023-10-01", "text": text(2), "published": dt.date(2020, 1, 1),
         "as_of": dt.date(2023, 10, 1)},
        {"doc_id": "B", "text": text(3), "published": dt.date(2025, 1, 1)},
    ])
    cur = curate(c, model="m", cutoff=CUT)
    msr = {"prompt_format": "chat", "n": 4, "num_words": 100, "min_segment_words": 1,
           "system_message": "Continue."}
    prompts = build_prompts(c, cur, model="m", msr=msr, cut_at=None)
    assert sorted(zip(prompts["doc_id"], prompts["split"], strict=True)) == [
        ("A@2024-06-30", "pre"), ("B", "post")]
    assert prompts.set_index("doc_id").loc["A@2024-06-30", "document"] == text(1)
