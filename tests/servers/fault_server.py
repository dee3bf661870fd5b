"""A scriptable OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` with responses in the
documented OpenAI format, deterministically from the request, and can be told to misbehave.

Answers
    chat: ``"echo: " + <text of the last user message, reversed>``;
    completions: ``"echo: " + <prompt, reversed>``. ``finish_reason`` is ``"stop"``;
    ``usage.prompt_tokens`` is ``ceil(chars/4)`` of the prompt text, ``completion_tokens`` the
    number of whitespace-separated words of the answer. ``model`` echoes the request's model.

Latency
    ``latency`` seconds are waited before every response (in the request's own thread: the
    server is a ``ThreadingHTTPServer``, so concurrent requests overlap).

Faults (``kind``)
    ``"429"``            status 429, OpenAI-style rate-limit body, ``Retry-After: <retry_after>``
                         (seconds; or ``retry_after_ms`` -> ``retry-after-ms`` header, or
                         ``retry_after_date=True`` -> an HTTP date ``retry_after`` s ahead)
    ``"quota"``          status 429 with ``code: insufficient_quota`` (not worth retrying)
    ``"500"``            status 500 server error body
    ``"503"``            status 503 (``Retry-After`` when ``retry_after`` is given)
    ``"malformed"``      status 200 whose body is not valid JSON
    ``"no_choices"``     status 200, valid JSON without ``choices``
    ``"slow"``           waits ``slow_seconds`` (default 5) before answering normally, i.e.
                         longer than a short client timeout
    ``"drop"``           closes the connection without sending any response
    ``"truncated"``      sends headers announcing a longer body, half a body, then closes
    ``"400_context"``    status 400, ``code: context_length_exceeded``
    ``"content_filter"`` status 400, ``code: content_filter`` (Azure-style prompt filter)
    ``"content_filter_finish"`` status 200 with ``finish_reason: content_filter``
    ``"400"``            status 400, generic invalid request
    ``"401"`` / ``"403"`` / ``"404"``  auth / permission / model-not-found errors
    ``"401_echo_key"``   status 401 whose message contains the bearer key that was sent (to
                         test that clients redact it)
    ``"status"``         any ``status`` given in the fault's options with a generic body

Scripting
    ``fail_next(kind, n=1, **opts)`` queues ``n`` faults for the next ``n`` requests (FIFO);
    ``fail_when(match, kind, times=1, **opts)`` fails requests whose raw body contains the
    string ``match`` (or for which the callable ``match(record)`` is true), ``times`` times
    (``None``: always); ``set_rule(fn)`` installs ``fn(record) -> Fault | None`` consulted for
    every request; ``random_faults(rate, kinds, seed)`` fails a seeded random fraction.
    Order of precedence: ``fail_next`` queue, ``fail_when`` rules, ``set_rule``, random faults.

Recording
    Every request is recorded as a :class:`RequestRecord` (path, parsed JSON body, headers
    without ``Authorization``, whether that header was present and the bearer key separately,
    the body hash, the fault applied). ``total_requests``, ``requests_by_hash`` (a Counter of
    canonical body hashes, to assert nothing was sent twice), ``served_by_hash`` (successful
    200 answers delivered) and ``duplicates()`` summarise them. ``max_in_flight`` is the most
    POSTs the server was handling at once.

TLS
    ``FaultServer(tls=ctx)`` serves HTTPS with a server-side ``ssl.SSLContext`` (tests make one
    with ``trustme``); ``url`` and ``base_url`` then start with ``https``.

Proxy
    A request in absolute form (``POST http://host:port/v1/chat/completions``, as clients send
    to an HTTP proxy) is answered as if it had been sent to this server; its record keeps the
    ``target`` URL, so a test can check that a client went through a proxy.

Use::

    with FaultServer(latency=0.0) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="k")  # "http://127.0.0.1:PORT/v1"

or as a script (for benchmarks)::

    python tests/servers/fault_server.py --port 0 --latency 0.2
        # optional: --fault-rate 0.1 --fault-kinds 429,500 --retry-after 1 --seed 0

which prints the base URL on its first line and serves until interrupted.
"""

