"""The cnxml reader on the real CNXML subset of two books (../shared/fixtures/openstax_cnxml)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from copyprobe.sources import SourceError, build_source

AP_UUID = "14fb4ad7-39a1-4eee-ab6e-3ef2482e3e22"
PY_UUID = "8d08a72f-5463-4856-b05c-58b0d65f5e61"


def spec(*books, **over):
    return {"kind": "openstax", "reader": "cnxml", "books": list(books), **over}


def ap(root: Path, **over):
    return {"path": str(root / "osbooks-anatomy-physiology"), "published": "2013-04-25", **over}


def py(root: Path, **over):
    return {"path": str(root / "osbooks-introduction-python-programming"),
            "published": "2024-03-01", **over}


def load(s):
    return build_source("oer", s).load("oer")


@pytest.fixture(scope="module")
def both(cnxml_fixtures):
    return load(spec(ap(cnxml_fixtures), py(cnxml_fixtures)))


def module_title(root: Path, book: str, module: str) -> str:
    doc = etree.parse(str(root / book / "modules" / module / "index.cnxml"))
    return " ".join(doc.findtext("{http://cnx.rice.edu/cnxml}title").split())


def test_both_books_parse_to_numbered_sections_with_their_titles(both, cnxml_fixtures):
    titles = list(both.corpus["title"])
    # A&P: 5 chapters in two units (numbering runs across units), 28 numbered sections here
    ap_titles = [t for t in titles if t.startswith("Anatomy and Physiology ")]
    assert len(ap_titles) == 28
    assert ap_titles[:2] == ["Anatomy and Physiology 1.1 Overview of Anatomy and Physiology",
                             "Anatomy and Physiology 1.2 Structural Organization of the "
                             "Human Body"]
    assert ap_titles[-1] == ("Anatomy and Physiology 5.4 Diseases, Disorders, and Injuries of "
                             "the Integumentary System")
    # titles come from the module files (m46060 opens chapter 5 after its introduction)
    assert ("Anatomy and Physiology 5.1 "
            + module_title(cnxml_fixtures, "osbooks-anatomy-physiology", "m46060")) in titles
    py_titles = [t for t in titles if t.startswith("Introduction to Python Programming ")]
    assert len(py_titles) == 9 + 9 + 6 + 8
    assert "Introduction to Python Programming 2.6 The math module" in py_titles
    assert py_titles[-1] == "Introduction to Python Programming 4.8 Chapter summary"
    sections = [json.loads(p)["section_id"] for p in both.corpus["provenance"]]
    assert sections[:8] == ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "2.1"]


def test_rows_carry_book_date_licence_url_and_page_ids(both):
    c = both.corpus.set_index("title")
    row = c.loc["Anatomy and Physiology 1.1 Overview of Anatomy and Physiology"]
    assert row["published"] == dt.date(2013, 4, 25)
    assert row["date_basis"] == "book publication date (given in config)"
    assert row["licence"] == "CC-BY-4.0"
    assert row["url"] == ("https://openstax.org/books/anatomy-and-physiology/pages/"
                          "1-1-overview-of-anatomy-and-physiology")
    assert row["page_id"] == f"{AP_UUID}:ada35081-9ec4-4eb8-98b2-3ce350d5427f"
    assert row["revision_id"] == ""  # a plain folder has no commit
    prov = json.loads(row["provenance"])
    assert prov["reader"] == "cnxml" and prov["book_uuid"] == AP_UUID
    assert (prov["module"], prov["chapter"], prov["chapter_title"]) == (
        "m45983", 1, "An Introduction to the Human Body")
    assert row["text"].startswith("Overview of Anatomy and Physiology\nHuman anatomy is the "
                                  "scientific study of the body’s structures.")
    py_row = c.loc["Introduction to Python Programming 1.8 Why Python?"]
    assert py_row["url"] == ("https://openstax.org/books/introduction-python-programming/pages/"
                             "1-8-why-python")
    assert py_row["published"] == dt.date(2024, 3, 1)
    assert json.loads(py_row["provenance"])["book_uuid"] == PY_UUID


def test_dropped_elements_are_absent(both):
    c = both.corpus.set_index("title")["text"]
    overview = c["Anatomy and Physiology 1.1 Overview of Anatomy and Physiology"]
    assert "Gross anatomy is the study of the larger structures" in overview
    # "(<link target-id=.../> <emphasis>a</emphasis>)": the empty reference leaves no space
    assert "magnification (a). Macro-" in overview and "  " not in overview
    for gone in ("Which of the following specialties",  # exercise
                 "WriterHound",  # figure caption
                 "science that studies the form and composition",  # glossary
                 "Chapter Review", "CRITICAL THINKING"):  # end-of-section material
        assert gone not in overview, gone
    math = c["Introduction to Python Programming 2.6 The math module"]
    assert "The quadratic formula provides a quick and easy way" in math
    for gone in ("2.71828", "π", "−b", "±"):  # MathML and the table holding constants
        assert gone not in math, gone
    io = c["Introduction to Python Programming 1.2 Input/output"]
    assert "I shall be telling this with a sigh\nSomewhere ages and ages hence:" in io
    assert "Displaying output to the user" not in io  # a note holding only a video


def test_unnumbered_and_missing_modules_are_skipped_with_their_reason(both, cnxml_fixtures):
    reasons = dict(zip(both.skipped["ref"], both.skipped["reason"]))
    assert reasons["anatomy-and-physiology: m46844 (Preface)"] == (
        "not a numbered section (sections: numbered)")
    assert reasons["anatomy-and-physiology: m45981 (Introduction)"] == (
        "not a numbered section (sections: numbered)")
    missing = cnxml_fixtures / "osbooks-anatomy-physiology" / "modules/m46290/index.cnxml"
    assert not missing.exists()
    assert any(r == f"{missing}: listed in the collection but not in the repository"
               for r in reasons.values())
    every = load(spec(ap(cnxml_fixtures), sections="all"))
    t = every.corpus.set_index("title")
    assert t.loc["Anatomy and Physiology Introduction", "url"].iloc[0].endswith(
        "/pages/1-introduction")
    assert len(every.corpus) == 28 + 1 + 5  # the preface and five introductions


def test_bad_xml_is_reported_with_the_file(cnxml_fixtures, tmp_path):
    root = tmp_path / "osbooks-anatomy-physiology"
    shutil.copytree(cnxml_fixtures / "osbooks-anatomy-physiology", root)
    bad = root / "modules" / "m45985" / "index.cnxml"
    bad.write_text(bad.read_text()[:2000])  # cut short: unclosed elements
    r = load(spec(ap(tmp_path)))
    reason = r.skipped.set_index("ref")["reason"]["anatomy-and-physiology: m45985 (m45985)"]
    assert reason.startswith(f"{bad}: not well-formed XML (")
    assert len(r.corpus) == 27
    col = root / "collections" / "anatomy-and-physiology.collection.xml"
    col.write_text("<col:collection")
    with pytest.raises(SourceError, match=rf"books\[0\] .*{col}: not well-formed XML"):
        load(spec(ap(tmp_path)))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.org", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_git_clone_is_read_at_the_pinned_commit(cnxml_fixtures, tmp_path):
    repo = tmp_path / "osbooks-anatomy-physiology"
    shutil.copytree(cnxml_fixtures / "osbooks-anatomy-physiology", repo)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    first = git(repo, "rev-parse", "HEAD")
    col = repo / "collections" / "anatomy-and-physiology.collection.xml"
    col.write_text(col.read_text().replace("licenses/by/4.0", "licenses/by-nc-sa/4.0"))
    mod = repo / "modules" / "m45983" / "index.cnxml"
    mod.write_text(mod.read_text().replace("<title>Overview of Anatomy and Physiology",
                                           "<title>Overview, Second Edition"))
    git(repo, "commit", "-qam", "relicensed")
    second = git(repo, "rev-parse", "HEAD")
    mod.write_text(mod.read_text().replace("Second Edition", "Uncommitted"))  # work tree only

    old = load(spec(ap(tmp_path, version=first[:7])))
    row = old.corpus.iloc[0]
    assert row["title"] == "Anatomy and Physiology 1.1 Overview of Anatomy and Physiology"
    assert (row["licence"], row["revision_id"]) == ("CC-BY-4.0", first)
    assert json.loads(row["provenance"])["version"] == first
    new = load(spec(ap(tmp_path, version=second)))
    row = new.corpus.iloc[0]
    assert row["title"] == "Anatomy and Physiology 1.1 Overview, Second Edition"
    assert (row["licence"], row["revision_id"]) == ("CC-BY-NC-SA-4.0", second)
    assert old.corpus["doc_id"].iloc[0] != row["doc_id"]  # another version, another document
    with pytest.raises(SourceError, match=rf"{repo} is not a git clone holding commit 'f00ba4'"):
        load(spec(ap(tmp_path, version="f00ba4")))


def test_limit_takes_a_seeded_sample_per_book_in_book_order(cnxml_fixtures):
    a = load(spec(ap(cnxml_fixtures), py(cnxml_fixtures), limit=3, sample_seed=5))
    b = load(spec(ap(cnxml_fixtures), py(cnxml_fixtures), limit=3, sample_seed=5))
    assert list(a.corpus["doc_id"]) == list(b.corpus["doc_id"])
    assert len(a.corpus) == 6
    for book in ("Anatomy", "Introduction"):
        ids = [json.loads(p)["section_id"] for t, p in zip(a.corpus["title"],
                                                            a.corpus["provenance"])
               if t.startswith(book)]
        keys = [tuple(map(int, s.split("."))) for s in ids]
        assert len(ids) == 3 and keys == sorted(keys)


@pytest.mark.parametrize(("book", "message"), [
    ({"path": "/nonexistent/osbooks"}, r"books\[0\]: the cnxml reader needs 'published'"),
    ({"published": "2013-04-25"}, r"books\[0\]: the cnxml reader needs 'path'"),
    ({"path": "/nonexistent/osbooks", "published": "2013-04-25"},
     r"books\[0\] \(/nonexistent/osbooks\): path /nonexistent/osbooks is not a folder"),
    ({"path": "x", "published": "25.4.2013"}, r"books\[0\]\.published: not a date"),
    ({"path": "x", "published": "2013-04-25", "commit": "a"}, r"unknown key\(s\) \['commit'\]"),
])
def test_bad_book_entries_are_named(book, message):
    with pytest.raises(SourceError, match=message):
        load(spec(book))


def test_a_slug_the_repository_lacks_names_the_books_it_has(cnxml_fixtures):
    with pytest.raises(SourceError, match=r"no such book in .*books\.xml \(it lists "
                                          r"\['anatomy-and-physiology'\]\)"):
        load(spec(ap(cnxml_fixtures, slug="biology-2e")))
