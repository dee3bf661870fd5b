"""The local kind's optional copyright columns: category, holder, year, notice."""

from __future__ import annotations

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SourceError, build_source


def folder(tmp_path, rows: str, header: str = "file,title,published,category,holder,year,notice"):
    d = tmp_path / "mats"
    d.mkdir()
    (d / "song.txt").write_text("Verse one.\nChorus.\n", encoding="utf-8")
    (d / "essay.txt").write_text("An essay of mine.\n", encoding="utf-8")
    (d / "metadata.csv").write_text(header + "\n" + rows, encoding="utf-8")
    return d


def load(d, **params):
    return build_source("m", {"kind": "local", "path": str(d), **params}).load("m")


def test_copyright_columns_fill_the_rights_fields(tmp_path):
    d = folder(tmp_path,
               'song.txt,Night Song,2020-01-01,lyrics,Song House,2019,"© 2019 Song House"\n'
               "essay.txt,Essay,2021-06-01,,,,\n")
    c = load(d).corpus.set_index("title")
    song = c.loc["Night Song"]
    assert (song["category"], song["rights_holder"], song["rights_year"],
            song["rights_notice"]) == ("lyrics", "Song House", 2019, "© 2019 Song House")
    essay = c.loc["Essay"]
    assert (essay["category"], essay["rights_holder"], essay["rights_notice"]) == ("", "", "")
    assert pd_isna(essay["rights_year"])
    to_table(load(d).corpus, CORPUS)


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_tables_without_the_columns_leave_them_empty(tmp_path):
    d = folder(tmp_path, "song.txt,Night Song,2020-01-01\nessay.txt,Essay,2021-06-01\n",
               header="file,title,published")
    c = load(d).corpus
    assert (c["category"] == "").all() and (c["rights_holder"] == "").all()
    assert c["rights_year"].isna().all()


def test_bad_year_names_table_row_and_file(tmp_path):
    d = folder(tmp_path, "song.txt,Night Song,2020-01-01,lyrics,Song House,19,\n"
                         "essay.txt,Essay,2021-06-01,,,,\n")
    with pytest.raises(SourceError, match=r"metadata.csv row 1 \(line 2\), file 'song.txt': "
                                          r"year '19' is not a four-digit year"):
        load(d)
    r = load(d, on_error="skip")
    assert r.corpus["title"].tolist() == ["Essay"]
    assert r.skipped["reason"].item().startswith("year '19' is not a four-digit year")
