"""Source ``wikipedia`` against a real MediaWiki (the ``mediawiki`` fixture: Debian's package
holding tests/servers/wiki_pages.py) and the fault proxy in front of it."""

from __future__ import annotations

import datetime as dt
import json

import mediawiki as mw  # tests/servers, put on sys.path by conftest.py
import pandas as pd
import pytest
import requests

from copyprobe.config import ConfigError, source_spec, validate_config
from copyprobe.sources import SourceError, build_source, source_input_files
from copyprobe.sources.mediawiki_api import MAXLAG, cacheable, maxlag_delay
from copyprobe.sources.wikitext import to_text

CUTOFFS = ["2023-01-01", "2024-06-30"]
ARTICLES = ["Harrowgate Lighthouse", "Veloria moth", "Quenby River Bridge", "Pellham Clockworks",
            "Corrin Valley Railway"]


def utc(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)


class Sleeps(list):
    """Records the waits the polite session asks for instead of sleeping them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def source(api_url, tmp_path, cutoffs=(), sleep=None, **params):
    spec = {"kind": "wikipedia", "api_url": api_url, "cache_dir": str(tmp_path / "cache"),
            "max_requests_per_second": None, **params}
    src = build_source("wiki", spec, cutoffs)
    src.sleep = sleep
    return src


def collect(api_url, tmp_path, cutoffs=(), sleep=None, **params):
    return source(api_url, tmp_path, cutoffs, sleep, **params).load("wiki")


def stable(corpus: pd.DataFrame) -> pd.DataFrame:
    """The corpus without the crawl time, rows in doc_id order."""
    return corpus.drop(columns=["retrieved_at"]).sort_values("doc_id").reset_index(drop=True)


def reasons(result) -> dict[str, str]:
    return dict(zip(result.skipped["ref"], result.skipped["reason"]))


@pytest.fixture(scope="module")
def by_cutoff(mediawiki, wiki_pages, tmp_path_factory):
    """Every page of namespace 0 by title, one row per (page, model cutoff)."""
    return collect(mediawiki.api_url, tmp_path_factory.mktemp("wp"), CUTOFFS,
                   titles=wiki_pages.titles(ns=0) + ["No such page"])


def test_one_row_per_page_and_cutoff_strictly_before(by_cutoff, mediawiki, wiki_pages):
    corpus = by_cutoff.corpus.set_index("doc_id")
    assert sorted(set(corpus["title"])) == sorted(ARTICLES)
    assert len(corpus) == len(ARTICLES) * len(CUTOFFS)
    for title in ARTICLES:
        page_id = mediawiki.page_id(title)
        created = wiki_pages.creation(title)
        for cutoff in CUTOFFS:
            row = corpus.loc[f"wikipedia:{page_id}@{cutoff}"]
            before = wiki_pages.revision_before(title, utc(cutoff))
            # created on/after the cutoff: the latest text (D_post material for that model)
            rev = before if created < utc(cutoff) else wiki_pages.page(title).latest
            assert row["title"] == title
            assert row["page_id"] == str(page_id)
            assert int(row["revision_id"]) == mediawiki.revision_id(title, rev.timestamp)
            assert row["revision_timestamp"] == pd.Timestamp(rev.timestamp)
            assert row["text"] == to_text(rev.text)
            assert row["as_of"] == dt.date.fromisoformat(cutoff)
            assert row["published"] == created.date()
            assert row["date_basis"] == "first revision"
            assert row["url"] == (f"{mediawiki.base_url}/index.php?title="
                                  f"{title.replace(' ', '_')}&oldid={row['revision_id']}")
            assert row["licence"] == mw.RIGHTS_TEXT
            prov = json.loads(row["provenance"])
            assert prov["api_url"] == mediawiki.api_url
            assert prov["mwclient"] == "0.11.0"
            assert prov["revision_before"].startswith("last revision strictly before each")


def test_revision_on_the_cutoff_instant_is_not_taken(by_cutoff, mediawiki):
    """Veloria moth has a revision exactly at 2023-01-01T00:00:00Z: the row for that cutoff
    holds the one before it (rvstart is inclusive; the source asks for T - 1 s)."""
    row = by_cutoff.corpus.set_index("doc_id").loc[
        f"wikipedia:{mediawiki.page_id('Veloria moth')}@2023-01-01"]
    assert row["revision_timestamp"] == pd.Timestamp("2019-05-20T14:00:00Z")
    assert "Conservation" not in row["text"] and "locally scarce" not in row["text"]


def test_exclusions_keep_their_reason(by_cutoff):
    why = reasons(by_cutoff)
    assert why["Harrowgate Light"] == (
        "duplicate: resolves to 'Harrowgate Lighthouse', listed already")
    assert why["Harrowgate lighthouse"].startswith("duplicate: resolves to")
    assert why["No such page"] == "missing page"
    assert why["List of lighthouses in Harrowshire"].startswith("list page")
    assert why["Quenby@2023-01-01"] == "disambiguation page (template 'disambiguation')"
    assert why["Corrin"] == "disambiguation page (category 'Category:Disambiguation pages')"
    for cutoff in CUTOFFS:
        assert why[f"Aldermoor Chapel@{cutoff}"] == "stub: 29 words, fewer than min_words=50"
    assert len(why) == 9


def test_text_is_plain_and_cut_at_references(by_cutoff, wiki_pages):
    rows = by_cutoff.corpus[by_cutoff.corpus["title"] == "Harrowgate Lighthouse"]
    latest_rule = rows[rows["as_of"] == dt.date(2024, 6, 30)].iloc[0]["text"]
    for feature, word in wiki_pages.MARKUP_ONLY_WORDS.items():
        assert word not in latest_rule, feature
    for word in wiki_pages.BODY_WORDS:
        assert word in latest_rule


def test_revision_before_an_instant_and_latest(mediawiki, wiki_pages, tmp_path):
    titles = ["Veloria moth", "Corrin Valley Railway"]
    on = collect(mediawiki.api_url, tmp_path, titles=titles,
                 revision_before="2023-01-01T00:00:00Z")
    assert list(on.corpus["revision_timestamp"]) == [pd.Timestamp("2019-05-20T14:00:00Z")]
    assert list(on.corpus["doc_id"]) == [f"wikipedia:{mediawiki.page_id('Veloria moth')}"]
    assert on.corpus["as_of"].isna().all()
    assert reasons(on) == {"Corrin Valley Railway":
                           "no revision before 2023-01-01T00:00:00+00:00"}
    after = collect(mediawiki.api_url, tmp_path, titles=titles,
                    revision_before="2023-01-01T00:00:01Z")
    assert list(after.corpus["revision_timestamp"]) == [pd.Timestamp("2023-01-01T00:00:00Z")]
    day = collect(mediawiki.api_url, tmp_path, titles=titles, revision_before="2023-01-02")
    assert list(day.corpus["revision_timestamp"]) == [pd.Timestamp("2023-01-01T00:00:00Z")]
    latest = collect(mediawiki.api_url, tmp_path, titles=titles, revision_before="latest")
    assert [int(r) for r in latest.corpus["revision_id"]] == [
        mediawiki.revision_ids(t)[-1] for t in titles]
    assert list(latest.corpus["text"]) == [to_text(wiki_pages.page(t).latest.text)
                                           for t in titles]


def test_a_redirect_alone_resolves_to_its_target(mediawiki, tmp_path):
    result = collect(mediawiki.api_url, tmp_path, titles=["Harrowgate Light"],
                     revision_before="latest")
    assert list(result.corpus["title"]) == ["Harrowgate Lighthouse"]
    assert json.loads(result.corpus["provenance"][0])["requested_title"] == "Harrowgate Light"
    assert result.skipped.empty


def test_params_min_words_and_cut_at(mediawiki, tmp_path):
    stub = collect(mediawiki.api_url, tmp_path, titles=["Aldermoor Chapel"],
                   revision_before="latest", min_words=0)
    assert list(stub.corpus["title"]) == ["Aldermoor Chapel"]
    kw = {"titles": ["Harrowgate Lighthouse"], "revision_before": "latest"}
    nothing_cut = collect(mediawiki.api_url, tmp_path, cut_at="", **kw).corpus["text"][0]
    assert "Lanternkeeper" in nothing_cut  # External links, after References
    history_cut = collect(mediawiki.api_url, tmp_path, cut_at="History", **kw).corpus["text"][0]
    assert history_cut.endswith("on a clear night.")


def test_titles_file_is_read_and_listed_as_input(mediawiki, tmp_path):
    path = tmp_path / "titles.txt"
    path.write_text("# lighthouses and bridges\nQuenby River Bridge\n\n  Veloria moth \n",
                    encoding="utf-8")
    spec = {"kind": "wikipedia", "api_url": mediawiki.api_url, "titles": str(path)}
    assert source_input_files(spec) == [str(path)]
    result = collect(mediawiki.api_url, tmp_path, titles=str(path), revision_before="latest")
    assert list(result.corpus["title"]) == ["Quenby River Bridge", "Veloria moth"]


# --- pages created in a window ----------------------------------------------------------------

WINDOW = {"created_after": "2019-01-01", "created_before": "2025-03-01T07:00:00Z"}


def expected_window(wiki_pages):
    """Articles whose first revision lies in WINDOW (Corrin Valley Railway is created on the
    end instant, which is excluded)."""
    return sorted(wiki_pages.created_between(utc("2019-01-01"), utc("2025-03-01T07:00:00"),
                                             kind="article"))


@pytest.mark.parametrize("discovery", ["auto", "recentchanges", "allpages"])
def test_window_discovery(mediawiki, wiki_pages, tmp_path, discovery):
    result = collect(mediawiki.api_url, tmp_path, revision_before="latest", discovery=discovery,
                     **WINDOW)
    assert sorted(result.corpus["title"]) == expected_window(wiki_pages)
    for row in result.corpus.itertuples():
        assert row.published == wiki_pages.creation(row.title).date()
    # imported pages are never in the creation log: auto falls back to recent changes
    used = "recentchanges" if discovery == "auto" else discovery
    assert {json.loads(p)["selected_by"] for p in result.corpus["provenance"]} == {used}
    # the redirect created in the window is found and excluded with its reason
    assert reasons(result)["Harrowgate lighthouse"] == "redirect"


def test_window_logevents_only_finds_no_imported_page(mediawiki, tmp_path):
    result = collect(mediawiki.api_url, tmp_path, revision_before="latest",
                     discovery="logevents", **WINDOW)
    assert result.corpus.empty


def test_limit_is_a_seeded_sample(mediawiki, wiki_pages, tmp_path):
    runs = [collect(mediawiki.api_url, tmp_path, revision_before="latest", limit=2,
                    sample_seed=seed, **WINDOW) for seed in (3, 3, 4)]
    first = sorted(runs[0].corpus["title"])
    assert len(first) == 2 and set(first) <= set(expected_window(wiki_pages))
    assert sorted(runs[1].corpus["title"]) == first
    everything = {tuple(sorted(collect(mediawiki.api_url, tmp_path, revision_before="latest",
                                       limit=2, sample_seed=s, **WINDOW).corpus["title"]))
                  for s in range(6)}
    assert len(everything) > 1  # the seed chooses


def test_continuation_gives_the_same_result(mediawiki, wiki_proxy, tmp_path, by_cutoff,
                                            wiki_pages):
    small = collect(wiki_proxy.api_url, tmp_path, CUTOFFS, batch_size=1,
                    titles=wiki_pages.titles(ns=0) + ["No such page"])
    targets = " ".join(t for _, t, _ in wiki_proxy.log)
    assert "clcontinue=" in targets  # categories of a page came in several answers
    pd.testing.assert_frame_equal(
        stable(small.corpus).drop(columns=["url", "provenance"]),
        stable(by_cutoff.corpus).drop(columns=["url", "provenance"]))
    window = collect(wiki_proxy.api_url, tmp_path, revision_before="latest", batch_size=1,
                     discovery="recentchanges", **WINDOW)
    assert "rccontinue=" in " ".join(t for _, t, _ in wiki_proxy.log)
    assert sorted(window.corpus["title"]) == expected_window(wiki_pages)


# --- politeness -------------------------------------------------------------------------------

def test_maxlag_on_every_api_call_and_the_user_agent(wiki_proxy, tmp_path):
    collect(wiki_proxy.api_url, tmp_path, titles=["Veloria moth"], revision_before="latest",
            user_agent="copyprobe-test/0 (tests@example.org)")
    assert len(wiki_proxy.log) >= 4
    for method, target, _ in wiki_proxy.log:
        assert method == "GET" and f"maxlag={MAXLAG}" in target, target


def test_second_collect_is_served_from_the_cache(wiki_proxy, tmp_path, wiki_pages):
    kw = {"titles": wiki_pages.titles(ns=0), "revision_before": "latest"}
    first = collect(wiki_proxy.api_url, tmp_path, **kw)
    asked = wiki_proxy.forwarded
    assert asked > 0
    second = collect(wiki_proxy.api_url, tmp_path, **kw)
    assert wiki_proxy.received == asked  # not one request more
    pd.testing.assert_frame_equal(stable(second.corpus), stable(first.corpus))
    # without the cache the same crawl asks again
    collect(wiki_proxy.api_url, tmp_path, cache_dir=None, **kw)
    assert wiki_proxy.forwarded == 2 * asked


def test_faults_are_retried_and_the_result_is_identical(wiki_proxy, tmp_path, by_cutoff,
                                                         wiki_pages):
    sleeps = Sleeps()
    wiki_proxy.fail_next("429", retry_after=7)
    wiki_proxy.fail_when("prop=revisions", "503", times=2)
    wiki_proxy.fail_when("rvdir=newer", "drop", times=2)
    wiki_proxy.fail_when("pageprops", "500", times=1)
    result = collect(wiki_proxy.api_url, tmp_path, CUTOFFS, sleep=sleeps,
                     titles=wiki_pages.titles(ns=0) + ["No such page"])
    assert wiki_proxy.faults_served == 6 and wiki_proxy.pending_faults == 0
    assert len(sleeps) == 6
    assert 7 <= sleeps[0] <= 7.7  # Retry-After honoured (plus at most 10% jitter)
    pd.testing.assert_frame_equal(
        stable(result.corpus).drop(columns=["url", "provenance"]),
        stable(by_cutoff.corpus).drop(columns=["url", "provenance"]))
    assert reasons(result) == reasons(by_cutoff)


def test_exhausted_retries_name_the_url(wiki_proxy, tmp_path):
    wiki_proxy.fail_when("api.php", "503", times=None)
    sleeps = Sleeps()
    with pytest.raises(SourceError, match=r"api\.php.*HTTP 503 after 3 attempt") as err:
        collect(wiki_proxy.api_url, tmp_path, sleep=sleeps, titles=["Veloria moth"],
                revision_before="latest", max_retries=2)
    assert wiki_proxy.base_url in str(err.value)
    assert len(sleeps) == 2


def test_maxlag_answer_is_waited_for_then_fails_with_the_url(mediawiki, tmp_path):
    """maxlag=-2 makes this one-database wiki refuse every call as lagged (HTTP 200, an error
    ``maxlag`` in the body, headers Retry-After and X-Database-Lag). The polite session sees
    that answer first and retries after Retry-After; mwclient never retries it itself."""
    raw = requests.get(mediawiki.api_url, params={"action": "query", "meta": "siteinfo",
                                                  "format": "json", "maxlag": -2}, timeout=30)
    assert raw.status_code == 200 and raw.json()["error"]["code"] == "maxlag"
    wait = maxlag_delay(raw)
    assert wait == float(raw.headers["Retry-After"]) and wait > 0
    ok = requests.get(mediawiki.api_url, params={"action": "query", "meta": "siteinfo",
                                                 "format": "json", "maxlag": 5}, timeout=30)
    assert maxlag_delay(ok) is None
    assert cacheable(ok) and not cacheable(raw)  # an error answer is never kept
    src = source(mediawiki.api_url, tmp_path, sleep=Sleeps(), titles=["Veloria moth"],
                 revision_before="latest", max_retries=2)
    src.maxlag = -2
    with pytest.raises(SourceError, match=r"api\.php.*asked to retry after 3 attempt"):
        src.load("wiki")
    assert len(src.sleep) == 2 and all(wait <= s <= 1.1 * wait for s in src.sleep)


# --- rerun from a manifest --------------------------------------------------------------------

def test_manifest_refetches_exactly_the_same_texts(by_cutoff, mediawiki, wiki_proxy, tmp_path):
    path = tmp_path / "wiki.manifest.parquet"
    by_cutoff.manifest.to_parquet(path)
    spec = {"kind": "wikipedia", "api_url": wiki_proxy.api_url, "manifest": str(path)}
    assert source_input_files(spec) == [str(path)]
    again = collect(wiki_proxy.api_url, tmp_path, manifest=str(path))
    targets = [t for _, t, _ in wiki_proxy.log]
    assert any("revids=" in t for t in targets)
    assert not any("list=" in t or "titles=" in t for t in targets)  # no discovery
    assert again.skipped.empty
    pd.testing.assert_frame_equal(
        stable(again.corpus).drop(columns=["url", "provenance"]),
        stable(by_cutoff.corpus).drop(columns=["url", "provenance"]))
    assert list(again.manifest["text_sha256"].sort_values()) == list(
        by_cutoff.manifest["text_sha256"].sort_values())


def test_manifest_with_a_bad_revision_id_names_file_and_row(by_cutoff, mediawiki, tmp_path):
    path = tmp_path / "bad.parquet"
    bad = by_cutoff.manifest.copy()
    bad.loc[1, "revision_id"] = "12x"
    bad.to_parquet(path)
    with pytest.raises(SourceError, match=r"bad\.parquet, row 1: revision_id '12x'"):
        collect(mediawiki.api_url, tmp_path, manifest=str(path))


def test_manifest_revision_gone_is_skipped(by_cutoff, mediawiki, tmp_path):
    path = tmp_path / "gone.parquet"
    rows = by_cutoff.manifest.head(2).copy()
    rows.loc[0, "revision_id"] = "999999"
    rows.to_parquet(path)
    result = collect(mediawiki.api_url, tmp_path, manifest=str(path))
    assert len(result.corpus) == 1
    assert reasons(result) == {"revision 999999": "revision not found (deleted or hidden)"}


# --- params checked before any request ----------------------------------------------------------

@pytest.mark.parametrize("api_url", ["https://en.wikipedia.org/w/api.php",
                                     "https://commons.wikimedia.org/w/api.php", None])
def test_user_agent_required_for_wikimedia_hosts(api_url, monkeypatch):
    spec = {"kind": "wikipedia", "titles": ["Oslo"]}
    if api_url:
        spec["api_url"] = api_url
    with pytest.raises(SourceError, match="'user_agent' is required"):
        build_source("wiki", spec)
    build_source("wiki", {**spec, "user_agent": "study/1 (me@example.org)"})  # no request yet
    monkeypatch.setenv("COPYPROBE_USER_AGENT", "env-study/1 (me@example.org)")
    assert build_source("wiki", spec).user_agent == "env-study/1 (me@example.org)"


@pytest.mark.parametrize("params, message", [
    ({}, "exactly one of"),
    ({"titles": ["A"], "manifest": "m.parquet"}, "exactly one of"),
    ({"created_after": "2020-01-01"}, "'created_before' is required"),
    ({"created_after": "2021-01-01", "created_before": "2020-01-01"}, "must be before"),
    ({"titles": ["A"], "revision_before": "soon"}, "'revision_before': not an ISO date"),
    ({"titles": ["A"], "discovery": "guess"}, "'discovery'"),
    ({"titles": ["A"], "maxlag": 3}, r"unknown param\(s\) \['maxlag'\]"),
    ({"titles": ["A"], "api_url": "http://127.0.0.1:9/w/index.php"}, "does not end in api.php"),
    ({"titles": ["A"], "api_url": "ftp://127.0.0.1/api.php"}, "not an http"),
])
def test_bad_params(params, message):
    with pytest.raises(SourceError, match=message):
        build_source("wiki", {"kind": "wikipedia", "api_url": "http://127.0.0.1:9/api.php",
                              **params})


def test_an_api_url_that_is_not_the_api_names_url_and_status(mediawiki, tmp_path):
    url = f"{mediawiki.base_url}/no/such/api.php"
    with pytest.raises(SourceError, match=r"no/such/api\.php.*HTTPError.*404"):
        collect(url, tmp_path, titles=["Veloria moth"], revision_before="latest")


def test_cutoff_rule_without_cutoffs_is_refused(tmp_path):
    src = source("http://127.0.0.1:9/api.php", tmp_path, titles=["A"])
    with pytest.raises(SourceError, match="needs the models' cutoffs"):
        src.load("wiki")


def test_config_block_and_cut_at_reach_the_source(tmp_path):
    cfg = {"sources": {"w": {"kind": "wikipedia", "titles": ["A"], "user_agent": "x (a@b.c)",
                             "cut_at": "Notes"},
                       "w2": {"kind": "wikipedia", "titles": ["A"], "user_agent": "x (a@b.c)"}},
           "datasets": {"d": ["w", "w2"]},
           "models": {"m": {"backend": "openai", "model_id": "x", "cutoff": "2024-01-01"}}}
    try:
        valid = validate_config(cfg)
    except ConfigError as exc:  # the rest of the config is not this test's business
        pytest.fail(f"config rejected: {exc}")
    assert source_spec(valid, "w")["cut_at"] == "Notes"
    assert "cut_at" not in source_spec(valid, "w2")  # null: the source's default
    # the source cut at the heading: the prompt builder does not cut again at the word
    from copyprobe.config import prompt_cut_at

    assert prompt_cut_at(valid, "w") is None
    local = validate_config({**valid, "sources": {**valid["sources"], "l": {
        "kind": "local", "path": "docs", "cut_at": "References"}}})
    assert prompt_cut_at(local, "l") == "References"
    bad = {**cfg, "sources": {**cfg["sources"], "w": {"kind": "wikipedia", "revision": "x"}}}
    with pytest.raises(ConfigError, match="sources.w.revision"):
        validate_config(bad)


# --- through `copyprobe collect` (config file, schema block, model cutoffs) ---------------------

def _config_file(tmp_path, source: dict):
    import yaml

    cfg = {"sources": {"wiki": source}, "datasets": {"d": ["wiki"]},
           "models": {m: {"backend": "openai", "cutoff": c, "model_id": "x",
                          "api_key_env": "NO_SUCH_KEY_VAR", "api_key_optional": True,
                          "base_url": "http://127.0.0.1:9/v1"}
                      for m, c in (("a", CUTOFFS[0]), ("b", CUTOFFS[1]))}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_copyprobe_collect_uses_the_model_cutoffs(mediawiki, tmp_path, capsys, by_cutoff):
    from copyprobe.artifacts import CORPUS, MANIFEST, read_table
    from copyprobe.cli import main

    cfg = _config_file(tmp_path, {"kind": "wikipedia", "api_url": mediawiki.api_url,
                                  "titles": ["Veloria moth", "Quenby"], "cut_at": "References",
                                  "cache_dir": str(tmp_path / "cache")})
    out = tmp_path / "wiki.parquet"
    assert main(["collect", str(cfg), "--source", "wiki", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 2 and summary["skipped"] == 2
    corpus = read_table(out, CORPUS)
    assert sorted(corpus["as_of"].astype(str)) == CUTOFFS
    expected = by_cutoff.corpus[by_cutoff.corpus["title"] == "Veloria moth"]
    assert sorted(corpus["text"]) == sorted(expected["text"])
    assert list(read_table(summary["manifest_file"], MANIFEST)["revision_id"]) == list(
        corpus["revision_id"])


def test_copyprobe_collect_unreachable_api_url_is_one_clear_line(tmp_path, capsys):
    from copyprobe.cli import main

    with socket_closed() as port:
        url = f"http://127.0.0.1:{port}/w/api.php"
        cfg = _config_file(tmp_path, {"kind": "wikipedia", "api_url": url, "titles": ["A"],
                                      "max_retries": 0, "cache_dir": None})
        rc = main(["collect", str(cfg), "--source", "wiki", "--out", str(tmp_path / "o.parquet")])
    message = capsys.readouterr().err
    assert rc == 1 and not (tmp_path / "o.parquet").exists()
    assert message.startswith("copyprobe: source wikipedia: GET ")
    assert url in message and "ConnectionError" in message and "after 1 attempt" in message


class socket_closed:
    """A local port on which nothing listens."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        pass


