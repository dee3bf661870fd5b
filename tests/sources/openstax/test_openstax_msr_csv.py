"""The msr_csv reader (the MSR authors' CSV files through the msr_csv source) and the kind's
config checks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.sources import SourceError, build_source, source_input_files

ROOT = Path(__file__).resolve().parents[3]


def spec(folder, **over):
    return {"kind": "openstax", "reader": "msr_csv", "books": [
        {"path": str(folder / "concepts_bio.csv"), "slug": "concepts-biology",
         "title": "Concepts of Biology", "published": "2013-04-25"},
        {"path": str(folder / "econ_2e_os_book.csv"), "slug": "principles-economics-2e",
         "title": "Principles of Economics 2e", "published": "2017-10-11"}], **over}


def test_the_msr_csv_files_give_the_same_documents_as_the_msr_csv_kind(csv_fixtures):
    r = build_source("oer", spec(csv_fixtures)).load("oer")
    direct = build_source("oer", {"kind": "msr_csv", "path": str(csv_fixtures), "files": {
        "concepts_bio.csv": {"published": "2013-04-25", "book": "concepts-biology",
                             "title": "Concepts of Biology"},
        "econ_2e_os_book.csv": {"published": "2017-10-11", "book": "principles-economics-2e",
                                "title": "Principles of Economics 2e"}}}).load("oer")
    cols = ["doc_id", "title", "text", "published", "url", "licence"]
    pd.testing.assert_frame_equal(r.corpus[cols], direct.corpus[cols])
    assert list(r.skipped["ref"]) == list(direct.skipped["ref"])
    econ = pd.read_csv(csv_fixtures / "econ_2e_os_book.csv", dtype=str, keep_default_na=False)
    assert len(r.corpus) == 82 + int((econ["contents"].str.split().str.len() >= 1).sum())
    row = r.corpus.iloc[0]
    assert row["title"] == "Concepts of Biology 1.1 Themes and Concepts of Biology"
    assert row["url"] == ("https://openstax.org/books/concepts-biology/pages/"
                          "1-1-themes-and-concepts-of-biology")
    assert row["published"] == dt.date(2013, 4, 25)
    assert row["page_id"] == "concepts-biology:1-1-themes-and-concepts-of-biology"
    prov = json.loads(row["provenance"])
    assert (prov["reader"], prov["section_id"], prov["section_name"]) == (
        "msr_csv", "1.1", "Themes and Concepts of Biology")
    assert row["revision_id"] == prov["file_sha256"]
    assert source_input_files(spec(csv_fixtures)) == [str(csv_fixtures / "concepts_bio.csv"),
                                                      str(csv_fixtures / "econ_2e_os_book.csv")]


def test_limit_samples_per_book_in_book_order(csv_fixtures):
    a = build_source("oer", spec(csv_fixtures, limit=4, sample_seed=2)).load("oer")
    b = build_source("oer", spec(csv_fixtures, limit=4, sample_seed=2)).load("oer")
    assert len(a.corpus) == 8 and list(a.corpus["doc_id"]) == list(b.corpus["doc_id"])
    rows = [json.loads(p)["row"] for p in a.corpus["provenance"]]
    assert rows[:4] == sorted(rows[:4]) and rows[4:] == sorted(rows[4:])


def test_unnumbered_csv_rows_are_skipped_unless_all_sections(tmp_path):
    pd.DataFrame([{"section_id": "1.1", "section_name": "A", "section_url": "1-1-a",
                   "contents": "Some words here."},
                  {"section_id": "", "section_name": "Preface", "section_url": "preface",
                   "contents": "Welcome to the book."}]).to_csv(tmp_path / "b.csv", index=False)
    s = {"kind": "openstax", "reader": "msr_csv",
         "books": [{"path": str(tmp_path / "b.csv"), "published": "2020-01-01"}]}
    r = build_source("oer", s).load("oer")
    assert list(r.corpus["title"]) == ["b 1.1 A"]
    assert list(r.skipped["reason"]) == ["not a numbered section (sections: numbered)"]
    assert len(build_source("oer", {**s, "sections": "all"}).load("oer").corpus) == 2


@pytest.mark.parametrize(("over", "message"), [
    ({"reader": "pdf"}, r"param 'reader' must be one of \['archive', 'cnxml', 'msr_csv'\]"),
    ({"books": []}, r"param 'books' must be a non-empty list"),
    ({"sections": "some"}, r"param 'sections' must be 'numbered' or 'all'"),
    ({"user_agent": "x"}, r"param\(s\) \['user_agent'\] are for the archive reader only"),
    ({"limt": 3}, r"source openstax: unknown param\(s\) \['limt'\]; known: \['archive_url', "),
])
def test_bad_params_are_named(over, message):
    s = {"kind": "openstax", "reader": "msr_csv",
         "books": [{"path": "b.csv", "published": "2020-01-01"}], **over}
    with pytest.raises(SourceError, match=message):
        build_source("oer", s)


def test_schema_block_lists_the_params_and_validates_them():
    from copyprobe.config import ConfigError, load_schema, source_kind_params, validate_config
    from copyprobe.sources.openstax import _PARAMS
    from copyprobe.sources.openstax.book import BOOK_KEYS

    assert source_kind_params()["openstax"] == _PARAMS
    block = load_schema()["$defs"]["source_kinds"]["openstax"]
    assert set(block["properties"]["books"]["items"]["properties"]) == BOOK_KEYS

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    some = next(iter(cfg["sources"]))
    cfg["sources"][some] = {"kind": "openstax", "reader": "cnxml",
                            "books": [{"path": "x", "published": "2013-04-25", "edition": 1}]}
    with pytest.raises(ConfigError, match=rf"'sources\.{some}\.books\.0\.edition'"):
        validate_config(cfg)
    cfg["sources"][some] = {"kind": "openstax", "reader": "html", "books": [{"path": "x"}]}
    with pytest.raises(ConfigError, match=rf"config key 'sources\.{some}\.reader'"):
        validate_config(cfg)
