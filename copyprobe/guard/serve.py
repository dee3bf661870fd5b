"""``copyprobe guard serve``: the guard as an OpenAI-compatible HTTP proxy.

Clients talk to the proxy as to any OpenAI-compatible server (``base_url`` =
``http://HOST:PORT/v1``). ``POST /v1/chat/completions`` (streaming or not, text and image
parts) is checked by the guard; ``pass`` forwards the request as is, ``remind`` forwards it
with the reminder, ``block`` answers with the block message without calling the upstream
(``finish_reason`` ``stop``; the response carries ``"copyguard": {"action": "block", ...}``).
Every response carries the header ``X-CopyGuard-Action``. ``GET /v1/models`` is forwarded;
``GET /health`` answers ``{"status": "ok", ...}``.

With an output check (the guard block's ``output``, and the protected materials' span index
given with ``--span-index DIR``), the upstream's answers are checked too
(:mod:`copyprobe.guard.relay`): a non-streaming answer holding a protected span is replaced by
the block message or cut before the span, a stream is checked as it arrives and ends, at the
span, with a chunk whose ``finish_reason`` is ``content_filter`` and which carries
``"copyguard": {"action", "span_text", "words", "docs", "count", "message", ...}``, then
``[DONE]``; the upstream response is closed. Streamed text is released with a delay of about
``min_words - 1`` words (what could still start a protected span is held back).

With ``speculative`` on, a non-streaming request is also sent upstream unchanged while the
checks run (the CopyGuard design): on ``pass`` that answer is returned and the guard adds
almost no latency; on ``remind`` it is discarded (one extra upstream call) and the reminded
request is sent.

Limits and errors: a body over ``max_body_bytes`` gets 413 (it is not read); a body without
Content-Length 411; invalid JSON, a body that is not a chat request, an unsupported content
part or an image that is not a ``data:`` URL 400 (the guard must read every image itself, and
a proxy must never read files named by a client), and so does an image part whose ``data:``
URL is malformed (not base64, not an image type, data Pillow cannot read whole): the 400's
``param`` names the part's field, ``messages[i].content[j].image_url``; unknown paths 404,
wrong methods 405; a client silent for ``client_timeout`` seconds is disconnected (logged as
408). A check that fails under ``on_error: raise`` gives 503 (an OCR engine that fails on a
well-formed image too); an upstream that cannot be reached 502, one that times out 504; an
upstream's own error status and body are passed through. Errors use the OpenAI error body
``{"error": {"message", "type", "param", "code"}}``.

Keys: the upstream key is read from the environment variable named by ``upstream_key_env``
(never from a file, an argument or the client: the client's ``Authorization`` header is not
forwarded). Logs are JSON lines (logger ``copyprobe.guard.serve``), one per request with its
action, status, latency, the guard's time per check and the upstream's; the prompt's text is
logged only with ``log_prompts``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import urllib3

from copyprobe.guard.pipeline import OUTPUT, Guard, GuardDecision, GuardError, build_output_guard
from copyprobe.guard.relay import StreamRelay, check_completion, output_summary
from copyprobe.prompt import Prompt, decode_data_url

log = logging.getLogger("copyprobe.guard.serve")

CHAT_PATH = "/v1/chat/completions"
ROLES = ("system", "developer", "user", "assistant", "tool")
DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class ProxySettings:
    upstream: str                          # the upstream's base URL, e.g. http://host:8080/v1
    guard: Mapping[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = DEFAULT_MAX_BODY
    upstream_key_env: str = "OPENAI_API_KEY"
    upstream_timeout: float = 300.0
    client_timeout: float = 120.0
    log_prompts: bool = False
    speculative: bool = False
    cache_dir: str = ".cache/copyprobe/guard"
    #: the protected materials' span index directory (an output check with the guard block's
    #: ``output`` settings, or every default when it has none)
    span_index: str | None = None

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise ValueError(f"--upstream must be an http(s) URL, got {self.upstream!r}")
        if self.max_body_bytes < 1:
            raise ValueError("max_body_bytes must be positive")


class RequestError(Exception):
    """A request the proxy answers with an error status (never forwarded)."""

    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = (status, message, type_,
                                                                      param, code)

    def body(self) -> bytes:
        return _json({"error": {"message": self.message, "type": self.type,
                                "param": self.param, "code": self.code}})


def _json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- request validation ------------------------------------------------------------------------

def _check_image(url: str, where: str) -> None:
    """A ``data:`` image URL that decodes to an image Pillow can read whole (what the OCR
    engines and the model will be given); else a 400 naming ``where``. An image the client
    sent broken is the client's error, so it never reaches the guard, where a failing check
    is a 503."""
    import io

    from PIL import Image

    try:
        media_type, data = decode_data_url(url)
    except ValueError as exc:
        raise RequestError(400, f"{where}: {exc}", param=where) from None
    if not media_type.startswith("image/"):
        raise RequestError(400, f"{where}: the data: URL's media type {media_type or '(none)'!r}"
                                " is not an image type (image/png, image/jpeg, ...)",
                           param=where)
    if not data:
        raise RequestError(400, f"{where}: the data: URL holds no image data", param=where)
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise RequestError(400, f"{where}: the data: URL's data is not a readable image "
                                f"({type(exc).__name__}: {exc})", param=where) from None


def _check_part(part: Any, where: str) -> None:
    if not isinstance(part, Mapping):
        raise RequestError(400, f"{where} must be an object", param=where)
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise RequestError(400, f"{where}.text must be a string", param=where)
    elif kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
        if not isinstance(url, str):
            raise RequestError(400, f"{where}.image_url.url must be a string", param=where)
        if not url.startswith("data:"):
            raise RequestError(400, f"{where}: only data: image URLs are accepted (the guard "
                                    "reads every image itself)", param=where)
        _check_image(url, f"{where}.image_url")
    else:
        raise RequestError(400, f"{where}: unsupported content part type {kind!r} (text and "
                                "image_url are supported)", param=where)


def parse_chat_request(body: bytes) -> dict[str, Any]:
    """The request object of a chat completions body; :class:`RequestError` (400) naming the
    offending field otherwise."""
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RequestError(400, "request body must be a JSON object")
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty array", param="messages")
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise RequestError(400, f"{where} must be an object", param=where)
        if m.get("role") not in ROLES:
            raise RequestError(400, f"{where}.role must be one of {', '.join(ROLES)}",
                               param=f"{where}.role")
        content = m.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _check_part(part, f"{where}.content[{j}]")
        elif not (isinstance(content, str) or (content is None and m["role"] == "assistant")):
            raise RequestError(400, f"{where}.content must be a string or an array of parts",
                               param=f"{where}.content")
    if "stream" in obj and not isinstance(obj["stream"], bool):
        raise RequestError(400, "'stream' must be true or false", param="stream")
    if "model" in obj and not isinstance(obj["model"], str):
        raise RequestError(400, "'model' must be a string", param="model")
    return obj


# -- answers the proxy makes itself ------------------------------------------------------------

def _guard_info(decision: GuardDecision) -> dict[str, Any]:
    return {"action": decision.action, "reason": decision.reason}


def block_completion(request: Mapping[str, Any], decision: GuardDecision,
                     rid: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-copyguard-{rid}", "object": "chat.completion",
            "created": int(time.time()), "model": request.get("model", "copyguard"),
            "choices": [{"index": 0, "message": {"role": "assistant",
                                                 "content": decision.message},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "copyguard": _guard_info(decision)}


def block_chunks(request: Mapping[str, Any], decision: GuardDecision, rid: str) -> Iterator[bytes]:
    base = {"id": f"chatcmpl-copyguard-{rid}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": request.get("model", "copyguard")}
    yield b"data: " + _json({**base, "choices": [{"index": 0, "delta": {
        "role": "assistant", "content": decision.message}, "finish_reason": None}],
        "copyguard": _guard_info(decision)}) + b"\n\n"
    yield b"data: " + _json({**base, "choices": [{"index": 0, "delta": {},
                                                  "finish_reason": "stop"}]}) + b"\n\n"
    yield b"data: [DONE]\n\n"


# -- the proxy ---------------------------------------------------------------------------------

class _Upstream:
    """Pooled, thread-safe connections to the upstream (urllib3); no retries here: clients
    retry (the OpenAI SDK does)."""

    def __init__(self, settings: ProxySettings) -> None:
        self.base = settings.upstream.rstrip("/")
        self.key_env = settings.upstream_key_env
        self.http = urllib3.PoolManager(
            num_pools=4, maxsize=128, block=False, retries=False,
            timeout=urllib3.Timeout(connect=10.0, read=settings.upstream_timeout))

    def headers(self, content_type: bool = True) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream"}
        if content_type:
            h["Content-Type"] = "application/json"
        key = os.environ.get(self.key_env)
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def request(self, method: str, path: str, body: bytes | None = None, *,
                stream: bool = False) -> urllib3.BaseHTTPResponse:
        try:
            return self.http.request(method, f"{self.base}{path}", body=body,
                                     headers=self.headers(body is not None),
                                     preload_content=not stream)
        except urllib3.exceptions.NewConnectionError as exc:
            # (checked first: urllib3 makes it a subclass of ConnectTimeoutError)
            raise RequestError(502, f"upstream {self.base} unreachable: {exc}",
                               type_="upstream_error") from None
        except urllib3.exceptions.TimeoutError as exc:
            raise RequestError(504, f"upstream {self.base} timed out: {type(exc).__name__}",
                               type_="upstream_error") from None
        except urllib3.exceptions.HTTPError as exc:
            raise RequestError(502, f"upstream {self.base} failed: {type(exc).__name__}: "
                                    f"{exc}", type_="upstream_error") from None


class GuardProxy(ThreadingHTTPServer):
    daemon_threads = True
    # a burst of clients (the benchmark opens 32 connections at once) fits in the backlog
    request_queue_size = 256

    def __init__(self, settings: ProxySettings, guard: Guard | None = None) -> None:
        self.settings = settings
        self.guard = guard if guard is not None else self._make_guard(settings)
        self.upstream = _Upstream(settings)
        self.speculator = ThreadPoolExecutor(max_workers=64, thread_name_prefix="copyguard-spec")
        self.requests_served = 0
        self._count_lock = threading.Lock()
        super().__init__((settings.host, settings.port), ProxyHandler)

    @staticmethod
    def _make_guard(settings: ProxySettings) -> Guard:
        block = dict(settings.guard)
        parts: dict[str, Any] = {}
        if settings.span_index is not None:
            from copyprobe.spans.index import SpanIndex

            out = block.get("output")
            block["output"] = dict(out) if isinstance(out, Mapping) else {}
            parts[OUTPUT] = build_output_guard(block["output"],
                                               SpanIndex.open(settings.span_index))
        return Guard(block, cache_dir=Path(settings.cache_dir), workers=64,
                     components=parts).build()

    def count(self) -> None:
        with self._count_lock:
            self.requests_served += 1

    def server_close(self) -> None:
        super().server_close()
        self.speculator.shutdown(wait=False, cancel_futures=True)
        self.guard.close()


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse their connections
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm
    # holds the body back until the client's delayed ACK (about 40 ms per response, measured)
    disable_nagle_algorithm = True

    def setup(self) -> None:
        # seconds a client may stay silent (an idle keep-alive connection, a body that stops
        # arriving) before its connection is closed, so stalled clients do not hold threads
        self.timeout = self.server.settings.client_timeout
        super().setup()
    server: GuardProxy
    server_version = "copyguard"

    # -- plumbing --------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass  # one JSON line per request is written by _log instead

    def _log(self, **fields: Any) -> None:
        log.info(json.dumps({"event": "request", **fields}, ensure_ascii=False,
                            default=str))

    def _send(self, status: int, body: bytes, *, content_type: str = "application/json",
              action: str | None = None, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if action:
            self.send_header("X-CopyGuard-Action", action)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _start_stream(self, action: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-CopyGuard-Action", action)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" \
                or self.headers.get("Content-Length") is None:
            raise RequestError(411, "Content-Length required")
        try:
            length = int(self.headers["Content-Length"])
        except ValueError:
            raise RequestError(400, "bad Content-Length") from None
        if length < 0:
            raise RequestError(400, "bad Content-Length")
        if length > self.server.settings.max_body_bytes:
            raise RequestError(413, f"request body of {length} bytes exceeds the limit of "
                                    f"{self.server.settings.max_body_bytes} bytes",
                               code="request_too_large")
        return self.rfile.read(length)

    # -- routes ----------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        t0 = time.perf_counter()
        if self.path in ("/health", "/healthz"):
            s = self.server.guard.spec
            checks = {r: s.input and getattr(s, r) is not None
                      for r in ("notice", "status", "risk")}
            checks["output"] = s.output is not None
            body = _json({"status": "ok", "upstream": self.server.settings.upstream,
                          "guard": self.server.guard.digest, "policy": s.policy,
                          "checks": checks})
            self._send(200, body)
            status = 200
        elif self.path == "/v1/models":
            try:
                r = self.server.upstream.request("GET", "/models")
                self._send(r.status, r.data, content_type=r.headers.get("Content-Type",
                                                                        "application/json"))
                status = r.status
            except RequestError as exc:
                self._send(exc.status, exc.body())
                status = exc.status
        else:
            status = self._not_found()
        self._log(method="GET", path=self.path, status=status,
                  latency_s=round(time.perf_counter() - t0, 6))

    def _not_found(self) -> int:
        if self.path == CHAT_PATH:
            self.send_response(405)
            self.send_header("Allow", "POST")
            body = RequestError(405, f"use POST for {CHAT_PATH}").body()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return 405
        self._send(404, RequestError(404, f"no route {self.path!r}; the proxy serves "
                                          f"POST {CHAT_PATH}, GET /v1/models and GET /health",
                                     code="not_found").body())
        return 404

    def _other_method(self) -> None:
        self.close_connection = True  # a body, if any, is not read
        status = 405 if self.path == CHAT_PATH else 404
        if status == 405:
            self._not_found()
        else:
            self._send(404, RequestError(404, f"no route {self.command} {self.path!r}",
                                         code="not_found").body())
        self._log(method=self.command, path=self.path, status=status)

    do_PUT = do_DELETE = do_PATCH = _other_method

    def do_POST(self) -> None:  # noqa: N802 (stdlib name)
        t0 = time.perf_counter()
        rid = self.headers.get("X-Request-Id") or uuid.uuid4().hex[:16]
        fields: dict[str, Any] = {"id": rid, "method": "POST", "path": self.path}
        try:
            if self.path != CHAT_PATH:
                # the body is unread: close the connection rather than parse what follows
                self.close_connection = True
                fields["status"] = self._not_found()
                return
            fields.update(self._chat(rid, t0))
        except RequestError as exc:
            fields.update(status=exc.status, error=exc.message)
            self._send(exc.status, exc.body(), close=exc.status in (411, 413))
        except (BrokenPipeError, ConnectionResetError) as exc:
            fields.update(status=499, error=f"client went away: {type(exc).__name__}")
            self.close_connection = True
        except TimeoutError:
            fields.update(status=408, error="the client stopped sending")
            self.close_connection = True
        finally:
            self.server.count()
            fields["latency_s"] = round(time.perf_counter() - t0, 6)
            self._log(**fields)

    def _chat(self, rid: str, t0: float) -> dict[str, Any]:
        request = parse_chat_request(self._body())
        stream = bool(request.get("stream"))
        prompt = Prompt("chat", messages=tuple(request["messages"]))
        out: dict[str, Any] = {"stream": stream, "model": request.get("model")}
        if self.server.settings.log_prompts:
            out["prompt"] = request["messages"]
        speculative: Future | None = None
        if self.server.settings.speculative and not stream:
            raw = _json(request)
            speculative = self.server.speculator.submit(
                self.server.upstream.request, "POST", "/chat/completions", raw)
        try:
            decision = self.server.guard.check(prompt)
        except GuardError as exc:
            raise RequestError(503, str(exc), type_="guard_error") from None
        except Exception as exc:  # a component that cannot be built or misbehaves
            log.exception("guard failed")
            raise RequestError(500, f"guard failed: {type(exc).__name__}: {exc}",
                               type_="guard_error") from None
        out.update(action=decision.action, guard_s=round(decision.timings.get("total", 0.0), 6),
                   checks={k: round(v, 6) for k, v in decision.timings.items() if k != "total"},
                   task=decision.risk.task if decision.risk is not None else None)
        if decision.errors:
            out["check_errors"] = dict(decision.errors)
        if decision.action == "block":
            if speculative is not None:
                speculative.cancel()
            if stream:
                self._start_stream("block")
                for c in block_chunks(request, decision, rid):
                    self._chunk(c)
                self._end_stream()
            else:
                self._send(200, _json(block_completion(request, decision, rid)),
                           action="block")
            return {**out, "status": 200}
        guarded = self.server.guard.guarded_prompt(prompt, decision)
        assert guarded is not None
        t_up = time.perf_counter()
        if speculative is not None and decision.action == "pass":
            r = speculative.result()
            out["speculative"] = "used"
        else:
            if speculative is not None:
                out["speculative"] = "discarded"
            body = _json({**request, "messages": [dict(m) for m in guarded.messages]})
            if stream:
                n = request.get("n", 1)
                return {**out, **self._forward_stream(body, decision.action, t_up,
                                                      n if isinstance(n, int) else 1)}
            r = self.server.upstream.request("POST", "/chat/completions", body)
        data, checked = r.data, {}
        output = self.server.guard.component(OUTPUT)
        if output is not None and r.status == 200:
            data, checked = self._check_answer(data, output)
        self._send(r.status, data, action=decision.action,
                   content_type=r.headers.get("Content-Type", "application/json"))
        return {**out, **checked, "status": r.status,
                "upstream_s": round(time.perf_counter() - t_up, 6)}

    @staticmethod
    def _check_answer(data: bytes, output: Any) -> tuple[bytes, dict[str, Any]]:
        """A non-streaming answer after the output check, and the log's fields."""
        try:
            obj = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return data, {"output_action": "unchecked", "error": "upstream answer not JSON"}
        if not isinstance(obj, dict):
            return data, {"output_action": "unchecked"}
        obj, findings = check_completion(obj, output)
        fields = output_summary(dict(enumerate(findings)))
        return (_json(obj) if fields["output_action"] != "pass" else data), fields

    def _forward_stream(self, body: bytes, action: str, t_up: float,
                        n: int = 1) -> dict[str, Any]:
        r = self.server.upstream.request("POST", "/chat/completions", body, stream=True)
        output = self.server.guard.component(OUTPUT)
        relay = StreamRelay(output, n) if output is not None else None
        chunks: Iterator[bytes] | None = None
        try:
            if r.status != 200:  # the upstream's error, as it sent it
                data = r.read()
                self._send(r.status, data, action=action,
                           content_type=r.headers.get("Content-Type", "application/json"))
                return {"status": r.status, "upstream_s": round(time.perf_counter() - t_up, 6)}
            self._start_stream(action)
            error = None
            try:
                chunks = r.read_chunked() if r.chunked else iter(lambda: r.read1(65536), b"")
                for data in chunks:
                    if relay is None:
                        self._chunk(data)
                        continue
                    for event in relay.feed(data):
                        self._chunk(event)
                    if relay.done:
                        break
                if relay is not None:
                    for event in relay.finish():
                        self._chunk(event)
            except urllib3.exceptions.HTTPError as exc:
                # the status line is sent: tell the client inside the stream
                error = f"upstream stream broke: {type(exc).__name__}"
                self._chunk(b"data: " + _json({"error": {"message": error,
                                                         "type": "upstream_error"}}) + b"\n\n")
            self._end_stream()
            out: dict[str, Any] = {"status": 200,
                                   "upstream_s": round(time.perf_counter() - t_up, 6)}
            if relay is not None:
                out.update(output_summary(relay.findings))
            if error:
                out["error"] = error
            return out
        finally:
            if relay is not None and relay.done and not relay.stopped and chunks is not None:
                _read_to_end(r, chunks)  # after its [DONE]: normally the terminator alone
            if not r.closed:
                # the rest of the answer is not wanted (the guard stopped it, the client went
                # away): the upstream may stop, and the connection is not pooled half-read
                r.close()
            r.release_conn()


