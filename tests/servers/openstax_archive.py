"""A loopback server in the shape of openstax.org's archive, release file and CMS catalogue
(stdlib only).

Tests put files at paths (``put_json("/rex/release.json", {...})``); ``GET <path>`` answers
them as JSON, anything else 404. The catalogue path (``/apps/cms/api/v2/pages/``) answers
``{"items": [record]}`` for the ``slug`` query parameter of a book added with ``catalogue(slug,
record)``, and ``{"items": []}`` otherwise. ``fail(path, status, times)`` makes the next
``times`` requests for ``path`` fail with ``status`` (``Retry-After: 0``). Every request's path
(with query) and User-Agent are recorded in ``requests``.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

# the shared start/stop plumbing next to this file (the tests folder is not a package, so the
# servers are loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

CATALOGUE_PATH = "/apps/cms/api/v2/pages/"


class ArchiveServer(ServerThread):
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.faults: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def put_json(self, path: str, obj: Any) -> None:
        self.files[path] = json.dumps(obj).encode("utf-8")

    def put_raw(self, path: str, body: bytes) -> None:
        self.files[path] = body

    def catalogue(self, slug: str, record: dict[str, Any]) -> None:
        self.records[slug] = record

    def fail(self, path: str, status: int = 503, times: int = 1) -> None:
        self.faults.setdefault(path, []).extend([status] * times)

    def paths(self) -> list[str]:
        """The paths requested so far, without the query."""
        with self.lock:
            return [urlsplit(p).path for p, _ in self.requests]

    def _make_server(self) -> ThreadingHTTPServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k.replace("_", "-"), v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                parts = urlsplit(self.path)
                with outer.lock:
                    outer.requests.append((self.path, self.headers.get("User-Agent", "")))
                    queued = outer.faults.get(parts.path)
                    status = queued.pop(0) if queued else None
                if status is not None:
                    self._send(status, b'{"error": "scripted"}', Retry_After="0")
                elif parts.path == CATALOGUE_PATH:
                    slug = (parse_qs(parts.query).get("slug") or [""])[0]
                    record = outer.records.get(slug)
                    items = [record] if record is not None else []
                    self._send(200, json.dumps({"meta": {"total_count": len(items)},
                                                "items": items}).encode("utf-8"))
                elif parts.path in outer.files:
                    self._send(200, outer.files[parts.path])
                else:
                    self._send(404, b'{"error": "not found"}')

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)