from __future__ import annotations

import argparse
import collections
import email.utils
import hashlib
import json
import math
import random
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# the shared start/stop plumbing next to this file (the tests folder is not a package, so the
# servers are loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

__all__ = ["FAULT_KINDS", "Fault", "FaultServer", "RequestRecord", "answer_text", "body_hash"]

FAULT_KINDS = frozenset({
    "429", "quota", "500", "503", "malformed", "no_choices", "slow", "drop", "truncated",
    "400_context", "content_filter", "content_filter_finish", "400", "401", "403", "404",
    "401_echo_key", "status",
})


@dataclass(frozen=True)
class Fault:
    """One misbehaviour. ``retry_after`` (s), ``retry_after_ms``, ``retry_after_date`` shape
    the rate-limit headers; ``slow_seconds`` the delay of ``"slow"``; ``status`` the code of
    ``"status"``; ``message`` overrides the error message."""

    kind: str
    retry_after: float | None = 1.0
    retry_after_ms: float | None = None
    retry_after_date: bool = False
    slow_seconds: float = 5.0
    status: int = 500
    message: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {sorted(FAULT_KINDS)}")


@dataclass
class RequestRecord:
    """What the server received (the ``Authorization`` header is kept out of ``headers``)."""

    index: int
    method: str
    path: str
    body: Any
    raw_body: bytes
    headers: dict[str, str]
    has_authorization: bool
    api_key: str | None
    body_hash: str
    received_at: float
    fault: str | None = None
    status: int | None = None
    #: the absolute URL when the request came in proxy form, else None
    target: str | None = None

    @property
    def text(self) -> str:
        """The raw body as text (for substring checks)."""
        return self.raw_body.decode("utf-8", errors="replace")


def body_hash(raw: bytes) -> str:
    """sha256 of the canonical JSON form of a request body (of the raw bytes if not JSON)."""
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode()
    except ValueError:
        canonical = raw
    return hashlib.sha256(canonical).hexdigest()


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content
                        if isinstance(p, dict) and p.get("type") == "text")
    return ""


def prompt_text(path: str, body: Any) -> str:
    """The text the answer is derived from: the last user message (chat) or the prompt."""
    if not isinstance(body, dict):
        return ""
    if path.endswith("/chat/completions"):
        users = [m for m in body.get("messages") or [] if isinstance(m, dict)
                 and m.get("role") == "user"]
        return _content_text(users[-1].get("content")) if users else ""
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):
        prompt = " ".join(str(p) for p in prompt)
    return str(prompt)


def answer_text(path: str, body: Any) -> str:
    """The deterministic answer to a request: ``"echo: "`` + the prompt text reversed."""
    return "echo: " + prompt_text(path, body)[::-1]


