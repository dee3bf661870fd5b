"""The msr_csv source: the MSR authors' OpenStax CSV layout, dated per file."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from copyprobe.sources import SourceError, build_source, source_input_files

ROWS = [
    {"section_id": "1.1", "section_name": "Cells", "section_url": "1-1-cells",
     "contents": "Cells are the basic unit of life and every organism is made of them."},
    {"section_id": "1.2", "section_name": "Empty", "section_url": "1-2-empty", "contents": ""},
    {"section_id": "1.3", "section_name": "Atoms", "section_url": "1-3-atoms",
     "contents": "Atoms combine into molecules."},
]


def spec(folder, **over):
    return {"kind": "msr_csv", "path": str(folder),
            "files": {"old.csv": {"published": "2013-04-25", "book": "concepts-biology",
                                  "title": "Concepts of Biology"},
                      "new.csv": {"published": "2024-01-01", "licence": "CC-BY-NC-SA-4.0"}},
            **over}


@pytest.fixture
def folder(tmp_path):
    pd.DataFrame(ROWS).to_csv(tmp_path / "old.csv", index=False)
    pd.DataFrame(ROWS[:1]).to_csv(tmp_path / "new.csv", index=False)
    return tmp_path


def test_sections_are_documents_dated_by_their_file(folder):
    result = build_source("oer", spec(folder)).load("oer")
    c = result.corpus.set_index("title")
    assert list(c.index) == ["Concepts of Biology 1.1 Cells", "Concepts of Biology 1.3 Atoms",
                             "new 1.1 Cells"]
    assert c.loc["Concepts of Biology 1.1 Cells", "published"] == dt.date(2013, 4, 25)
    assert c.loc["new 1.1 Cells", "published"] == dt.date(2024, 1, 1)
    assert c.loc["Concepts of Biology 1.3 Atoms", "url"] == (
        "https://openstax.org/books/concepts-biology/pages/1-3-atoms")
    assert c.loc["new 1.1 Cells", "url"] == "1-1-cells"  # no book slug: the page slug as is
    assert c.loc["new 1.1 Cells", "licence"] == "CC-BY-NC-SA-4.0"
    assert c.loc["Concepts of Biology 1.1 Cells", "licence"] == "CC-BY-4.0"
    # the same section in two files is two documents
    assert result.corpus["doc_id"].nunique() == 3
    assert list(result.skipped["ref"]) == ["old.csv row 2 (section 1.2)"]
    assert "0 words" in result.skipped["reason"].iloc[0]


def test_min_words_and_limit(folder):
    r = build_source("oer", spec(folder, min_words=6)).load("oer")
    assert sorted(r.corpus["title"]) == ["Concepts of Biology 1.1 Cells", "new 1.1 Cells"]
    r1 = build_source("oer", spec(folder, limit=1, sample_seed=3)).load("oer")
    r2 = build_source("oer", spec(folder, limit=1, sample_seed=3)).load("oer")
    assert len(r1.corpus) == 2 and list(r1.corpus["doc_id"]) == list(r2.corpus["doc_id"])


def test_input_files_are_the_listed_csv_files(folder):
    assert source_input_files(spec(folder)) == [str(folder / "old.csv"), str(folder / "new.csv")]


@pytest.mark.parametrize("change, message", [
    ({"files": {"old.csv": {"published": "25.04.2013"}}}, "files.old.csv.published: not a date"),
    ({"files": {"old.csv": {"book": "x"}}}, "files.old.csv: needs a 'published' date"),
    ({"files": {"old.csv": {"published": "2013-04-25", "pubished": "x"}}},
     "files.old.csv: unknown key(s) ['pubished']"),
    ({"files": {"gone.csv": {"published": "2013-04-25"}}}, "gone.csv (files.gone.csv) does not"),
    ({"limt": 3}, "unknown param(s) ['limt']"),
    ({"limit": "3"}, "param 'limit' = '3' must be an integer >= 1 or null"),
    ({"limit": 0}, "param 'limit' = 0 must be an integer >= 1 or null"),
    ({"sample_seed": 1.5}, "param 'sample_seed' = 1.5 must be an integer"),
    ({"min_words": -1}, "param 'min_words' = -1 must be an integer >= 0"),
])
def test_bad_params_name_the_key(folder, change, message):
    with pytest.raises(SourceError) as err:
        build_source("oer", spec(folder, **change)).load("oer")
    assert message in str(err.value)


def test_a_file_without_the_layout_names_its_columns(folder):
    pd.DataFrame([{"id": 1, "text": "x"}]).to_csv(folder / "old.csv", index=False)
    with pytest.raises(SourceError) as err:
        build_source("oer", spec(folder)).load("oer")
    assert "old.csv lacks column(s) ['section_id', 'section_name', 'section_url', " \
           "'contents']" in str(err.value)


def test_the_authors_openstax_files(shared_fixtures):
    folder = shared_fixtures / "openstax"
    files = {"concepts_bio.csv": {"published": "2013-04-25", "book": "concepts-biology"},
             "nursing_os_book.csv": {"published": "2024-01-01", "book": "nutrition"}}
    r = build_source("oer", {"kind": "msr_csv", "path": str(folder), "files": files}).load("oer")
    counts = r.corpus.groupby("published").size()
    raw = {f: pd.read_csv(folder / f, dtype=str, keep_default_na=False) for f in files}
    nonempty = {f: int((df["contents"].str.split().str.len() > 0).sum()) for f, df in raw.items()}
    assert counts[dt.date(2013, 4, 25)] == nonempty["concepts_bio.csv"] == 82
    assert counts[dt.date(2024, 1, 1)] == nonempty["nursing_os_book.csv"]
    first = r.corpus.iloc[0]
    assert first["text"] == raw["concepts_bio.csv"]["contents"].iloc[0]
    assert first["url"].startswith("https://openstax.org/books/concepts-biology/pages/1-1-")
