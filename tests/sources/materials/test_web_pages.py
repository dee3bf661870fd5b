"""Web pages from a URL list, fetched from a loopback server that serves pages the tests write."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SourceError, build_source, source_input_files

UA = "copyprobe-test/0 (tests@example.org)"
BODY = ("The council approved the new harbour plan on Tuesday after a long debate about costs, "
        "jobs and the environment, and the mayor said work would start in the spring. ")

NEWS = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Harbour plan approved | Example News</title>
<meta name="author" content="Jane Reporter">
<meta property="article:published_time" content="2024-03-05T10:00:00Z">
<meta property="og:site_name" content="Example News">
</head><body>
<nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a></nav>
<article><h1>Harbour plan approved</h1>
<p>{BODY * 3}</p>
<p>"We are pleased," said the mayor, who has backed the plan since 2021. {BODY}</p>
</article>
<footer><p>&copy; 2024 Example News Ltd. All rights reserved.</p><a href="/terms">Terms</a></footer>
</body></html>"""

DOCS = f"""<html><head><title>Installing Widget — Widget 2.1 documentation</title></head>
<body><div class="sidebar"><ul><li><a href="/">Contents</a></li><li>Search</li></ul></div>
<main><h1>Installing Widget</h1>
<p>Widget is installed with pip. {BODY}</p>
<pre>pip install widget</pre>
<p>To build the documentation, install the docs extra and run the build script. {BODY}</p>
<ul><li>Python 3.10 or later</li><li>A C compiler for the optional speedups</li></ul>
</main>
<div class="footer">&copy; Copyright 2018-2024, The Widget Developers.
Created using Sphinx 7.2.</div></body></html>"""

# Unclosed paragraphs and divs, stray closing tags, no </body></html>.
MALFORMED = f"""<html><head><title>Broken but readable</title></head><body>
<div><p>{BODY}<p>{BODY}<b>bold <i>and italic</div></span>
<p>A third paragraph that never closes. {BODY}"""

NO_TEXT = """<html><head><title>Menu</title></head><body>
<nav><a href="/a">A</a> <a href="/b">B</a></nav><div><a href="/login">Log in</a></div>
</body></html>"""

META_RIGHTS = f"""<html><head><title>Licensed story</title>
<meta name="copyright" content="Copyright 2023 Meta Holder GmbH"></head>
<body><article><p>{BODY * 4}</p></article>
<footer>© 2001 Someone Else</footer></body></html>"""


def serve(server, *paths: str) -> list[str]:
    pages = {"/news/harbour": NEWS, "/docs/install": DOCS, "/broken": MALFORMED,
             "/menu": NO_TEXT, "/meta": META_RIGHTS}
    out = []
    for p in paths:
        if p in pages:
            out.append(server.page(p, pages[p]))
        else:
            out.append(server.url + p)
    return out


def load(urls, **params):
    spec = {"kind": "web_pages", "urls": urls, "user_agent": UA,
            "max_requests_per_second": 1000, **params}
    return build_source("pages", spec).load("pages")


def test_news_page_text_metadata_and_copyright_footer(pages_server):
    [url] = serve(pages_server, "/news/harbour")
    r = load([url], category="news")
    assert len(r.skipped) == 0
    row = r.corpus.iloc[0]
    assert row["title"] == "Harbour plan approved"
    assert row["text"].startswith("Harbour plan approved\nThe council approved")
    assert "Home" not in row["text"] and "Terms" not in row["text"]  # boilerplate dropped
    assert "©" not in row["text"]
    assert row["published"] == dt.date(2024, 3, 5)
    assert row["date_basis"].startswith("page metadata")
    assert (row["rights_holder"], row["rights_year"]) == ("Example News Ltd.", 2024)
    assert row["rights_notice"] == "© 2024 Example News Ltd. All rights reserved."
    assert (row["category"], row["url"], row["page_id"]) == ("news", url, url)
    prov = json.loads(row["provenance"])
    assert (prov["author"], prov["sitename"], prov["rights_basis"]) == (
        "Jane Reporter", "Example News", "page text")
    assert prov["status"] == 200 and prov["from_cache"] is False
    assert len(row["revision_id"]) == 64 and row["revision_timestamp"] is not None
    # robots.txt (absent: everything allowed) is asked first; both are sent with our User-Agent
    assert pages_server.hits == [("/robots.txt", UA), ("/news/harbour", UA)]
    to_table(r.corpus, CORPUS)