def _all_prompt_chars(path: str, body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    if path.endswith("/chat/completions"):
        return sum(len(_content_text(m.get("content"))) for m in body.get("messages") or []
                   if isinstance(m, dict))
    return len(prompt_text(path, body))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60  # idle keep-alive connections do not pin threads forever
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every response, which is not the pipeline's cost.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.owner.verbose:
            super().log_message(format, *args)

    # -- plumbing ---------------------------------------------------------------------------
    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str,
                  headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{self.server.owner.total_requests}")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _error(self, status: int, message: str, type_: str, code: str | None,
               headers: dict[str, str] | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": type_, "param": None,
                                           "code": code}}, headers)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- requests ---------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": "fault-model", "object": "model", "created": 0, "owned_by": "tests"}]})
        elif self.path.rstrip("/") == "/props" and self.server.owner.props is not None:
            self._send_json(200, self.server.owner.props)  # llama.cpp's server settings
        else:
            self._error(404, f"no route GET {self.path}", "invalid_request_error", None)

    def do_POST(self) -> None:  # noqa: N802
        owner = self.server.owner
        owner._enter()
        try:
            self._post(owner)
        finally:
            owner._leave()

    def _post(self, owner: FaultServer) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        auth = self.headers.get("Authorization")
        key = auth[len("Bearer "):] if auth and auth.startswith("Bearer ") else None
        headers = {k: v for k, v in self.headers.items() if k.lower() != "authorization"}
        target = self.path if "://" in self.path else None  # proxy (absolute) form
        path = (urlsplit(self.path).path if target else self.path.split("?", 1)[0]).rstrip("/")
        record = owner._record(self.command, path, body, raw, headers, auth is not None, key)
        record.target = target
        fault = owner._fault_for(record)
        record.fault = fault.kind if fault else None

        if path not in ("/v1/chat/completions", "/v1/completions"):
            record.status = 404
            self._error(404, f"no route POST {path}", "invalid_request_error", "unknown_url")
            return
        if fault is not None:
            record.status = self._apply_fault(fault, path, body, key)
            if record.status is None:
                return
            if record.status != 200 or fault.kind != "slow":
                return
        if owner.latency and owner._stop.wait(owner.latency):
            self._drop()
            return
        record.status = 200
        self._send_json(200, owner.response_for(path, body))
        owner._served(record)

    def _apply_fault(self, fault: Fault, path: str, body: Any, key: str | None) -> int | None:
        """Act out ``fault``; return the status sent, 200 to continue normally (``slow``), or
        None when nothing was sent."""
        owner = self.server.owner
        kind = fault.kind
        if kind == "slow":
            if owner._stop.wait(fault.slow_seconds):
                self._drop()
                return None
            return 200
        if kind == "drop":
            self._drop()
            return None
        if kind == "truncated":
            data = json.dumps(owner.response_for(path, body)).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
            except OSError:
                pass
            self._drop()
            return None
        if kind == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess',
                           "application/json")
            return 200
        if kind == "no_choices":
            self._send_json(200, {"id": "chatcmpl-nochoices", "object": "chat.completion",
                                  "created": int(time.time()), "model": "x"})
            return 200
        if kind == "content_filter_finish":
            resp = owner.response_for(path, body)
            choice = resp["choices"][0]
            if "message" in choice:
                choice["message"]["content"] = None
            else:
                choice["text"] = ""
            choice["finish_reason"] = "content_filter"
            self._send_json(200, resp)
            return 200
        if kind in ("429", "503"):
            headers: dict[str, str] = {}
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{fault.retry_after_ms:g}"
            elif fault.retry_after is not None:
                if fault.retry_after_date:
                    headers["Retry-After"] = email.utils.formatdate(
                        time.time() + fault.retry_after, usegmt=True)
                else:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
            if kind == "429":
                headers.update({"x-ratelimit-limit-requests": "60",
                                "x-ratelimit-remaining-requests": "0",
                                "x-ratelimit-reset-requests": "1s"})
                self._error(429, fault.message or "Rate limit reached for requests on fault-model "
                            "(RPM): Limit 60, Used 60, Requested 1. Please try again in 1s.",
                            "requests", "rate_limit_exceeded", headers)
                return 429
            self._error(503, fault.message or "The server is overloaded or not ready yet.",
                        "server_error", None, headers)
            return 503
        simple: dict[str, tuple[int, str, str, str | None]] = {
            "quota": (429, "You exceeded your current quota, please check your plan and billing "
                      "details.", "insufficient_quota", "insufficient_quota"),
            "500": (500, "The server had an error while processing your request. Sorry about "
                    "that!", "server_error", None),
            "400_context": (400, "This model's maximum context length is 4096 tokens. However, "
                            "your messages resulted in 5000 tokens. Please reduce the length of "
                            "the messages.", "invalid_request_error", "context_length_exceeded"),
            "content_filter": (400, "The response was filtered due to the prompt triggering "
                               "the content management policy.", "invalid_request_error",
                               "content_filter"),
            "400": (400, "Invalid value for 'temperature'.", "invalid_request_error",
                    "invalid_value"),
            "401": (401, "Incorrect API key provided. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.", "invalid_request_error",
                    "invalid_api_key"),
            "403": (403, "You are not allowed to sample from this model",
                    "invalid_request_error", None),
            "404": (404, "The model `fault-model` does not exist or you do not have access to "
                    "it.", "invalid_request_error", "model_not_found"),
            "401_echo_key": (401, f"Incorrect API key provided: {key}. You can find your API "
                             "key at https://platform.openai.com/account/api-keys.",
                             "invalid_request_error", "invalid_api_key"),
            "status": (fault.status, f"status {fault.status}", "server_error", None),
        }
        status, message, type_, code = simple[kind]
        self._error(status, fault.message or message, type_, code)
        return status


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True
    owner: FaultServer


