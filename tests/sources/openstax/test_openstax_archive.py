"""The archive reader against a loopback server speaking the archive's JSON format
(tests/servers/openstax_archive.py; the book is written in conftest.serve_book)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from copyprobe.sources import SourceError, build_source

BOOK = "11111111-2222-4333-8444-555555555555"
UA = "copyprobe-test/0 (tests@example.org)"
PAGE = "https://openstax.org/books/test-biology/pages/"


def spec(server, book=None, **over):
    return {"kind": "openstax", "reader": "archive", "books": [book or {"slug": "test-biology"}],
            "release_url": f"{server.url}/rex/release.json",
            "catalogue_url": f"{server.url}/apps/cms/api/v2/pages/", "user_agent": UA,
            "max_requests_per_second": 1000, **over}


def load(s):
    return build_source("oer", s).load("oer")


def test_release_tree_pages_and_catalogue_give_the_sections(archive_server, cells_page):
    r = load(spec(archive_server, sections="all"))
    c = r.corpus.set_index("title")
    assert list(c.index) == ["Test Biology Preface", "Test Biology Introduction",
                             "Test Biology 1.1 What Cells Are", "Test Biology 2.1 Epithelium",
                             "Test Biology 2.2 Connective Tissue"]
    cells = c.loc["Test Biology 1.1 What Cells Are"]
    assert cells["text"] == cells_page[1]
    assert cells["url"] == PAGE + "1-1-what-cells-are"  # the archive's own slug
    assert c.loc["Test Biology 2.1 Epithelium", "url"] == PAGE + "2-1-epithelium"  # derived
    assert c.loc["Test Biology 2.1 Epithelium", "text"] == ("Epithelium\n"
                                                            "Epithelium covers surfaces.")
    assert cells["licence"] == "CC-BY-NC-SA-4.0"  # the tree's license at this version
    assert cells["published"] == dt.date(2016, 3, 7)  # the catalogue's publish_date
    assert cells["date_basis"] == "book publication date (openstax.org catalogue publish_date)"
    assert cells["page_id"] == f"{BOOK}:00000000-0000-4000-8000-000000000002"
    assert cells["revision_id"] == "abc1234"  # release.json's defaultVersion
    prov = json.loads(cells["provenance"])
    assert (prov["reader"], prov["section_id"], prov["chapter"], prov["chapter_title"]) == (
        "archive", "1.1", 1, "Cells")
    assert prov["read_from"] == (f"{archive_server.url}/apps/archive/20240101.000000/contents/"
                                 f"{BOOK}@abc1234:00000000-0000-4000-8000-000000000002.json")
    # the manifest records the exact version of every document
    assert list(r.manifest["revision_id"].unique()) == ["abc1234"]
    # every request said who is asking
    assert {ua for _, ua in archive_server.requests} == {UA}


def test_malformed_and_empty_pages_are_skipped_naming_the_url(archive_server):
    r = load(spec(archive_server))
    reasons = dict(zip(r.skipped["ref"], r.skipped["reason"]))
    base = archive_server.url + archive_server.pages["Membranes"]
    broken = reasons["test-biology: 00000000-0000-4000-8000-000000000003 (Membranes)"]
    assert broken.startswith(f"{base}: content is not well-formed XHTML (")
    empty = reasons["test-biology: 00000000-0000-4000-8000-000000000004 (Pictures)"]
    assert empty == (f"{archive_server.url}{archive_server.pages['Pictures']}: empty page "
                     "(no text after extraction)")
    assert reasons["test-biology: 00000000-0000-4000-8000-000000000000 (Preface)"] == (
        "not a numbered section (sections: numbered)")
    assert len(r.corpus) == 3  # 1.1, 2.1, 2.2
    # unnumbered pages are not even fetched
    assert archive_server.pages["Preface"] not in archive_server.paths()


def test_a_503_is_retried(archive_server):
    path = archive_server.pages["Connective Tissue"]
    archive_server.fail(path, 503, times=1)
    r = load(spec(archive_server))
    assert "Test Biology 2.2 Connective Tissue" in list(r.corpus["title"])
    assert archive_server.paths().count(path) == 2


def test_configured_uuid_version_and_date_need_no_release_or_catalogue(archive_server):
    book = {"uuid": BOOK, "version": "abc1234", "published": "2017-01-01"}
    r = load(spec(archive_server, book,
                  archive_url=f"{archive_server.url}/apps/archive/20240101.000000"))
    assert set(r.corpus["published"]) == {dt.date(2017, 1, 1)}
    assert set(r.corpus["date_basis"]) == {"book publication date (given in config)"}
    assert set(r.corpus["url"]) >= {PAGE + "1-1-what-cells-are"}  # the tree's slug
    paths = archive_server.paths()
    assert "/rex/release.json" not in paths and "/apps/cms/api/v2/pages/" not in paths


def test_a_cache_dir_makes_the_second_run_ask_nothing(archive_server, tmp_path):
    s = spec(archive_server, cache_dir=str(tmp_path / "cache"))
    first = load(s)
    n = len(archive_server.requests)
    second = load(s)
    assert len(archive_server.requests) == n
    assert list(second.corpus["text"]) == list(first.corpus["text"])


def test_unknown_book_and_missing_user_agent_are_clear_errors(archive_server):
    with pytest.raises(SourceError, match=r"catalogue .* has no book with slug 'no-such-book'"):
        load(spec(archive_server, {"slug": "no-such-book"}))
    other = "99999999-2222-4333-8444-555555555555"
    with pytest.raises(SourceError, match=rf"books\[0\] \({other}\): book {other} is not in "
                                          r".*/rex/release\.json; set 'version'"):
        load(spec(archive_server, {"uuid": other, "published": "2020-01-01"}))
    s = spec(archive_server)
    del s["user_agent"]
    with pytest.raises(SourceError, match="the archive reader needs 'user_agent'"):
        build_source("oer", s)


def test_a_failing_server_stops_the_source_naming_the_url(archive_server):
    from copyprobe.sources.collect import collect

    tree = f"/apps/archive/20240101.000000/contents/{BOOK}@abc1234.json"
    archive_server.fail(tree, 500, times=20)
    s = spec(archive_server)
    s.pop("kind")
    with pytest.raises(SourceError, match=rf"source 'oer': .*{tree}"):
        collect("oer", {"kind": "openstax", **s})


def test_copyprobe_collect_runs_the_archive_reader_from_a_config(archive_server, tmp_path,
                                                                 capsys):
    """The config (schema-checked), the CLI and the three tables, as a user runs it."""
    import yaml

    from copyprobe.artifacts import CORPUS, MANIFEST, read_table
    from copyprobe.cli import main

    source = spec(archive_server, cache_dir=str(tmp_path / "cache"))
    cfg = {"sources": {"oer": source}, "datasets": {"d": ["oer"]},
           "models": {"m": {"backend": "openai", "cutoff": "2024-06-30", "model_id": "x",
                            "api_key_env": "NO_SUCH_KEY_VAR", "api_key_optional": True,
                            "base_url": "http://127.0.0.1:9/v1"}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "oer.parquet"
    assert main(["collect", str(path), "--source", "oer", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["documents"], summary["skipped"]) == (3, 4)
    corpus = read_table(out, CORPUS)
    assert list(corpus["title"]) == ["Test Biology 1.1 What Cells Are",
                                     "Test Biology 2.1 Epithelium",
                                     "Test Biology 2.2 Connective Tissue"]
    manifest = read_table(summary["manifest_file"], MANIFEST)
    assert list(manifest["page_id"]) == list(corpus["page_id"])
    cfg["sources"]["oer"]["books"] = [{"slug": "test-biology", "edition": 2}]
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(SystemExit, match=r"unknown config key 'sources\.oer\.books\.0\.edition' "
                                         r"\(source kind 'openstax'\)"):
        main(["collect", str(path), "--source", "oer", "--out", str(out)])