#: bytes an upstream may send after its ``[DONE]`` before its connection is closed instead
_TAIL_BYTES = 65536


def _read_to_end(r: urllib3.BaseHTTPResponse, chunks: Iterator[bytes]) -> None:
    """The rest of a stream the relay ended at the upstream's ``[DONE]`` (normally only the
    chunked body's terminator), read from ``chunks`` (the body's iterator, left suspended
    there) so that its connection goes back to the pool clean; one that sends more, or
    breaks, is left unread (its connection is then closed, not pooled; one that never ends
    its body holds this handler until ``upstream_timeout``). Without it the
    connection was pooled with the terminator unread (the next answer on it began
    ``0\\r\\n``: a 502) or, until the iterator was collected, with its response still
    open (``ResponseNotReady``: a 502)."""
    left = _TAIL_BYTES
    try:
        for data in chunks:
            left -= len(data)
            if left < 0:
                return  # the caller closes it
    except (urllib3.exceptions.HTTPError, OSError):
        pass


def make_server(settings: ProxySettings, guard: Guard | None = None) -> GuardProxy:
    """A bound proxy (port 0: a free port, read it from ``server_address``); call
    ``serve_forever()`` to serve."""
    return GuardProxy(settings, guard)


def load_guard_config(path: str | Path) -> dict[str, Any]:
    """The guard block of a YAML file: its ``guard:`` mapping, or the whole file."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping (the guard block), got {type(data).__name__}")
    block = data.get("guard", data)
    if not isinstance(block, dict):
        raise ValueError(f"{p}: 'guard' must be a mapping")
    return block