def test_documentation_page_without_date(pages_server):
    [url] = serve(pages_server, "/docs/install")
    row = load([url], category="code").corpus.iloc[0]
    assert row["title"] == "Installing Widget"  # the page heading
    assert "pip install widget" in row["text"] and "Contents" not in row["text"]
    assert pd_isna(row["published"])
    assert row["date_basis"] == "none: the page's metadata gives no date"
    assert (row["rights_holder"], row["rights_year"]) == ("The Widget Developers", 2018)


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_malformed_html_still_gives_its_text(pages_server):
    [url] = serve(pages_server, "/broken")
    r = load([url])
    assert len(r.skipped) == 0
    text = r.corpus["text"].item()
    assert text.count("The council approved") == 3
    assert "A third paragraph that never closes." in text
    assert r.corpus["title"].item() == "Broken but readable"
    assert r.corpus["category"].item() == "web"  # the default category


def test_meta_copyright_wins_over_the_footer(pages_server):
    [url] = serve(pages_server, "/meta")
    row = load([url]).corpus.iloc[0]
    assert (row["rights_holder"], row["rights_year"]) == ("Meta Holder GmbH", 2023)
    assert json.loads(row["provenance"])["rights_basis"] == '<meta name="copyright">'


def test_failures_are_skipped_with_url_and_reason(pages_server):
    good, menu, missing = serve(pages_server, "/news/harbour", "/menu", "/missing")
    data = pages_server.page("/data.json", '{"a": 1}', content_type="application/json")
    r = load([good, menu, missing, data])
    assert r.corpus["url"].tolist() == [good]
    reasons = dict(zip(r.skipped["ref"], r.skipped["reason"]))
    assert reasons == {
        menu: "main text has 4 words, fewer than min_words=50",
        missing: "HTTP 404 Not Found",
        data: "not an HTML page (Content-Type application/json)",
    }


def test_page_without_any_text(pages_server):
    url = pages_server.page("/blank", "<html><head><title>x</title></head><body></body></html>")
    r = load([url])
    assert r.skipped["reason"].tolist() == ["no main text found"]
    assert load([url], min_words=0).skipped["reason"].tolist() == ["no main text found"]


def test_503_once_is_retried(pages_server):
    [url] = serve(pages_server, "/news/harbour")
    pages_server.fail_next("/news/harbour", 503)
    r = load([url])
    assert len(r.corpus) == 1 and len(r.skipped) == 0
    assert pages_server.count("/news/harbour") == 2


def test_retries_spent_is_a_skip_naming_url_status_and_attempts(pages_server):
    [url] = serve(pages_server, "/news/harbour")
    pages_server.fail_next("/news/harbour", 503, n=5)
    r = load([url], max_retries=2)
    assert len(r.corpus) == 0
    reason = r.skipped["reason"].item()
    assert url in reason and "HTTP 503" in reason and "3 attempt(s)" in reason
    assert pages_server.count("/news/harbour") == 3


def test_on_error_raise_stops_at_the_first_failure(pages_server):
    [missing] = serve(pages_server, "/missing")
    with pytest.raises(SourceError, match=rf"source web_pages: {missing}: HTTP 404"):
        load([missing], on_error="raise")


def test_cache_dir_answers_a_rerun_without_requests(pages_server, tmp_path):
    [url] = serve(pages_server, "/news/harbour")
    first = load([url], cache_dir=str(tmp_path / "cache")).corpus.iloc[0]
    second = load([url], cache_dir=str(tmp_path / "cache")).corpus.iloc[0]
    assert pages_server.count("/news/harbour") == 1
    assert json.loads(second["provenance"])["from_cache"] is True
    assert second["text"] == first["text"]
    assert second["revision_timestamp"] == first["revision_timestamp"]  # the answer's Date


def test_duplicates_and_redirects_to_the_same_page(pages_server):
    [url] = serve(pages_server, "/news/harbour")
    alias = pages_server.redirect("/old/harbour", "/news/harbour")
    r = load([url, alias, url])
    assert r.corpus["url"].tolist() == [url]
    reasons = r.skipped["reason"].tolist()
    assert reasons[0] == "listed twice (param 'urls'[0] and param 'urls'[2])"
    assert reasons[1] == f"the same page as {url} ({url})"


def test_url_file_one_per_line(pages_server, tmp_path):
    urls = serve(pages_server, "/news/harbour", "/docs/install")
    f = tmp_path / "urls.txt"
    f.write_text(f"# my pages\n{urls[0]}\n\n  {urls[1]}  \n")
    r = load(str(f))
    assert r.corpus["url"].tolist() == urls
    assert json.loads(r.corpus["provenance"].iloc[1])["listed"] == f"URL list {f} line 4"
    assert source_input_files({"kind": "web_pages", "urls": str(f), "user_agent": UA}) == [str(f)]
    assert source_input_files({"kind": "web_pages", "urls": urls, "user_agent": UA}) == []


