"""The fault proxy (tests/servers/fault_proxy.py) in front of a real loopback HTTP server that
echoes what it received."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_proxy import FaultProxy  # noqa: E402
from server_thread import ServerThread  # noqa: E402


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.server.hits += 1  # type: ignore[attr-defined]
        payload = json.dumps({"method": self.command, "path": self.path, "body": body,
                              "host": self.headers["Host"],
                              "agent": self.headers.get("User-Agent")}).encode()
        self.send_response(201 if "status=201" in self.path else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "echo")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer


class EchoServer(ServerThread):
    def _make_server(self) -> ThreadingHTTPServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
        httpd.hits = 0  # type: ignore[attr-defined]
        httpd.daemon_threads = True
        return httpd

    @property
    def hits(self) -> int:
        return self._httpd.hits  # type: ignore[union-attr]


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with EchoServer() as srv:
        yield srv


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[FaultProxy]:
    with FaultProxy(f"http://127.0.0.1:{echo.server_port}") as p:
        yield p


def test_forwards_get_and_post_unchanged(proxy, echo):
    r = requests.get(proxy.api_url, params={"action": "query", "titles": "A b", "status": 201},
                     headers={"User-Agent": "copyprobe-test/0"}, timeout=10)
    assert r.status_code == 201 and r.headers["X-Upstream"] == "echo"
    got = r.json()
    assert got["method"] == "GET"
    assert got["path"] == "/api.php?action=query&titles=A+b&status=201"
    assert got["host"] == f"127.0.0.1:{echo.server_port}"
    assert got["agent"] == "copyprobe-test/0"
    r = requests.post(proxy.base_url + "/index.php", data={"x": "1"}, timeout=10)
    assert r.json()["method"] == "POST" and r.json()["body"] == "x=1"
    assert (proxy.received, proxy.forwarded, echo.hits) == (2, 2, 2)
    assert [entry[2] for entry in proxy.log] == ["forwarded", "forwarded"]


def test_upstream_path_prefix(echo):
    with FaultProxy(f"http://127.0.0.1:{echo.server_port}/w/") as p:
        assert requests.get(p.api_url, timeout=10).json()["path"] == "/w/api.php"


@pytest.mark.parametrize(("kind", "opts", "status", "retry_after"), [
    ("429", {"retry_after": 3}, 429, "3"),
    ("429", {}, 429, "1"),
    ("503", {"retry_after": 2}, 503, "2"),
    ("503", {}, 503, None),
    ("500", {}, 500, None),
])
def test_status_faults_for_the_next_n_requests(proxy, echo, kind, opts, status, retry_after):
    proxy.fail_next(kind, n=2, **opts)
    for _ in range(2):
        r = requests.get(proxy.api_url, timeout=10)
        assert r.status_code == status
        assert r.headers.get("Retry-After") == retry_after
    assert requests.get(proxy.api_url, timeout=10).status_code == 200
    assert (proxy.received, proxy.forwarded, proxy.faults_served, echo.hits) == (3, 1, 2, 1)
    assert proxy.pending_faults == 0


def test_drop_closes_without_an_answer(proxy, echo):
    proxy.fail_next("drop")
    with pytest.raises(requests.ConnectionError):
        requests.get(proxy.api_url, timeout=10)
    assert requests.get(proxy.api_url, timeout=10).status_code == 200
    assert (proxy.forwarded, echo.hits) == (1, 1)


def test_delay_then_forward(proxy, echo):
    proxy.fail_next("delay", seconds=0.6)
    t0 = time.monotonic()
    assert requests.get(proxy.api_url, timeout=10).status_code == 200
    assert time.monotonic() - t0 >= 0.6
    proxy.fail_next("delay", seconds=5)
    with pytest.raises(requests.Timeout):
        requests.get(proxy.api_url, timeout=0.3)
    assert proxy.log[0][2] == "forwarded" and proxy.faults_served == 2


def test_fail_when_matches_the_decoded_query_or_body(proxy, echo):
    proxy.fail_when("titles=Harrowgate Light", "503", times=2)
    proxy.fail_when("action=edit", "429", times=None, retry_after=7)
    assert proxy.pending_faults == 3
    hit = {"action": "query", "titles": "Harrowgate Light"}
    other = {"action": "query", "titles": "Quenby"}
    statuses = [requests.get(proxy.api_url, params=p, timeout=10).status_code
                for p in (hit, other, hit, hit)]
    assert statuses == [503, 200, 503, 200]
    for _ in range(3):  # times=None: every time, also in a POST body
        r = requests.post(proxy.api_url, data={"action": "edit"}, timeout=10)
        assert (r.status_code, r.headers["Retry-After"]) == (429, "7")
    assert echo.hits == 2
    proxy.clear_faults()
    assert requests.post(proxy.api_url, data={"action": "edit"}, timeout=10).status_code == 200


def test_fail_next_comes_before_fail_when(proxy):
    proxy.fail_when("x=1", "500")
    proxy.fail_next("503")
    assert requests.get(proxy.api_url, params={"x": 1}, timeout=10).status_code == 503
    assert requests.get(proxy.api_url, params={"x": 1}, timeout=10).status_code == 500
    assert requests.get(proxy.api_url, params={"x": 1}, timeout=10).status_code == 200


def test_upstream_down_is_a_bad_gateway_naming_it():
    srv = EchoServer().start()
    url = f"http://127.0.0.1:{srv.server_port}"
    srv.stop()
    with FaultProxy(url) as p:
        r = requests.get(p.api_url, timeout=10)
    assert r.status_code == 502 and url in r.text
    assert (p.received, p.forwarded) == (1, 0)


def test_bad_scripting_is_refused(proxy):
    with pytest.raises(ValueError, match="unknown fault kind 'teapot'"):
        proxy.fail_next("teapot")
    with pytest.raises(TypeError):
        proxy.fail_next("429", retry_afterr=3)
    with pytest.raises(ValueError, match="http:// URL"):
        FaultProxy("https://example.org")


def test_reset_forgets_counts_and_faults(proxy):
    proxy.fail_next("500", n=3)
    requests.get(proxy.api_url, timeout=10)
    proxy.reset()
    assert (proxy.received, proxy.forwarded, proxy.pending_faults, proxy.log) == (0, 0, 0, [])
    assert requests.get(proxy.api_url, timeout=10).status_code == 200
