"""An OpenAI-compatible chat server that answers in the format a test sets, whatever the request
asked for (stdlib only): what a misconfigured or misbehaving upstream sends a guard's proxy.

``reply``: ``"sse"`` (a stream of chat chunks: a role chunk, the answer in deltas of
``chunk_chars`` characters ``chunk_delay`` seconds apart, a finish chunk, ``[DONE]``),
``"json"`` (a chat completion), ``"text"`` (the answer as ``text/plain``) or ``"bad_event"``
(a stream whose second event's data is not JSON); ``gzip``: the body compressed
(``Content-Encoding: gzip``, whatever the client accepts). Every POST is answered; ``requests``
counts them, and ``closed_at`` records when a stream's client closed its connection
(``time.monotonic()``; a write failed), so a test can see the upstream request cancelled.

    with FormatServer("Hello there.", reply="sse") as srv:
        ...  # srv.base_url, srv.requests, srv.closed_at
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

BASE = {"id": "chatcmpl-format", "created": 0, "model": "format-model"}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({**BASE, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}]}).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        owner: FormatServer = self.server.owner
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner.lock:
            owner.requests += 1
        answer = owner.answer
        if owner.reply in ("json", "text"):
            data = (json.dumps({**BASE, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer},
                 "finish_reason": "stop"}]}).encode() if owner.reply == "json"
                else answer.encode())
            if owner.gzip:
                data = gzip.compress(data)
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if owner.reply == "json"
                             else "text/plain; charset=utf-8")
            if owner.gzip:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        n = owner.chunk_chars
        events = [_chunk({"role": "assistant", "content": ""})]
        events += [_chunk({"content": answer[i:i + n]}) for i in range(0, len(answer), n)]
        if owner.reply == "bad_event":
            events.insert(1, b"data: this is not JSON\n\n")
        events += [_chunk({}, "stop"), b"data: [DONE]\n\n"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        if owner.gzip:
            self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            self.wfile.write(gzip.compress(b"".join(events)))
            self.close_connection = True
            return
        self.end_headers()
        try:
            for e in events:
                self.wfile.write(e)
                self.wfile.flush()
                if owner.chunk_delay and owner.stopping.wait(owner.chunk_delay):
                    return
        except OSError:
            owner.closed_at = time.monotonic()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FormatServer(ServerThread):
    def __init__(self, answer: str, reply: str = "sse", *, chunk_chars: int = 4,
                 chunk_delay: float = 0.0, gzip: bool = False) -> None:
        if reply not in ("sse", "json", "text", "bad_event"):
            raise ValueError(f"unknown reply {reply!r}")
        self.answer, self.reply = answer, reply
        self.chunk_chars, self.chunk_delay, self.gzip = chunk_chars, chunk_delay, gzip
        self.requests = 0
        self.closed_at: float | None = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def _make_server(self) -> _Server:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self  # type: ignore[attr-defined]
        return httpd

    def _stopping(self) -> None:
        self.stopping.set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"