def test_page_infos_by_id_and_title(mediawiki, tmp_path):
    """The API client describes pages by id without following redirects, and a page id the
    wiki does not know comes back as a missing page."""
    from copyprobe.sources.mediawiki_api import Wiki
    from copyprobe.web import WebSettings

    wiki = Wiki(mediawiki.api_url, WebSettings(user_agent="copyprobe-test/0 (a@b.c)",
                                               max_requests_per_second=None))
    redirect_id = mediawiki.page_id("Harrowgate Light")
    infos, _ = wiki.page_infos(page_ids=[redirect_id, 999999])
    described = {i.title: i for i in infos}
    assert described["Harrowgate Light"].redirect
    assert described["Harrowgate Light"].page_id == redirect_id
    assert described["#999999"].page_id is None
    infos, resolved = wiki.page_infos(titles=["harrowgate Light", "Quenby"])
    assert resolved == {"harrowgate Light": "Harrowgate Lighthouse"}
    assert sorted(i.title for i in infos) == ["Harrowgate Lighthouse", "Quenby"]


def test_a_maxlag_answer_is_waited_for_and_the_crawl_goes_on(mediawiki, wiki_proxy, tmp_path,
                                                             wiki_pages):
    """The wiki itself answers one call as lagged (the proxy sets that call's maxlag to -2):
    the source waits the Retry-After the wiki sent, asks again, and gets the same documents."""
    clean = collect(mediawiki.api_url, tmp_path / "clean", titles=["Veloria moth"],
                    revision_before="latest")
    sleeps = Sleeps()
    wiki_proxy.fail_when("prop=revisions", "maxlag", times=1)
    lagged = collect(wiki_proxy.api_url, tmp_path / "lagged", sleep=sleeps,
                     titles=["Veloria moth"], revision_before="latest")
    assert wiki_proxy.faults_served == 1 and len(sleeps) == 1 and sleeps[0] >= 1
    lagged_rows = [t for _, t, outcome in wiki_proxy.log if outcome == "maxlag"]
    assert len(lagged_rows) == 1 and "maxlag=5" in lagged_rows[0]
    cols = ["title", "page_id", "revision_id", "text"]
    # the same documents (the url names the host asked, so it is left out)
    pd.testing.assert_frame_equal(lagged.corpus[cols], clean.corpus[cols])
