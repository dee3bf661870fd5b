"""A small threaded HTTP proxy on 127.0.0.1 that forwards GET and POST to one upstream URL and
can be scripted to misbehave (stdlib only). Clients talk to it as if it were the upstream
server: ``FaultProxy("http://127.0.0.1:8080").api_url`` is ``http://127.0.0.1:PORT/api.php``.

Faults (``kind``)
    ``"429"``    status 429 with ``Retry-After: <retry_after>`` (seconds, default 1)
    ``"503"``    status 503 (``Retry-After`` when ``retry_after`` is given)
    ``"500"``    status 500
    ``"drop"``   closes the connection without sending any response
    ``"delay"``  waits ``seconds`` (default 5), then forwards the request normally
    ``"maxlag"`` forwards the request with its ``maxlag`` value set to -2, so that the upstream
                 MediaWiki itself answers it with a real maxlag error
A faulted request (other than ``delay`` and ``maxlag``) never reaches the upstream.

Scripting
    ``fail_next(kind, n=1, **opts)`` fails the next ``n`` requests (FIFO);
    ``fail_when(match, kind, times=1, **opts)`` fails requests whose target (path and query,
    percent-decoded) or body contains ``match``, ``times`` times (``None``: every time).
    The ``fail_next`` queue is consulted before the ``fail_when`` rules. ``clear_faults()``
    forgets both.

Counting
    ``forwarded`` is the number of requests answered by the upstream, ``received`` every request
    the proxy read, ``faults_served`` the faults applied; ``log`` lists
    ``(method, target, outcome)`` with outcome ``"forwarded"`` or the fault's kind.

Hop-by-hop headers (Connection, Keep-Alive, Transfer-Encoding, ...) are not forwarded; each
client connection carries one request (HTTP/1.0 style), so a dropped connection affects only
the request it carried.
"""

from __future__ import annotations

import http.client
import re
import sys
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus, urlsplit

# the shared start/stop plumbing next to this file (the tests folder is not a package, so the
# servers are loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

KINDS = ("429", "503", "500", "drop", "delay", "maxlag")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade", "proxy-connection"}


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None = None
    seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(KINDS)}")


def _lagged(target: str) -> str:
    """``target`` with its ``maxlag`` query value set to -2: a MediaWiki on one database then
    answers with a real maxlag error (HTTP 200, Retry-After, X-Database-Lag)."""
    return re.sub(r"([?&]maxlag=)-?\d+", r"\g<1>-2", target)


def _lagged_body(body: bytes) -> bytes:
    return re.sub(rb"(^|&)(maxlag=)-?\d+", rb"\1\2-2", body)


class _Handler(BaseHTTPRequestHandler):
    server: _ProxyHTTPServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = proxy._take_fault(self.path, body)
        outcome = "forwarded" if fault is None or fault.kind == "delay" else fault.kind
        proxy._record(self.command, self.path, outcome, fault)
        if fault is not None and fault.kind == "maxlag":
            # the upstream MediaWiki itself answers this one request as lagged
            self.path = _lagged(self.path)
            self._forward(_lagged_body(body))
            return
        if fault is not None:
            if fault.kind == "drop":
                self.close_connection = True
                return
            if fault.kind == "delay":
                if proxy._stop.wait(fault.seconds):
                    self.close_connection = True
                    return
            else:
                self._send_fault(fault)
                return
        self._forward(body)

    def _send_fault(self, fault: Fault) -> None:
        text = {"429": "Too Many Requests", "503": "Service Unavailable",
                "500": "Internal Server Error"}[fault.kind]
        payload = f"{fault.kind} {text} (fault proxy)\n".encode()
        self.send_response(int(fault.kind))
        default_wait = 1 if fault.kind == "429" else None
        wait = fault.retry_after if fault.retry_after is not None else default_wait
        if wait is not None:
            self.send_header("Retry-After", f"{wait:g}")
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _forward(self, body: bytes) -> None:
        proxy = self.server.proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Host"] = proxy.upstream_netloc
        conn = http.client.HTTPConnection(proxy.upstream_netloc, timeout=proxy.timeout)
        try:
            conn.request(self.command, proxy.upstream_prefix + self.path, body=body or None,
                         headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
            with proxy._lock:
                proxy.forwarded += 1
        except (OSError, http.client.HTTPException) as exc:
            # the upstream did not answer: a gateway error, as a real proxy would send
            payload = f"fault proxy: upstream {proxy.upstream} failed: {exc}\n".encode()
            status, reason = 502, "Bad Gateway"
            resp_headers = [("Content-Type", "text/plain; charset=utf-8")]
        finally:
            conn.close()
        self.send_response(status, reason)
        for name, value in resp_headers:
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _ProxyHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultProxy


class FaultProxy(ServerThread):
    """The proxy in front of ``upstream`` (``http://host:port[/prefix]``)."""

    path = "/"
    scheme = "http"

    def __init__(self, upstream: str, *, timeout: float = 60.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.netloc:
            raise ValueError(f"upstream must be an http:// URL, got {upstream!r}")
        self.upstream = upstream
        self.upstream_netloc = parts.netloc
        self.upstream_prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._queue: deque[Fault] = deque()
        self._when: list[list[Any]] = []
        self.forwarded = 0
        self.received = 0
        self.faults_served = 0
        self.log: list[tuple[str, str, str]] = []

    def _make_server(self) -> _ProxyHTTPServer:
        self._stop.clear()
        httpd = _ProxyHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.proxy = self
        return httpd

    def _stopping(self) -> None:
        self._stop.set()

    # --- addresses ---------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server_port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api.php"

    # --- scripting ---------------------------------------------------------------------------
    def fail_next(self, kind: str, n: int = 1, **opts: Any) -> None:
        """Fail the next ``n`` requests with ``kind`` (``retry_after=``, ``seconds=``)."""
        fault = Fault(kind, **opts)
        with self._lock:
            self._queue.extend([fault] * n)

    def fail_when(self, match: str, kind: str, times: int | None = 1, **opts: Any) -> None:
        """Fail requests whose decoded target or body contains ``match``, ``times`` times
        (``None``: every time)."""
        with self._lock:
            self._when.append([match, Fault(kind, **opts), times])

    def clear_faults(self) -> None:
        with self._lock:
            self._queue.clear()
            self._when.clear()

    def reset(self) -> None:
        """Forget faults and counts."""
        with self._lock:
            self._queue.clear()
            self._when.clear()
            self.forwarded = self.received = self.faults_served = 0
            self.log.clear()

    @property
    def pending_faults(self) -> int:
        """Faults still queued by ``fail_next`` plus the remaining ``fail_when`` uses (a rule
        with ``times=None`` counts once)."""
        with self._lock:
            return len(self._queue) + sum(1 if t is None else t for _, _, t in self._when)

    def _take_fault(self, target: str, body: bytes) -> Fault | None:
        haystack = unquote_plus(target) + "\n" + unquote_plus(body.decode("latin-1"))
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            for rule in self._when:
                match, fault, times = rule
                if match in haystack and (times is None or times > 0):
                    if times is not None:
                        rule[2] = times - 1
                    return fault
        return None

    def _record(self, method: str, target: str, outcome: str, fault: Fault | None) -> None:
        with self._lock:
            self.received += 1
            self.faults_served += fault is not None
            self.log.append((method, target, outcome))