Rule = Callable[[RequestRecord], "Fault | None"]


class FaultServer(ServerThread):
    """An in-process OpenAI-compatible server on ``127.0.0.1`` (ephemeral port by default)."""

    def __init__(self, latency: float = 0.0, *, host: str = "127.0.0.1", port: int = 0,
                 verbose: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.latency = latency
        self.tls = tls  # a server-side context: serve HTTPS
        self.host = host
        self.port = port
        self.verbose = verbose
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._queue: collections.deque[Fault] = collections.deque()
        self._when: list[list[Any]] = []  # [match, fault, remaining | None]
        self._rule: Rule | None = None
        self._random: tuple[float, tuple[str, ...], random.Random, dict[str, Any]] | None = None
        self._requests: list[RequestRecord] = []
        self.requests_by_hash: collections.Counter[str] = collections.Counter()
        self.served_by_hash: collections.Counter[str] = collections.Counter()
        self._in_flight = 0
        self.max_in_flight = 0
        #: what ``GET /props`` answers, as llama.cpp's server does (``{"total_slots": 4}``);
        #: None: 404, as other servers
        self.props: dict[str, Any] | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def _make_server(self) -> _Server:
        self._stop.clear()
        httpd = _Server((self.host, self.port), _Handler)
        if self.tls is not None:
            httpd.socket = self.tls.wrap_socket(httpd.socket, server_side=True)
        httpd.owner = self
        self.port = httpd.server_address[1]
        return httpd

    def _stopping(self) -> None:
        self._stop.set()  # wakes sleeping handlers (latency, slow)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path; ``https`` with ``tls``)."""
        return f"{'https' if self.tls is not None else 'http'}://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    # -- scripting --------------------------------------------------------------------------
    def fail_next(self, kind: str, n: int = 1, **opts: Any) -> None:
        """Fail the next ``n`` requests with ``kind`` (options: see :class:`Fault`)."""
        fault = Fault(kind, **opts)
        with self._lock:
            self._queue.extend([fault] * n)

    def fail_when(self, match: str | Callable[[RequestRecord], bool], kind: str,
                  times: int | None = 1, **opts: Any) -> None:
        """Fail requests whose raw body contains ``match`` (or where ``match(record)``),
        ``times`` times (``None``: every time)."""
        with self._lock:
            self._when.append([match, Fault(kind, **opts), times])

    def set_rule(self, rule: Rule | None) -> None:
        """Install ``rule(record) -> Fault | None``, consulted for every request."""
        with self._lock:
            self._rule = rule

    def random_faults(self, rate: float, kinds: Iterable[str] = ("429", "500"), seed: int = 0,
                      **opts: Any) -> None:
        """Fail a seeded random fraction ``rate`` of requests with one of ``kinds``."""
        kinds = tuple(kinds)
        for k in kinds:
            Fault(k)  # validate
        with self._lock:
            self._random = (rate, kinds, random.Random(seed), opts) if rate > 0 else None

    def clear_faults(self) -> None:
        with self._lock:
            self._queue.clear()
            self._when.clear()
            self._rule = None
            self._random = None

    def reset(self) -> None:
        """Forget faults and recorded requests."""
        self.clear_faults()
        with self._lock:
            self._requests.clear()
            self.requests_by_hash.clear()
            self.served_by_hash.clear()
            self.max_in_flight = self._in_flight

    # -- records ------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._requests)

    @property
    def total_requests(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def last(self) -> RequestRecord:
        with self._lock:
            return self._requests[-1]

    def duplicates(self) -> dict[str, int]:
        """Body hashes received more than once, with their counts."""
        with self._lock:
            return {h: c for h, c in self.requests_by_hash.items() if c > 1}

    def _record(self, method: str, path: str, body: Any, raw: bytes, headers: dict[str, str],
                has_auth: bool, key: str | None) -> RequestRecord:
        h = body_hash(raw)
        with self._lock:
            rec = RequestRecord(index=len(self._requests), method=method, path=path, body=body,
                                raw_body=raw, headers=headers, has_authorization=has_auth,
                                api_key=key, body_hash=h, received_at=time.monotonic())
            self._requests.append(rec)
            self.requests_by_hash[h] += 1
        return rec

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _served(self, record: RequestRecord) -> None:
        with self._lock:
            self.served_by_hash[record.body_hash] += 1

    def _fault_for(self, record: RequestRecord) -> Fault | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            for entry in self._when:
                match, fault, remaining = entry
                if remaining is not None and remaining <= 0:
                    continue
                hit = match(record) if callable(match) else match in record.text
                if hit:
                    if remaining is not None:
                        entry[2] = remaining - 1
                    return fault
            rule = self._rule
            rnd = self._random
            if rnd is not None:
                rate, kinds, rng, opts = rnd
                if rng.random() < rate:
                    return Fault(rng.choice(kinds), **opts)
        return rule(record) if rule is not None else None

    # -- answers ------------------------------------------------------------------------------
    def response_for(self, path: str, body: Any) -> dict[str, Any]:
        """The normal (documented-format) response to a request."""
        text = answer_text(path, body)
        model = body.get("model", "fault-model") if isinstance(body, dict) else "fault-model"
        prompt_tokens = math.ceil(_all_prompt_chars(path, body) / 4)
        completion_tokens = len(text.split())
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        created = int(time.time())
        rid = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
        if path.endswith("/chat/completions"):
            return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": created,
                    "model": model, "system_fingerprint": "fp_fault",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                                         "refusal": None},
                                 "logprobs": None, "finish_reason": "stop"}],
                    "usage": usage}
        return {"id": f"cmpl-{rid}", "object": "text_completion", "created": created,
                "model": model, "system_fingerprint": "fp_fault",
                "choices": [{"index": 0, "text": text, "logprobs": None,
                             "finish_reason": "stop"}],
                "usage": usage}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: an ephemeral port")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds per response")
    ap.add_argument("--fault-rate", type=float, default=0.0,
                    help="fraction of requests failed at random (seeded)")
    ap.add_argument("--fault-kinds", default="429,500", help="comma-separated fault kinds")
    ap.add_argument("--retry-after", type=float, default=1.0, help="Retry-After of 429s (s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    srv = FaultServer(latency=args.latency, host=args.host, port=args.port,
                      verbose=args.verbose).start()
    if args.fault_rate:
        srv.random_faults(args.fault_rate, args.fault_kinds.split(","), seed=args.seed,
                          retry_after=args.retry_after)
    print(srv.base_url, flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        done.wait()
    finally:
        srv.stop()
        print(json.dumps({"total_requests": srv.total_requests,
                          "duplicates": len(srv.duplicates())}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
