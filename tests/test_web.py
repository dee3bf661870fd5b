"""The polite HTTP layer against a real loopback server that misbehaves on request."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from copyprobe.web import (
    CACHE_HEADER,
    FetchError,
    RateLimiter,
    WebSettings,
    cache_key,
    polite_session,
    retry_after_seconds,
)


class Server:
    """A loopback server answering JSON; ``faults`` is consumed one per request."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.hits: list[tuple[str, str, str]] = []  # (method, path, user agent)
        self.retry_after = "1"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, body: bytes = b"") -> None:
                outer.hits.append((self.command, self.path, self.headers.get("User-Agent", "")))
                fault = outer.faults.pop(0) if outer.faults else ""
                if fault == "drop":
                    self.close_connection = True
                    return
                if fault in ("429", "503", "500"):
                    self.send_response(int(fault))
                    self.send_header("Retry-After", outer.retry_after)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path.startswith("/missing"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "maxlag":
                    payload = {"error": {"code": "maxlag", "lag": 3}}
                elif self.path.startswith("/notjson"):
                    payload = None
                else:
                    payload = {"path": self.path, "body": body.decode(), "n": len(outer.hits)}
                data = b"<html>oops" if payload is None else json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Set-Cookie", "session=secret")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", 0))
                self._answer(self.rfile.read(n))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def settings(tmp_path, **kw) -> WebSettings:
    base = dict(user_agent="copyprobe-test/0 (test@example.org)", cache_dir=tmp_path / "http",
                max_requests_per_second=None, max_retries=3, backoff_base=0.01,
                backoff_max=0.05, timeout=5)
    base.update(kw)
    return WebSettings(**base)


def test_answers_are_cached_on_disk_and_reused_by_a_new_session(server, tmp_path):
    s = polite_session(settings(tmp_path))
    first = s.get_json(server.url + "/a", params={"b": "2", "a": "1"})
    assert len(server.hits) == 1 and server.hits[0][2] == "copyprobe-test/0 (test@example.org)"
    # Same request with the query in another order, from a fresh session: no request at all.
    s2 = polite_session(settings(tmp_path))
    resp = s2.get(server.url + "/a?a=1&b=2")
    assert resp.headers[CACHE_HEADER] == "hit" and resp.json() == first
    assert len(server.hits) == 1 and s2.stats == {"requests": 0, "cache_hits": 1, "retries": 0}
    # The stored headers keep no cookie.
    stored = list((tmp_path / "http").rglob("*.json"))
    assert len(stored) == 1 and "secret" not in stored[0].read_text()


def test_post_bodies_are_part_of_the_key(server, tmp_path):
    s = polite_session(settings(tmp_path))
    assert s.post(server.url + "/p", data={"q": "1"}).json()["body"] == "q=1"
    assert s.post(server.url + "/p", data={"q": "2"}).json()["body"] == "q=2"
    assert s.post(server.url + "/p", data={"q": "1"}).headers.get(CACHE_HEADER) == "hit"
    assert len(server.hits) == 2
    assert cache_key("GET", "http://h/x?b=1&a=2", None) == cache_key("GET", "http://H/x?a=2&b=1", None)


@pytest.mark.parametrize("fault", ["429", "503", "500", "drop"])
def test_faults_are_retried_and_the_answer_is_the_same(server, tmp_path, fault):
    waits: list[float] = []
    server.faults = [fault, fault]
    s = polite_session(settings(tmp_path), sleep=waits.append)
    data = s.get_json(server.url + "/x")
    assert data["path"] == "/x" and len(server.hits) == 3
    assert s.stats["retries"] == 2 and len(waits) == 2
    if fault == "drop":  # no Retry-After: backoff with jitter, within [step/2, step]
        assert 0.005 <= waits[0] <= 0.01 and 0.01 <= waits[1] <= 0.02
    else:  # the server's Retry-After (1 s) plus at most 10 % jitter
        assert all(1.0 <= w <= 1.1 for w in waits)


def test_retry_after_as_an_http_date(server, tmp_path):
    waits: list[float] = []
    server.faults = ["429"]
    server.retry_after = email.utils.formatdate(time.time() + 30, usegmt=True)
    s = polite_session(settings(tmp_path), sleep=waits.append)
    s.get_json(server.url + "/d")
    assert len(waits) == 1 and 27 <= waits[0] <= 33


def test_spent_retries_raise_a_fetch_error_naming_url_status_attempts(server, tmp_path):
    server.faults = ["503"] * 10
    s = polite_session(settings(tmp_path, max_retries=2), sleep=lambda _: None)
    with pytest.raises(FetchError, match=r"GET http://127\.0\.0\.1:\d+/gone: HTTP 503 after 3 "
                                         r"attempt") as err:
        s.get(server.url + "/gone")
    assert err.value.status == 503 and err.value.attempts == 3 and len(server.hits) == 3
    assert not list((tmp_path / "http").rglob("*.json"))  # nothing cached


