import datetime as dt

import pandas as pd

from copyprobe.curation import curate


def _corpus():
    return pd.DataFrame({
        "doc_id": ["old", "new", "edge", "undated", "short"],
        "source": ["s"] * 5,
        # distinct texts, so that no document is a duplicate of another
        "text": [" ".join(f"{d}{i}" for i in range(n))
                 for d, n in (("old", 50), ("new", 50), ("edge", 50), ("undated", 50),
                              ("short", 3))],
        "published": [dt.date(2010, 1, 1), dt.date(2025, 1, 1), dt.date(2024, 6, 20), None,
                      dt.date(2010, 1, 1)],
    })


def test_split_margin_and_reasons():
    out = curate(_corpus(), model="m", cutoff=dt.date(2024, 6, 30), margin_days=30, min_words=10)
    by = out.set_index("doc_id")
    assert by.loc["old", "split"] == "pre" and by.loc["old", "kept"]
    assert by.loc["new", "split"] == "post" and by.loc["new", "kept"]
    assert not by.loc["edge", "kept"] and "within 30 day(s)" in by.loc["edge", "reason"]
    assert not by.loc["undated", "kept"] and by.loc["undated", "reason"] == "no published date"
    assert not by.loc["short", "kept"] and "fewer than min_words=10" in by.loc["short", "reason"]
    assert len(out) == 5  # every document accounted for
    assert (out.loc[out["kept"], "reason"] == "").all()


def test_no_margin_cutoff_day_is_excluded():
    c = _corpus().iloc[:1].assign(published=[dt.date(2024, 6, 30)])
    out = curate(c, model="m", cutoff=dt.date(2024, 6, 30))
    assert not out["kept"].iloc[0]