def test_url_csv_with_category_and_rights_columns(pages_server, tmp_path):
    news, docs = serve(pages_server, "/news/harbour", "/docs/install")
    f = tmp_path / "pages.csv"
    f.write_text("url,category,holder,year,notice,published\n"
                 f"{news},news,Harbour Times,2023,© 2023 Harbour Times,\n"
                 f"{docs},code,,,,2024-01-15\n")
    c = load(str(f)).corpus.set_index("url")
    n = c.loc[news]
    assert (n["category"], n["rights_holder"], n["rights_year"], n["rights_notice"]) == (
        "news", "Harbour Times", 2023, "© 2023 Harbour Times")
    assert json.loads(c.loc[news, "provenance"])["rights_basis"].endswith("row 1 (line 2)")
    assert c.loc[news, "published"] == dt.date(2024, 3, 5)  # the page's own date
    assert c.loc[docs, "category"] == "code"
    assert c.loc[docs, "published"] == dt.date(2024, 1, 15)
    assert "column published" in c.loc[docs, "date_basis"]
    assert c.loc[docs, "rights_holder"] == "The Widget Developers"  # from the page


def test_inline_mappings(pages_server):
    [url] = serve(pages_server, "/docs/install")
    row = load([{"url": url, "category": "code", "title": "Install guide"}]).corpus.iloc[0]
    assert (row["category"], row["title"]) == ("code", "Install guide")


def test_limit_fetches_only_the_sample(pages_server):
    urls = serve(pages_server, "/news/harbour", "/docs/install", "/broken", "/meta")
    r = load(urls, limit=2, sample_seed=None)
    assert r.corpus["url"].tolist() == urls[:2]
    assert [p for p, _ in pages_server.hits] == ["/robots.txt", "/news/harbour", "/docs/install"]


def test_robots_txt_disallow_is_a_skip(pages_server):
    news, docs = serve(pages_server, "/news/harbour", "/docs/install")
    pages_server.page("/robots.txt", "User-agent: *\nDisallow: /docs/\n",
                      content_type="text/plain")
    r = load([news, docs])
    assert r.corpus["url"].tolist() == [news]
    assert r.skipped["reason"].item() == (f"disallowed by {pages_server.url}/robots.txt for user "
                                          f"agent {UA!r}")
    assert pages_server.count("/docs/install") == 0 and pages_server.count("/robots.txt") == 1
    assert len(load([news, docs], respect_robots=False).corpus) == 2


def test_robots_txt_unreachable_means_the_site_is_not_crawled(pages_server):
    [news] = serve(pages_server, "/news/harbour")
    pages_server.fail_next("/robots.txt", 503, n=3)
    r = load([news], max_retries=2)
    assert len(r.corpus) == 0 and pages_server.count("/news/harbour") == 0
    assert r.skipped["reason"].item().startswith("robots.txt unreachable (GET ")
    assert "the site is not crawled" in r.skipped["reason"].item()


@pytest.mark.parametrize("content, match", [
    ("http://ok.example/a\nftp://files.example/b\n", r"urls.txt line 2: 'ftp://files.example/b' "
                                                     r"is not an http\(s\) URL with a host"),
    ("# only a comment\n", r"lists no URL"),
])
def test_bad_url_file_names_file_and_line(tmp_path, content, match):
    f = tmp_path / "urls.txt"
    f.write_text(content)
    with pytest.raises(SourceError, match=match):
        load(str(f))


@pytest.mark.parametrize("csv, match", [
    ("link\nhttp://a.example/\n", r"lacks the column 'url'"),
    ("url,year\nhttp://a.example/,19x\n", r"row 1 \(line 2\): year '19x' is not a four-digit"),
    ("url,published\nhttp://a.example/,soon\n", r"row 1 \(line 2\): Invalid isoformat"),
])
def test_bad_url_csv_names_row(tmp_path, csv, match):
    f = tmp_path / "pages.csv"
    f.write_text(csv)
    with pytest.raises(SourceError, match=match):
        load(str(f))


@pytest.mark.parametrize("params, match", [
    ({"urls": ["http://a.example/"], "user_agent": ""}, r"'user_agent' is required"),
    ({"urls": "http://a.example/"}, r"is a URL: give a list of URLs"),
    ({"urls": ["a.example/x"]}, r"param 'urls'\[0\]: 'a.example/x' is not an http\(s\) URL"),
    ({"urls": [{"url": "http://a.example/", "holdr": "x"}]}, r"unknown key\(s\) \['holdr'\]"),
    ({"urls": []}, r"param 'urls' is an empty list"),
    ({"urls": str(Path("/nonexistent/urls.txt"))}, r"URL list /nonexistent/urls.txt does not"),
    ({"urls": ["http://a.example/"], "max_requests_per_second": 0}, r"must be a positive"),
    ({"urls": ["http://a.example/"], "on_error": "ignore"}, r"'on_error' = 'ignore' must be one"),
])
def test_bad_params_and_lists(params, match):
    spec = {"kind": "web_pages", "user_agent": UA, **params}
    with pytest.raises(SourceError, match=match):
        build_source("pages", spec).load("pages")
