"""The proxy's ASGI application (starlette): :class:`Proxy` routes each request, runs the
guard's checks in worker threads, calls the upstream through the one HTTP stack of
model-server calls (:mod:`copyprobe.generation.server_http`, aiohttp), checks the answers (:mod:`copyprobe.guard.relay`, failing closed on what it
cannot read) and cancels the upstream request when its client leaves. Served by
:mod:`copyprobe.guard.serve`; what each route answers: docs/guard.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from copyprobe.generation.server_http import TRANSPORT_ERRORS, ServerClient
from copyprobe.guard import relay
from copyprobe.guard.output import OutputGuard
from copyprobe.guard.pipeline import OUTPUT, Guard, GuardDecision, GuardError
from copyprobe.guard.served_index import ServedIndex
from copyprobe.guard.proxy_request import (CHAT_PATH, ProxySettings, RequestError, _json,
                                           block_chunks, block_completion, log,
                                           parse_chat_request)
from copyprobe.prompt import Prompt

#: bytes an upstream may send after its ``[DONE]`` before its connection is closed instead
#: of being read to its end (and pooled)
_TAIL_BYTES = 65536
_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]


def _format_error(message: str) -> RequestError:
    return RequestError(502, f"the upstream's answer cannot be checked: {message}",
                        type_="upstream_error", code="upstream_format")


def _kind(content_type: str) -> str | None:
    """``json``, ``sse`` or None (a content type the output check cannot read)."""
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct == "text/event-stream":
        return "sse"
    if ct == "application/json" or ct.endswith("+json"):
        return "json"
    return None


class _Reply:
    """The response to one request, sent through ASGI's ``send``."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self.started = self.complete = self.gone = False

    async def start(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.started = True
        await self._send({"type": "http.response.start", "status": status,
                          "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                      for k, v in headers]})

    async def body(self, data: bytes, more: bool = True) -> None:
        self.complete = not more
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def whole(self, status: int, data: bytes, content_type: str = "application/json",
                    action: str | None = None, close: bool = False) -> None:
        headers = [("content-type", content_type), ("content-length", str(len(data)))]
        if action:
            headers.append(("x-copyguard-action", action))
        if close:
            headers.append(("connection", "close"))
        await self.start(status, headers)
        await self.body(data, more=False)

    async def stream_start(self, action: str) -> None:
        await self.start(200, [*_SSE_HEADERS, ("x-copyguard-action", action)])


class _Chat:
    """``POST /v1/chat/completions`` as a raw ASGI endpoint (it watches for the client's
    disconnect while it works)."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.proxy.chat(scope, receive, send)


class Proxy:
    """The proxy's state (settings, guard, served index, upstream client) and routes; ``app``
    is the starlette application."""

    def __init__(self, settings: ProxySettings, guard: Guard | None = None) -> None:
        self.settings = settings
        self.served: ServedIndex | None = None
        self.guard = guard if guard is not None else self._make_guard(settings)
        out = self.guard.spec.output or {}
        self.on_error = out.get("on_error", "raise")
        self.on_mismatch = out.get("on_mismatch", "error")
        self.static_output = None if self.served is not None else self.guard.component(OUTPUT)
        # the upstream: no proxy (as before), TLS from the trust store, 10 s to connect
        self.client = ServerClient(settings.upstream, timeout=settings.upstream_timeout,
                                   connect_timeout=10.0, proxy=False)
        self.requests_served = 0
        self.app = Starlette(
            routes=[Route(CHAT_PATH, _Chat(self), methods=["POST"]),
                    Route("/v1/models", self.models, methods=["GET"]),
                    Route("/health", self.health, methods=["GET"]),
                    Route("/healthz", self.health, methods=["GET"])],
            exception_handlers={HTTPException: self.no_route}, lifespan=self.lifespan)

    def _make_guard(self, settings: ProxySettings) -> Guard:
        from copyprobe.guard.pipeline import _output_index_dir

        block = dict(settings.guard)
        out = block.get("output")
        index_dir: str | None = None
        if settings.span_index is not None:
            block["output"] = dict(out) if isinstance(out, Mapping) else {}
            index_dir = settings.span_index
        elif isinstance(out, Mapping) and out.get("index"):
            index_dir = _output_index_dir(out)
        parts: dict[str, Any] = {}
        if index_dir is not None:
            self.served = ServedIndex(Path(index_dir), block["output"], settings.index_reload)
            parts[OUTPUT] = self.served.guard
        return Guard(block, cache_dir=Path(settings.cache_dir), workers=64,
                     components=parts).build()

    def close(self) -> None:
        self.guard.close()
        if self.served is not None:
            self.served.close()

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # the guard's checks run in threads (OCR, an LLM analyzer): as many at once as the
        # guard's own pool
        anyio.to_thread.current_default_thread_limiter().total_tokens = 64
        try:
            yield
        finally:
            await self.client.aclose()  # this worker's session

    # -- plumbing ----------------------------------------------------------------------------
    @staticmethod
    def _log(**fields: Any) -> None:
        log.info(json.dumps({"event": "request", **fields}, ensure_ascii=False, default=str))

    def _headers(self, body: bool) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream"}
        if body:
            h["Content-Type"] = "application/json"
        key = os.environ.get(self.settings.upstream_key_env)
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _upstream_error(self, exc: BaseException) -> RequestError:
        base = self.settings.upstream
        if isinstance(exc, TimeoutError):
            return RequestError(504, f"upstream {base} timed out: {type(exc).__name__}",
                                type_="upstream_error")
        if isinstance(exc, aiohttp.ClientConnectorError):
            return RequestError(502, f"upstream {base} unreachable: {exc}",
                                type_="upstream_error")
        return RequestError(502, f"upstream {base} failed: {type(exc).__name__}: {exc}",
                            type_="upstream_error")

    async def _send(self, method: str, path: str,
                    body: bytes | None = None) -> aiohttp.ClientResponse:
        """The upstream's response, its body not read yet (the caller closes it)."""
        url = self.settings.upstream.rstrip("/") + path
        error: RequestError | None = None
        try:
            return await self.client.open(method, url, data=body,
                                          headers=self._headers(body is not None))
        except TRANSPORT_ERRORS as exc:
            error = self._upstream_error(exc)
        raise error

    @staticmethod
    async def _close(r: aiohttp.ClientResponse) -> None:
        ServerClient.finish(r)

    async def _read(self, r: aiohttp.ClientResponse) -> bytes:
        try:
            return await r.read()
        except TRANSPORT_ERRORS as exc:
            raise self._upstream_error(exc) from None
        finally:
            await self._close(r)

    async def _fetch(self, body: bytes) -> tuple[int, str, bytes]:
        """A non-streaming chat request upstream: status, content type, body."""
        r = await self._send("POST", "/chat/completions", body)
        data = await self._read(r)
        return r.status, r.headers.get("content-type", ""), data

    @contextmanager
    def _output(self) -> Iterator[OutputGuard | None]:
        """The output check for one request (a snapshot of the served index)."""
        if self.served is None:
            yield self.static_output
        else:
            with self.served.lease() as guard:
                yield guard

    async def _body(self, headers: Headers, receive: Any) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower() \
                or headers.get("content-length") is None:
            raise RequestError(411, "Content-Length required", close=True)
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise RequestError(400, "bad Content-Length", close=True) from None
        if length < 0:
            raise RequestError(400, "bad Content-Length", close=True)
        limit = self.settings.max_body_bytes
        if length > limit:
            raise RequestError(413, f"request body of {length} bytes exceeds the limit of "
                                    f"{limit} bytes", code="request_too_large", close=True)
        parts = []
        with anyio.move_on_after(self.settings.client_timeout) as waited:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    raise RequestError(499, "the client went away while sending")
                parts.append(msg.get("body", b""))
                if not msg.get("more_body"):
                    break
        if waited.cancelled_caught:
            raise RequestError(408, f"the client stopped sending (client_timeout "
                                    f"{self.settings.client_timeout:g} s)",
                               code="request_timeout", close=True)
        return b"".join(parts)

    # -- routes ------------------------------------------------------------------------------
    async def no_route(self, request: Request, exc: HTTPException) -> Response:
        path, method = request.url.path, request.method
        if exc.status_code == 405:
            err = RequestError(405, f"use {(exc.headers or {}).get('Allow', 'POST')} for "
                                    f"{path}")
        else:
            err = RequestError(exc.status_code, f"no route {method} {path!r}; the proxy serves "
                                                f"POST {CHAT_PATH}, GET /v1/models and GET "
                                                "/health", code="not_found")
        headers = dict(exc.headers or {})
        if method not in ("GET", "HEAD"):
            headers["Connection"] = "close"  # a body, if any, is not read
        self._log(method=method, path=path, status=err.status)
        return Response(err.body(), err.status, headers=headers, media_type="application/json")

    async def health(self, request: Request) -> Response:
        s = self.guard.spec
        checks = {r: s.input and getattr(s, r) is not None for r in ("notice", "status", "risk")}
        checks["output"] = s.output is not None
        body: dict[str, Any] = {"status": "ok", "upstream": self.settings.upstream,
                                "guard": self.guard.digest, "policy": s.policy,
                                "checks": checks, "worker": os.getpid()}
        if self.served is not None:
            await self.served.refresh()
            body["index"] = self.served.health()
            if self.served.problem:
                body["status"] = "degraded"
        status = 200 if body["status"] == "ok" else 503
        self._log(method="GET", path=request.url.path, status=status)
        return Response(_json(body), status, media_type="application/json")

    async def models(self, request: Request) -> Response:
        t0 = time.perf_counter()
        try:
            r = await self._send("GET", "/models")
            data = await self._read(r)
            status, ctype = r.status, r.headers.get("content-type", "application/json")
        except RequestError as exc:
            status, ctype, data = exc.status, "application/json", exc.body()
        self._log(method="GET", path="/v1/models", status=status,
                  latency_s=round(time.perf_counter() - t0, 6))
        return Response(data, status, media_type=ctype)

    async def chat(self, scope: Any, receive: Any, send: Any) -> None:
        t0 = time.perf_counter()
        headers = Headers(scope=scope)
        rid = headers.get("x-request-id") or uuid.uuid4().hex[:16]
        fields: dict[str, Any] = {"id": rid, "method": "POST", "path": CHAT_PATH}
        reply = _Reply(send)
        try:
            body = await self._body(headers, receive)
            work = asyncio.ensure_future(self._chat(rid, body, reply, fields))
            watch = asyncio.ensure_future(self._watch(receive, reply))
            try:
                await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                watch.cancel()
                if not work.done():  # the client left: the work, and the upstream request
                    work.cancel()   # with it, ends now
                    await asyncio.gather(work, return_exceptions=True)
            if reply.gone:
                fields.update(status=499, error="the client went away")
            else:
                work.result()
        except RequestError as exc:
            fields.update(status=exc.status, error=exc.message)
            try:
                if exc.status == 499:
                    pass
                elif not reply.started:
                    await reply.whole(exc.status, exc.body(), close=exc.close)
                else:  # the stream has begun: say so inside it, and end it
                    await reply.body(b"data: " + exc.body() + b"\n\n", more=False)
            except OSError:
                fields.update(status=499, error="the client went away")
        except OSError as exc:  # the client's connection failed under a write
            fields.update(status=499, error=f"the client went away: {type(exc).__name__}")
        finally:
            self.requests_served += 1
            fields["latency_s"] = round(time.perf_counter() - t0, 6)
            self._log(**fields)

    @staticmethod
    async def _watch(receive: Any, reply: _Reply) -> None:
        """Returns when the client disconnects before its answer is complete."""
        while (await receive())["type"] != "http.disconnect":
            pass
        if reply.complete:  # the answer is out (the server says so): nothing to cancel
            await asyncio.Event().wait()
        reply.gone = True

    async def _check(self, prompt: Prompt) -> GuardDecision:
        s = self.guard.spec
        try:
            if not (s.input and any(getattr(s, r) is not None for r in ("notice", "status",
                                                                         "risk"))):
                return self.guard.check(prompt)  # no component runs: no thread needed
            return await anyio.to_thread.run_sync(self.guard.check, prompt)
        except GuardError as exc:
            raise RequestError(503, str(exc), type_="guard_error") from None
        except Exception as exc:  # a component that cannot be built or misbehaves
            log.exception("guard failed")
            raise RequestError(500, f"guard failed: {type(exc).__name__}: {exc}",
                               type_="guard_error") from None

    async def _chat(self, rid: str, body: bytes, reply: _Reply, out: dict[str, Any]) -> None:
        if len(body) > 65536:  # images: decoded and read whole, off the event loop
            request = await anyio.to_thread.run_sync(parse_chat_request, body)
        else:
            request = parse_chat_request(body)
        stream = bool(request.get("stream"))
        prompt = Prompt("chat", messages=tuple(request["messages"]))
        out.update(stream=stream, model=request.get("model"))
        if self.settings.log_prompts:
            out["prompt"] = request["messages"]
        if self.served is not None:
            await self.served.refresh()  # between requests: this one sees one snapshot
            out["index_digest"] = self.served.digest[:16]
        speculative: asyncio.Task | None = None
        if self.settings.speculative and not stream:
            speculative = asyncio.ensure_future(self._fetch(_json(request)))
            speculative.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            decision = await self._check(prompt)
        except BaseException:
            if speculative is not None:
                speculative.cancel()
            raise
        out.update(action=decision.action, guard_s=round(decision.timings.get("total", 0.0), 6),
                   checks={k: round(v, 6) for k, v in decision.timings.items() if k != "total"},
                   task=decision.risk.task if decision.risk is not None else None)
        if decision.errors:
            out["check_errors"] = dict(decision.errors)
        if decision.action == "block":
            if speculative is not None:
                speculative.cancel()
            if stream:
                await reply.stream_start("block")
                await reply.body(b"".join(block_chunks(request, decision, rid)), more=False)
            else:
                await reply.whole(200, _json(block_completion(request, decision, rid)),
                                  action="block")
            out["status"] = 200
            return
        guarded = self.guard.guarded_prompt(prompt, decision)
        assert guarded is not None
        t_up = time.perf_counter()
        with self._output() as output:
            if speculative is not None and decision.action == "pass":
                status, ctype, data = await speculative
                out["speculative"] = "used"
            else:
                if speculative is not None:
                    speculative.cancel()
                    out["speculative"] = "discarded"
                fwd = _json({**request, "messages": [dict(m) for m in guarded.messages]})
                if stream:
                    n = request.get("n", 1)
                    await self._stream(fwd, decision.action, output,
                                       n if isinstance(n, int) else 1, reply, out)
                    out["upstream_s"] = round(time.perf_counter() - t_up, 6)
                    return
                status, ctype, data = await self._fetch(fwd)
            out["upstream_s"] = round(time.perf_counter() - t_up, 6)
            if output is None or status != 200:
                out["status"] = status
                await reply.whole(status, data, ctype or "application/json", decision.action)
                return
            obj, converted = self._completion(ctype, data, out)
            checked, fields = await self._check_completion(obj, output, out)
            out.update(fields)
            if converted:
                out["output_format"] = "converted"
            send = data if fields["output_action"] == "pass" and not converted else _json(checked)
            out["status"] = 200
            await reply.whole(200, send, "application/json", decision.action)

    # -- the output check --------------------------------------------------------------------
    def _completion(self, ctype: str, data: bytes, out: dict[str, Any]
                    ) -> tuple[dict[str, Any], bool]:
        """The answer to a non-streaming request as a completion, and whether it came as a
        stream (converted); a :func:`_format_error` where the check cannot read it."""
        kind = _kind(ctype)
        try:
            if kind == "sse" and self.on_mismatch == "convert":
                return relay.completion_from_sse(data), True
            if kind == "sse":
                raise relay.UpstreamFormatError(
                    "a stream (text/event-stream) answered a request that did not ask for one "
                    "(the guard's output.on_mismatch: convert reads it instead)")
            if kind is None:
                raise relay.UpstreamFormatError(f"content type {ctype or '(none)'!r} (JSON or "
                                                "an event stream expected)")
            try:
                obj = relay._loads(data)
            except ValueError:
                raise relay.UpstreamFormatError("its JSON body does not parse") from None
            if not isinstance(obj, dict):
                raise relay.UpstreamFormatError("its JSON body is not an object")
            return obj, False
        except relay.UpstreamFormatError as exc:
            out["output_action"] = "refused_format"
            raise _format_error(str(exc)) from None

    async def _check_completion(self, obj: dict[str, Any], output: OutputGuard,
                                out: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        errors: dict[int, str] = {}
        try:
            obj, findings = await anyio.to_thread.run_sync(
                lambda: relay.check_completion(obj, output, self.on_error, errors))
        except relay.OutputCheckError as exc:
            out["output_action"] = "error"
            raise RequestError(503, str(exc), type_="guard_error",
                               code="output_check_failed") from None
        return obj, relay.output_summary(dict(enumerate(findings)), errors)

    async def _stream(self, body: bytes, action: str, output: OutputGuard | None, n: int,
                      reply: _Reply, out: dict[str, Any]) -> None:
        r = await self._send("POST", "/chat/completions", body)
        try:
            ctype = r.headers.get("content-type", "")
            if r.status != 200:  # the upstream's error, as it sent it
                data = await self._read(r)
                out["status"] = r.status
                await reply.whole(r.status, data, ctype or "application/json", action)
                return
            if output is None:
                await reply.stream_start(action)
                try:
                    async for data in r.content.iter_any():
                        await reply.body(data)
                except TRANSPORT_ERRORS as exc:
                    await self._broken(exc, reply, out)
                    return
                out["status"] = 200
                await reply.body(b"", more=False)
                return
            kind = _kind(ctype)
            if kind == "json" and self.on_mismatch == "convert":
                obj, _ = self._completion(ctype, await self._read(r), out)
                checked, fields = await self._check_completion(obj, output, out)
                out.update(fields, output_format="converted", status=200)
                await reply.stream_start(action)
                await reply.body(b"".join(relay.sse_from_completion(checked)), more=False)
                return
            if kind != "sse":
                out["output_action"] = "refused_format"
                what = ("a plain JSON answer to a streamed request (the guard's "
                        "output.on_mismatch: convert reads it instead)" if kind == "json"
                        else f"content type {ctype or '(none)'!r} (an event stream expected)")
                raise _format_error(what)
            await self._relay(r, relay.StreamRelay(output, n, self.on_error), action, reply,
                              out)
        finally:
            await self._close(r)  # unread: its connection is closed, so the upstream stops

    async def _relay(self, r: aiohttp.ClientResponse, rel: relay.StreamRelay, action: str,
                     reply: _Reply, out: dict[str, Any]) -> None:
        """The upstream's stream through the output check. The response starts once the
        relay lets some text through (what comes before, such as the role chunk, waits), so
        an answer refused or a check failing before that is a plain error."""
        chunks = r.content.iter_any()
        held: list[bytes] = []
        try:
            async for data in chunks:
                held.extend(rel.feed(data))
                if held and (rel.released or rel.done):
                    if not reply.started:
                        await reply.stream_start(action)
                    await reply.body(b"".join(held))
                    held.clear()
                if rel.done:
                    break
            else:
                held.extend(rel.finish())
            if not reply.started:
                await reply.stream_start(action)
            if held:
                await reply.body(b"".join(held))
        except relay.UpstreamFormatError as exc:
            out["output_action"] = "refused_format"
            raise _format_error(str(exc)) from None
        except relay.OutputCheckError as exc:
            out.update(relay.output_summary(rel.findings, rel.errors), output_action="error")
            raise RequestError(503, str(exc), type_="guard_error",
                               code="output_check_failed") from None
        except TRANSPORT_ERRORS as exc:
            await self._broken(exc, reply, out)
            return
        out.update(relay.output_summary(rel.findings, rel.errors), status=200)
        await reply.body(b"", more=False)
        if rel.done and not rel.stopped:
            # after the upstream's [DONE] (normally only the chunked terminator is left): read
            # it, so its connection is pooled clean; one that sends more is closed instead
            left = _TAIL_BYTES
            try:
                async for data in chunks:
                    left -= len(data)
                    if left < 0:
                        break
            except TRANSPORT_ERRORS:
                pass

    async def _broken(self, exc: BaseException, reply: _Reply, out: dict[str, Any]) -> None:
        err = self._upstream_error(exc)
        if not reply.started:
            raise err
        # the status line is sent: tell the client inside the stream
        out.update(status=200, error=f"upstream stream broke: {type(exc).__name__}")
        await reply.body(b"data: " + err.body() + b"\n\n", more=False)
