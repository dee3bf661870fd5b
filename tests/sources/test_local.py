"""The local source: a folder of text files plus a metadata table."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SOURCES, SourceError, build_source, source_input_files
from copyprobe.sources.local import LocalFolder

GOOD = {
    "essay.txt": "The first essay.\nIt has two lines.\n",
    "notes.md": "# Notes\n\nSome *markdown* notes, written in 2024.\n",
}
HEADER = "file,title,published,url,licence\n"
GOOD_ROWS = (
    "essay.txt,An essay,2023-05-01,https://example.org/essay,CC-BY-4.0\n"
    "notes.md,Some notes,2024-11-30,,CC0-1.0\n"
)


def make_folder(root: Path, rows: str = GOOD_ROWS, files: dict[str, str | bytes] | None = None,
                header: str = HEADER) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in (GOOD if files is None else files).items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    (root / "metadata.csv").write_text(header + rows, encoding="utf-8")
    return root


def test_good_folder(tmp_path):
    folder = make_folder(tmp_path / "docs")
    src = build_source("mine", {"kind": "local", "path": str(folder)})
    assert "local" in SOURCES and isinstance(src, LocalFolder)
    r = src.load("mine")
    c = r.corpus.set_index("doc_id")
    assert list(c.index) == ["local:essay", "local:notes"]
    assert len(r.skipped) == 0
    assert c.loc["local:essay", "text"] == "The first essay.\nIt has two lines."
    assert c.loc["local:essay", "title"] == "An essay"
    assert c.loc["local:essay", "published"] == dt.date(2023, 5, 1)
    assert c.loc["local:notes", "published"] == dt.date(2024, 11, 30)
    assert c.loc["local:essay", "url"] == "https://example.org/essay"
    assert c.loc["local:notes", "url"] == ""
    assert c.loc["local:notes", "licence"] == "CC0-1.0"
    assert set(c["date_basis"]) == {"metadata table metadata.csv"}
    prov = json.loads(c.loc["local:essay", "provenance"])
    assert prov["file"] == "essay.txt"
    assert prov["sha256"] == hashlib.sha256((folder / "essay.txt").read_bytes()).hexdigest()
    assert prov["metadata"] == str(folder / "metadata.csv")
    assert prov["metadata_row"] == 1
    assert to_table(r.corpus, CORPUS).num_rows == 2


def test_relative_path_resolves_against_cwd(tmp_path, monkeypatch):
    make_folder(tmp_path / "corpus" / "docs")
    monkeypatch.chdir(tmp_path / "corpus")
    r = LocalFolder(path="docs").load("mine")
    assert len(r.corpus) == 2
    # recorded relative to the working directory, like the config gave it
    assert json.loads(r.corpus["provenance"].iloc[0])["metadata"] == "docs/metadata.csv"


def test_the_same_folder_elsewhere_gives_the_same_corpus(tmp_path, monkeypatch):
    """A workflow run in two folders records the same provenance (only retrieved_at, a
    volatile column, differs)."""
    from copyprobe.artifacts import VOLATILE_COLUMNS

    corpora = []
    for where in ("one", "two"):
        make_folder(tmp_path / where / "docs")
        monkeypatch.chdir(tmp_path / where)
        corpus = LocalFolder(path="docs").load("mine").corpus
        corpora.append(corpus.drop(columns=sorted(VOLATILE_COLUMNS & set(corpus.columns))))
    pd.testing.assert_frame_equal(*corpora)


def test_parquet_metadata_elsewhere(tmp_path):
    folder = make_folder(tmp_path / "docs", rows="", files=GOOD)
    (folder / "metadata.csv").unlink()
    table = pd.DataFrame({
        "file": ["essay.txt", "notes.md"],
        "title": ["An essay", "Some notes"],
        "published": [dt.date(2023, 5, 1), dt.date(2024, 11, 30)],
        "url": ["", ""],
        "licence": ["CC-BY-4.0", "CC0-1.0"],
    })
    meta = tmp_path / "meta" / "table.parquet"
    meta.parent.mkdir()
    table.to_parquet(meta)
    r = LocalFolder(path=str(folder), metadata=str(meta)).load("mine")
    assert r.corpus["published"].tolist() == [dt.date(2023, 5, 1), dt.date(2024, 11, 30)]
    assert set(r.corpus["date_basis"]) == {"metadata table table.parquet"}


BAD_CASES = {
    # name: (extra file content, extra metadata row, expected message fragment)
    "latin1": ({"old.txt": "Caf\xe9 cr\xe8me".encode("latin-1")},
               "old.txt,Latin-1,2020-01-01,,\n", "not UTF-8"),
    "empty": ({"blank.txt": "  \n\t\n"}, "blank.txt,Blank,2020-01-01,,\n",
              "empty or whitespace-only"),
    "bad date": ({"dated.txt": "Some text."}, "dated.txt,Dated,01/02/2020,,\n",
                 "unparseable published date '01/02/2020'"),
    "missing": ({}, "ghost.txt,Ghost,2020-01-01,,\n", "listed in metadata but missing"),
    "twice": ({}, "essay.txt,Again,2020-01-01,,\n", "listed twice"),
    "bad type": ({"paper.pdf": "%PDF"}, "paper.pdf,PDF,2020-01-01,,\n", "not a .txt or .md file"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_problem_raises_naming_file_and_row(tmp_path, case):
    extra, row, fragment = BAD_CASES[case]
    file = row.split(",")[0]
    folder = make_folder(tmp_path / "docs", rows=GOOD_ROWS + row, files={**GOOD, **extra})
    with pytest.raises(SourceError) as err:
        LocalFolder(path=str(folder)).load("mine")
    msg = str(err.value)
    assert fragment in msg
    assert repr(file) in msg
    assert "row 3 (line 4)" in msg
    assert "metadata.csv" in msg


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_problem_skipped_with_on_error_skip(tmp_path, case):
    extra, row, fragment = BAD_CASES[case]
    file = row.split(",")[0]
    folder = make_folder(tmp_path / "docs", rows=GOOD_ROWS + row, files={**GOOD, **extra})
    r = LocalFolder(path=str(folder), on_error="skip").load("mine")
    assert r.corpus["doc_id"].tolist() == ["local:essay", "local:notes"]
    assert r.skipped["ref"].tolist() == [file]
    assert fragment in r.skipped["reason"].iloc[0]
    assert "row 3" in r.skipped["reason"].iloc[0]


UNLISTED = {**GOOD, "extra.txt": "not in the table", "sub/more.md": "nor this",
            "README.md": "about this folder", "image.png": "not text",
            ".hidden/secret.txt": "hidden"}


def test_unlisted_files_raise_naming_each_file(tmp_path):
    folder = make_folder(tmp_path / "docs", files=UNLISTED)
    with pytest.raises(SourceError) as err:
        LocalFolder(path=str(folder)).load("mine")  # on_error=raise, the default
    msg = str(err.value)
    assert "2 document file(s)" in msg and "have no row in metadata table" in msg
    assert "'extra.txt'" in msg and "'sub/more.md'" in msg
    assert str(folder / "metadata.csv") in msg
    assert "README.md" not in msg and "secret" not in msg and "image.png" not in msg


def test_unlisted_files_skipped_with_reason_under_skip(tmp_path):
    folder = make_folder(tmp_path / "docs", files=UNLISTED)
    r = LocalFolder(path=str(folder), on_error="skip").load("mine")
    assert r.corpus["doc_id"].tolist() == ["local:essay", "local:notes"]
    assert dict(zip(r.skipped["ref"], r.skipped["reason"])) == {
        "extra.txt": "not listed in metadata",
        "sub/more.md": "not listed in metadata",
    }


def test_input_files_list_metadata_and_documents_in_subfolders(tmp_path, monkeypatch):
    folder = make_folder(tmp_path / "docs", files=UNLISTED)
    assert LocalFolder.input_files({"path": str(folder)}) == [
        str(folder / name) for name in
        ("metadata.csv", "README.md", "essay.txt", "extra.txt", "notes.md", "sub/more.md")
    ]
    monkeypatch.chdir(tmp_path)
    spec = {"kind": "local", "path": "docs", "metadata": "meta.parquet"}
    assert source_input_files(spec)[0] == str(tmp_path / "meta.parquet")
    assert LocalFolder.input_files({"path": "nowhere"}) == [str(tmp_path / "nowhere/metadata.csv")]
    with pytest.raises(SourceError, match="on_error"):
        LocalFolder.input_files({"path": "docs", "on_error": "ignore"})


def test_listed_readme_and_subfolder_are_used(tmp_path):
    files = {**GOOD, "README.md": "A readme that is a document.", "sub/more.md": "More text."}
    rows = GOOD_ROWS + "README.md,Readme,2021-01-01,,\nsub/more.md,More,2021-02-02,,\n"
    r = LocalFolder(path=str(make_folder(tmp_path / "d", rows=rows, files=files))).load("m")
    assert r.corpus["doc_id"].tolist() == ["local:essay", "local:notes", "local:README", "local:sub/more"]


def test_same_stem_twice(tmp_path):
    files = {**GOOD, "essay.md": "Same stem, other suffix."}
    rows = GOOD_ROWS + "essay.md,Clash,2021-01-01,,\n"
    with pytest.raises(SourceError, match=r"doc_id 'local:essay' also produced by 'essay.txt'"):
        LocalFolder(path=str(make_folder(tmp_path / "d", rows=rows, files=files))).load("m")


@pytest.mark.parametrize("missing", ["file", "title", "published"])
def test_missing_column_names_table_and_column(tmp_path, missing):
    cols = ["file", "title", "published", "url", "licence"]
    keep = [i for i, c in enumerate(cols) if c != missing]
    header = ",".join(cols[i] for i in keep) + "\n"
    rows = "".join(",".join(line.split(",")[i] for i in keep) + "\n"
                   for line in GOOD_ROWS.strip().split("\n"))
    folder = make_folder(tmp_path / "docs", rows=rows, header=header)
    for on_error in ("raise", "skip"):
        with pytest.raises(SourceError) as err:
            LocalFolder(path=str(folder), on_error=on_error).load("mine")
        assert f"lacks required column {missing!r}" in str(err.value)
        assert str(folder / "metadata.csv") in str(err.value)


def test_optional_columns_may_be_absent(tmp_path):
    folder = make_folder(tmp_path / "docs", header="file,title,published\n",
                         rows="essay.txt,An essay,2023-05-01\nnotes.md,,2024-11-30\n")
    r = LocalFolder(path=str(folder)).load("mine")
    assert r.corpus["url"].tolist() == ["", ""] and r.corpus["licence"].tolist() == ["", ""]
    assert r.corpus["title"].tolist() == ["An essay", "notes"]  # empty title -> file stem


def test_missing_folder_and_metadata(tmp_path):
    with pytest.raises(SourceError, match="'path'"):
        LocalFolder().load("m")
    with pytest.raises(SourceError, match="is not a folder"):
        LocalFolder(path=str(tmp_path / "nope")).load("m")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="metadata.csv does not exist"):
        LocalFolder(path=str(tmp_path / "empty")).load("m")


@pytest.mark.parametrize("params, key", [
    ({"path": "x", "on_error": "ignore"}, "on_error"),
    ({"path": ""}, "path"),
    ({"path": "x", "metadata": 5}, "metadata"),
    ({"path": "x", "encoding": "latin-1"}, "encoding"),
    ({"path": "x", "limit": 0}, "limit"),
    ({"path": "x", "limit": "3"}, "limit"),
    ({"path": "x", "limit": True}, "limit"),
    ({"path": "x", "sample_seed": 1.5}, "sample_seed"),
])
def test_bad_params_name_the_key(params, key):
    with pytest.raises(SourceError, match=key):
        LocalFolder(**params)


def _numbered(root: Path, n: int, unlisted: int = 0) -> Path:
    files = {f"d{i:02d}.txt": f"Document number {i}." for i in range(1, n + 1 + unlisted)}
    rows = "".join(f"d{i:02d}.txt,Doc {i},2024-01-01,,\n" for i in range(1, n + 1))
    return make_folder(root, rows=rows, files=files)


def test_limit_reads_a_seeded_sample_of_the_rows(tmp_path):
    folder = _numbered(tmp_path / "docs", 10)

    def ids(**params):
        return list(LocalFolder(path=str(folder), **params).load("m").corpus["doc_id"])

    every = [f"local:d{i:02d}" for i in range(1, 11)]
    assert ids() == every and ids(limit=10) == every and ids(limit=50) == every
    four = ids(limit=4)
    assert len(four) == 4 and set(four) <= set(every)
    assert four == sorted(four, key=every.index)  # table order kept
    assert ids(limit=4) == four  # the same seed, the same sample
    assert ids(limit=4, sample_seed=0) == four
    # the rows a sample of 4 reads are those random.Random(seed).sample picks
    want = sorted(random.Random(7).sample(range(1, 11), 4))
    assert ids(limit=4, sample_seed=7) == [f"local:d{i:02d}" for i in want]
    assert LocalFolder.max_documents({"path": str(folder), "limit": 4}) == 4
    assert LocalFolder.max_documents({"path": str(folder), "limit": 40}) == 10
    assert LocalFolder.max_documents({"path": str(folder)}) == 10


def test_limit_leaves_out_listed_rows_without_calling_them_unlisted(tmp_path):
    folder = _numbered(tmp_path / "docs", 6)
    r = LocalFolder(path=str(folder), limit=2).load("m")
    assert len(r.corpus) == 2 and len(r.skipped) == 0
    # a file without a row is still an error with a limit
    folder = _numbered(tmp_path / "more", 6, unlisted=1)
    with pytest.raises(SourceError, match="d07.txt"):
        LocalFolder(path=str(folder), limit=2).load("m")