def test_a_retry_after_longer_than_allowed_fails_at_once(server, tmp_path):
    server.faults = ["429"]
    server.retry_after = "3600"
    s = polite_session(settings(tmp_path, max_retry_after=60), sleep=lambda _: None)
    with pytest.raises(FetchError, match="asks to wait 3600 s"):
        s.get(server.url + "/slow")
    assert len(server.hits) == 1


def test_application_level_retry_hook_and_uncached_errors(server, tmp_path):
    def maxlag(resp: requests.Response) -> float | None:
        err = resp.json().get("error", {})
        return float(err["lag"]) if err.get("code") == "maxlag" else None

    waits: list[float] = []
    server.faults = ["maxlag"]
    s = polite_session(settings(tmp_path), retry_on=maxlag, sleep=waits.append)
    assert "error" not in s.get_json(server.url + "/api")
    assert len(waits) == 1 and 3.0 <= waits[0] <= 3.3 and len(server.hits) == 2
    # cacheable=False: a fresh session asks again.
    s2 = polite_session(settings(tmp_path / "other"), cacheable=lambda r: False)
    s2.get_json(server.url + "/api")
    s2.get_json(server.url + "/api")
    assert len(server.hits) == 4


def test_client_errors_are_not_retried_or_cached_and_bad_json_names_the_url(server, tmp_path):
    s = polite_session(settings(tmp_path), sleep=lambda _: pytest.fail("no retry for a 404"))
    with pytest.raises(FetchError, match=r"/missing: HTTP 404"):
        s.get_json(server.url + "/missing")
    assert s.get(server.url + "/missing").status_code == 404 and len(server.hits) == 2
    with pytest.raises(FetchError, match=r"/notjson: the answer is not JSON"):
        s.get_json(server.url + "/notjson")


def test_unreachable_host_is_a_fetch_error(tmp_path):
    import socket

    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = polite_session(settings(tmp_path, max_retries=1), sleep=lambda _: None)
    with pytest.raises(FetchError, match=rf"127\.0\.0\.1:{port}/x: ConnectionError.*2 attempt"):
        s.get(f"http://127.0.0.1:{port}/x")


def test_rate_limiter_spaces_requests():
    now = [0.0]
    slept: list[float] = []

    def sleep(d: float) -> None:
        slept.append(d)
        now[0] += d

    lim = RateLimiter(4.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        lim.acquire()
    assert slept == [0.25, 0.25]
    now[0] += 10  # idle time is not banked beyond one interval
    lim.acquire()
    assert slept == [0.25, 0.25]


def test_retry_after_parsing_and_settings_checks():
    assert retry_after_seconds("7") == 7.0 and retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    with pytest.raises(ValueError, match="user_agent"):
        WebSettings(user_agent=" ")
    with pytest.raises(ValueError, match="max_requests_per_second"):
        WebSettings(user_agent="x", max_requests_per_second=0)


def test_user_agent_from_config_else_environment(monkeypatch):
    from copyprobe.web import USER_AGENT_ENV, user_agent, user_agent_required

    assert user_agent(" study/1 (a@b.c) ") == "study/1 (a@b.c)" and user_agent(None) is None
    monkeypatch.setenv(USER_AGENT_ENV, "env/1 (e@b.c)")
    assert user_agent("") == "env/1 (e@b.c)" and user_agent("cfg/1") == "cfg/1"
    assert USER_AGENT_ENV in user_agent_required("wikipedia", " for en.wikipedia.org")


def test_an_entry_cached_by_an_earlier_version_is_still_hit(tmp_path):
    # The two files exactly as ResponseCache wrote them before copyprobe.store: no request is
    # made (nothing listens on the URL's port).
    from copyprobe.web import cache_key

    url = "http://127.0.0.1:9/w/api.php?b=2&a=1"
    key = cache_key("GET", url, None)
    folder = tmp_path / "http" / key[:2]
    folder.mkdir(parents=True)
    (folder / f"{key}.body").write_bytes(b'{"pages": [1]}')
    meta = {"status": 200, "reason": "OK", "url": url, "stored_at": 1.0,
            "headers": {"Content-Type": "application/json"}}
    (folder / f"{key}.json").write_bytes(json.dumps(meta, sort_keys=True).encode("utf-8"))
    s = polite_session(settings(tmp_path, max_retries=0))
    resp = s.get("http://127.0.0.1:9/w/api.php?a=1&b=2")
    assert resp.headers[CACHE_HEADER] == "hit" and resp.json() == {"pages": [1]}
    assert s.stats["requests"] == 0
    # nothing else was written beside the entry
    stored = sorted(p.name for p in folder.iterdir())
    assert stored == [f"{key}.body", f"{key}.json"]
