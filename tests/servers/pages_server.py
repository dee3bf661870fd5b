"""A loopback web server serving pages the tests write (stdlib only).

``PagesServer().page(path, body, status=200, content_type="text/html; charset=utf-8",
headers=None)`` registers an answer; any other path answers 404. ``fail_next(path, status, n=1,
retry_after="0")`` makes the next ``n`` requests for ``path`` answer ``status`` (with a
``Retry-After``) before the page is served. ``redirect(path, to)`` answers 301. Every request is
recorded in ``hits`` as (path, User-Agent).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# the shared start/stop plumbing next to this file (the tests folder is not a package, so the
# servers are loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402


class PagesServer(ServerThread):
    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, str, bytes, dict[str, str]]] = {}
        self.faults: dict[str, list[tuple[int, str]]] = {}
        self.hits: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ scripting
    def page(self, path: str, body: str | bytes, *, status: int = 200,
             content_type: str = "text/html; charset=utf-8",
             headers: dict[str, str] | None = None) -> str:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.pages[path] = (status, content_type, data, dict(headers or {}))
        return self.url + path

    def redirect(self, path: str, to: str) -> str:
        self.pages[path] = (301, "text/html", b"", {"Location": to})
        return self.url + path

    def fail_next(self, path: str, status: int, n: int = 1, retry_after: str = "0") -> None:
        self.faults.setdefault(path, []).extend([(status, retry_after)] * n)

    def count(self, path: str) -> int:
        return Counter(p for p, _ in self.hits)[path]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    # ------------------------------------------------------------------ serving
    def _make_server(self) -> ThreadingHTTPServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, ctype: str, data: bytes,
                      headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with outer._lock:
                    outer.hits.append((self.path, self.headers.get("User-Agent", "")))
                    queue = outer.faults.get(self.path)
                    fault = queue.pop(0) if queue else None
                if fault is not None:
                    status, retry_after = fault
                    self._send(status, "text/plain", b"busy", {"Retry-After": retry_after})
                    return
                if self.path not in outer.pages:
                    self._send(404, "text/html", b"<html><body>Not found</body></html>", {})
                    return
                status, ctype, data, headers = outer.pages[self.path]
                self._send(status, ctype, data, headers)

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)
