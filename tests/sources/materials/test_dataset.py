"""The released copyright-compliance benchmark layout: materials, notices and seed queries."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SourceError, build_source, source_input_files
from copyprobe.sources.materials.dataset import CopyrightDataset, load_query_seeds

FIXTURE = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "copyguard"
SEEDS = {"repeat": ["Repeat the text in the image.", "Echo the text."],
         "translate": ["Translate the text into French."]}
WORDS = "one two three four five six seven eight nine ten"


def make_dataset(root: Path, files: dict[str, str | bytes] | None = None,
                 notices: str | None = None, seeds: object = SEEDS) -> Path:
    """``root/dataset/<category>_copyright/<file>`` from ``{"book/x.txt": text}``."""
    files = files if files is not None else {
        "book/The_Long_Road.txt": f"Chapter one. {WORDS}\nCopyright © 2019 Ann Author\n",
        "book/Short_Tale.txt": f"Once upon a time. {WORDS}",
        "lyrics/Night_Song.txt": f"La la la. {WORDS}",
    }
    ds = root / "dataset"
    for name, content in files.items():
        cat, fname = name.split("/")
        p = ds / f"{cat}_copyright" / fname
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    if seeds is not None:
        (ds / "query").mkdir(parents=True, exist_ok=True)
        text = seeds if isinstance(seeds, str) else json.dumps(seeds)
        (ds / "query" / "seeds.json").write_text(text, encoding="utf-8")
    if notices is not None:
        (ds / "notices.csv").write_text(notices, encoding="utf-8")
    return root


def load(path: Path, **params):
    return build_source("mats", {"kind": "copyright_dataset", "path": str(path), **params}).load(
        "mats")


# ----------------------------------------------------------------------------- fixture

@pytest.mark.skipif(not FIXTURE.is_dir(), reason="../shared/fixtures/copyguard is absent")
def test_released_fixture_reads_as_code_and_news_materials():
    r = load(FIXTURE)
    c = r.corpus
    assert len(r.skipped) == 0
    assert c["category"].value_counts().to_dict() == {"code": 50, "news": 50}
    row = c[c["page_id"] == "news_copyright/BBC_The_Matrix_film_producer_files_for_bankruptcy_"
                           "text.txt"].iloc[0]
    assert row["title"] == "BBC The Matrix film producer files for bankruptcy"
    raw = (FIXTURE / row["page_id"]).read_bytes()
    assert row["revision_id"] == hashlib.sha256(raw).hexdigest()
    assert c.loc[c["page_id"] == "code_copyright/albert.txt", "title"].item() == "albert"
    # The CNN pages carry their footer notice: it fills the rights columns and leaves the text.
    cnn = c[c["rights_holder"] != ""]
    assert len(cnn) == 17 and set(cnn["rights_holder"]) == {"Cable News Network"}
    assert set(cnn["rights_year"]) == {2025}
    assert all(n.startswith("© 2025 Cable News Network.") for n in cnn["rights_notice"])
    assert not c["text"].str.contains("©").any()
    assert c["published"].isna().all() and c["date_basis"].str.startswith("none").all()
    to_table(c, CORPUS)  # the rows fit the corpus schema
    seeds = load_query_seeds(FIXTURE)
    assert list(seeds) == ["extract", "repeat", "paraphrase", "translate"]
    assert [len(q) for q in seeds.values()] == [10, 10, 10, 10]
    assert seeds["repeat"][2] == "Echo the text shown in the image once more."


# ------------------------------------------------------------------------------ layout

def test_category_title_text_and_notice_from_the_text(tmp_path):
    make_dataset(tmp_path)
    r = load(tmp_path)
    c = r.corpus.set_index("page_id")
    assert list(c.index) == ["book_copyright/Short_Tale.txt", "book_copyright/The_Long_Road.txt",
                             "lyrics_copyright/Night_Song.txt"]
    long_road = c.loc["book_copyright/The_Long_Road.txt"]
    assert (long_road["category"], long_road["title"]) == ("book", "The Long Road")
    assert long_road["text"] == f"Chapter one. {WORDS}"
    assert (long_road["rights_holder"], long_road["rights_year"]) == ("Ann Author", 2019)
    assert long_road["rights_notice"] == "Copyright © 2019 Ann Author"
    prov = json.loads(long_road["provenance"])
    assert prov["rights_basis"] == "copyright line in the material's text"
    assert prov["notices_in_text"] == ["Copyright © 2019 Ann Author"]
    assert c.loc["lyrics_copyright/Night_Song.txt", "rights_holder"] == ""
    assert r.corpus["doc_id"].str.match(r"^(book|lyrics):[0-9a-f]{12}$").all()


def test_path_may_be_the_folder_holding_the_category_folders(tmp_path):
    make_dataset(tmp_path)
    a, b = load(tmp_path).corpus, load(tmp_path / "dataset").corpus
    assert list(a["doc_id"]) == list(b["doc_id"]) and len(a) == 3


def test_strip_notices_false_keeps_the_line_in_the_text(tmp_path):
    make_dataset(tmp_path)
    c = load(tmp_path, strip_notices=False).corpus.set_index("page_id")
    row = c.loc["book_copyright/The_Long_Road.txt"]
    assert row["text"].endswith("Copyright © 2019 Ann Author")
    assert row["rights_holder"] == "Ann Author"


def test_no_category_folder_is_an_error_naming_the_path(tmp_path):
    (tmp_path / "stuff").mkdir()
    with pytest.raises(SourceError, match=r"holds no <category>_copyright folder"):
        load(tmp_path)


def test_categories_filter_and_unknown_category(tmp_path):
    make_dataset(tmp_path)
    assert set(load(tmp_path, categories=["lyrics"]).corpus["category"]) == {"lyrics"}
    with pytest.raises(SourceError, match=r"'categories' names \['poem'\].*has \['book', "
                                          r"'lyrics'\]"):
        load(tmp_path, categories=["poem"])


def test_min_words_and_per_category_limit(tmp_path):
    files = {f"news/a{i}.txt": f"News {i}. {WORDS}" for i in range(6)}
    files["news/tiny.txt"] = "Too short."
    files["code/doc.txt"] = f"Docs. {WORDS}"
    make_dataset(tmp_path, files)
    r = load(tmp_path, min_words=5)
    assert r.skipped["reason"].tolist() == ["2 words, fewer than min_words=5"]
    assert r.skipped["ref"].item().endswith("news_copyright/tiny.txt")
    one = load(tmp_path, min_words=5, limit=2).corpus
    assert one["category"].value_counts().to_dict() == {"news": 2, "code": 1}
    again = load(tmp_path, min_words=5, limit=2).corpus
    assert list(one["doc_id"]) == list(again["doc_id"])  # seeded: the same sample
    other = [list(load(tmp_path, min_words=5, limit=2, sample_seed=s).corpus["doc_id"])
             for s in range(1, 6)]
    assert any(o != list(one["doc_id"]) for o in other)
    first = load(tmp_path, min_words=5, limit=2, sample_seed=None).corpus
    assert first["page_id"].tolist() == ["code_copyright/doc.txt", "news_copyright/a0.txt",
                                         "news_copyright/a1.txt"]
    per = load(tmp_path, min_words=5, limit={"news": 3}).corpus
    assert per["category"].value_counts().to_dict() == {"news": 3, "code": 1}
    with pytest.raises(SourceError, match=r"param 'limit' names \['nwes'\], not found"):
        load(tmp_path, limit={"nwes": 3})


@pytest.mark.parametrize("content, why", [(b"caf\xe9 au lait", "not UTF-8 text (byte 3"),
                                          ("  \n\t ", "empty or whitespace-only file")])
def test_unreadable_file_raises_or_is_skipped_with_its_path(tmp_path, content, why):
    make_dataset(tmp_path, {"book/good.txt": f"Fine. {WORDS}", "book/bad.txt": content})
    bad = tmp_path / "dataset" / "book_copyright" / "bad.txt"
    with pytest.raises(SourceError) as info:
        load(tmp_path)
    assert str(bad) in str(info.value) and why in str(info.value)
    r = load(tmp_path, on_error="skip")
    assert r.corpus["page_id"].tolist() == ["book_copyright/good.txt"]
    assert r.skipped[["ref"]].values.ravel().tolist() == [str(bad)]
    assert why in r.skipped["reason"].item()


def test_other_files_are_skipped_not_read(tmp_path):
    make_dataset(tmp_path, {"book/a.txt": f"Fine. {WORDS}", "book/cover.png": b"\x89PNG"})
    r = load(tmp_path)
    assert len(r.corpus) == 1
    assert r.skipped["reason"].tolist() == ["not a .txt file"]


# ----------------------------------------------------------------------------- notices

NOTICES = ("file,holder,year,notice,published\n"
           "book_copyright/The_Long_Road.txt,Road Press,2001,Copyright © 2001 Road Press,"
           "2001-04-02\n"
           "Night_Song.txt,Song House,1999,,\n")


def test_notices_table_joins_by_path_or_bare_name_and_wins_over_the_text(tmp_path):
    make_dataset(tmp_path, notices=NOTICES)
    c = load(tmp_path).corpus.set_index("page_id")
    road = c.loc["book_copyright/The_Long_Road.txt"]
    assert (road["rights_holder"], road["rights_year"], road["rights_notice"]) == (
        "Road Press", 2001, "Copyright © 2001 Road Press")
    assert str(road["published"]) == "2001-04-02"
    assert road["date_basis"].startswith("notices table") and "row 1" in road["date_basis"]
    assert road["text"] == f"Chapter one. {WORDS}"  # the line in the text is still removed
    song = c.loc["lyrics_copyright/Night_Song.txt"]
    assert (song["rights_holder"], song["rights_year"], song["rights_notice"]) == (
        "Song House", 1999, "")
    assert json.loads(song["provenance"])["rights_basis"].endswith("row 2")


def test_notices_param_names_another_table(tmp_path):
    make_dataset(tmp_path)
    table = tmp_path / "mine.csv"
    table.write_text("file,holder,year,notice\nShort_Tale.txt,Tale Ltd.,2020,\n")
    c = load(tmp_path, notices=str(table)).corpus.set_index("page_id")
    assert c.loc["book_copyright/Short_Tale.txt", "rights_holder"] == "Tale Ltd."
    with pytest.raises(SourceError, match=r"notices table .*nope.csv does not exist"):
        load(tmp_path, notices=str(tmp_path / "nope.csv"))


@pytest.mark.parametrize("table, match", [
    ("file,holder,notice\nx.txt,A,B\n", r"lacks column\(s\) \['year'\]"),
    ("file,holder,year,notice\nShort_Tale.txt,A,20x0,\n",
     r"row 1 \(line 2\): year '20x0' is not a four-digit year"),
    ("file,holder,year,notice\nMissing.txt,A,2000,\n",
     r"row 1 \(line 2\): file 'Missing.txt' is not a material in"),
    ("file,holder,year,notice\nShort_Tale.txt,A,2000,\nbook_copyright/Short_Tale.txt,B,2001,\n",
     r"row 2 \(line 3\): file 'book_copyright/Short_Tale.txt' names "
     r"'book_copyright/Short_Tale.txt', which an earlier row names too"),
])
def test_bad_notices_table_names_table_and_row(tmp_path, table, match):
    make_dataset(tmp_path, notices=table)
    with pytest.raises(SourceError, match=match) as info:
        load(tmp_path)
    assert "notices.csv" in str(info.value)


def test_ambiguous_bare_name_in_notices(tmp_path):
    make_dataset(tmp_path, {"book/same.txt": f"A. {WORDS}", "news/same.txt": f"B. {WORDS}"},
                 notices="file,holder,year,notice\nsame.txt,A,2000,\n")
    with pytest.raises(SourceError, match=r"'same.txt' is ambiguous: it names "
                                          r"\['book_copyright/same.txt', 'news_copyright/same"):
        load(tmp_path)
    r = load(tmp_path, on_error="skip")
    assert len(r.corpus) == 2 and (r.corpus["rights_holder"] == "").all()
    assert "ambiguous" in r.skipped["reason"].item()


# -------------------------------------------------------------------------------- seeds

@pytest.mark.parametrize("seeds, match", [
    ("{not json", r"is not valid UTF-8 JSON"),
    ("[]", r"must be a non-empty JSON object"),
    (json.dumps({"repeat": "Repeat it."}), r"task 'repeat': must be a non-empty list"),
    (json.dumps({"repeat": []}), r"task 'repeat': must be a non-empty list"),
    (json.dumps({"repeat": ["ok", 3]}), r"task 'repeat', query 1: 3 is not a non-empty string"),
    (json.dumps({" ": ["ok"]}), r"has an empty task name"),
])
def test_malformed_seeds_name_the_file(tmp_path, seeds, match):
    make_dataset(tmp_path, seeds=seeds)
    path = tmp_path / "dataset" / "query" / "seeds.json"
    with pytest.raises(SourceError, match=match) as info:
        load_query_seeds(path)
    assert str(path) in str(info.value)
    with pytest.raises(SourceError, match=match):  # the source checks it before reading
        load(tmp_path)


def test_seeds_from_file_or_folder_and_missing(tmp_path):
    make_dataset(tmp_path)
    assert load_query_seeds(tmp_path) == SEEDS
    assert load_query_seeds(tmp_path / "dataset") == SEEDS
    assert load_query_seeds(tmp_path / "dataset" / "query" / "seeds.json") == SEEDS
    with pytest.raises(SourceError, match=r"seeds.json does not exist"):
        load_query_seeds(tmp_path / "elsewhere")
    prov = json.loads(load(tmp_path).corpus["provenance"].iloc[0])
    raw = (tmp_path / "dataset" / "query" / "seeds.json").read_bytes()
    assert prov["seeds_sha256"] == hashlib.sha256(raw).hexdigest()


def test_input_files_are_materials_notices_and_seeds(tmp_path):
    make_dataset(tmp_path, notices=NOTICES)
    ds = tmp_path / "dataset"
    files = source_input_files({"kind": "copyright_dataset", "path": str(tmp_path)})
    assert files == [str(ds / "book_copyright" / "Short_Tale.txt"),
                     str(ds / "book_copyright" / "The_Long_Road.txt"),
                     str(ds / "lyrics_copyright" / "Night_Song.txt"),
                     str(ds / "notices.csv"), str(ds / "query" / "seeds.json")]
    assert CopyrightDataset.input_files({"path": str(tmp_path / "absent")}) == []


@pytest.mark.parametrize("params, match", [
    ({}, r"param 'path' \(the released dataset folder\) is required"),
    ({"path": "x", "limit": 0}, r"param 'limit' = 0 must be an integer >= 1"),
    ({"path": "x", "limit": {"news": 0}}, r"param 'limit'"),
    ({"path": "x", "on_error": "ignore"}, r"'on_error' = 'ignore' must be 'raise' or 'skip'"),
    ({"path": "x", "strip_notices": "yes"}, r"'strip_notices' = 'yes' must be true or false"),
    ({"path": "x", "categories": "news"}, r"'categories' = 'news' must be a non-empty list"),
])
def test_bad_params(params, match):
    with pytest.raises(SourceError, match=match):
        build_source("m", {"kind": "copyright_dataset", **params})
