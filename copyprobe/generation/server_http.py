"""The one HTTP stack (aiohttp) of every call copyprobe makes to a model server: the session,
TLS, proxies, timeouts and transport errors as BackendError; synchronous calls run on a
private event loop. Used by the openai and openai_batch backends and the server probes.

Reference: docs/backends.md ("HTTP stack"); the choice of aiohttp: docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import errno
import os
import platform
import socket
import ssl
import threading
import urllib.request
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import aiohttp

from copyprobe.generation.base import BackendError
from copyprobe.generation.openai_protocol import json_or_text, map_status_error, redact, shorten

__all__ = ["TRANSPORT_ERRORS", "Answer", "ServerClient", "env_proxy", "trust_store"]

#: what a request can raise when it gets no (complete) HTTP answer
TRANSPORT_ERRORS = (TimeoutError, aiohttp.ClientError)

T = TypeVar("T")
#: CA bundles looked for when OpenSSL's compiled-in paths hold none (as httpx2's stack did)
_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
             "/etc/ssl/ca-bundle.pem", "/etc/pki/tls/cacert.pem",
             "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem")


def trust_store() -> ssl.SSLContext:
    """The TLS context of model-server calls: ``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else
    the system's store (the same certificates httpx2 and the openai SDK accepted)."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    if platform.system() in ("Windows", "Darwin"):
        try:
            import truststore
        except ImportError:
            return ssl.create_default_context()
        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, _CA_FILES), None)
    if cafile or capath:
        ctx.load_verify_locations(cafile, capath)
    return ctx


def env_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) names for
    ``url``, or None."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if parts.hostname and urllib.request.proxy_bypass_environment(parts.hostname, proxies):
        return None
    return proxies.get(parts.scheme.lower())


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, its body read."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def _certificate_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure behind ``exc`` (its cause or context chain, or
    aiohttp's ``certificate_error``), if any."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            return e
        todo += [e.__cause__, e.__context__, getattr(e, "certificate_error", None)]
    return None


class _LoopThread:
    """A private event loop on a daemon thread, where the synchronous calls run."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="copyprobe-http")
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a synchronous model-server call from its own event loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # KeyboardInterrupt in the caller: stop the request too
            raise

    def stop(self, closing: Callable[[], Awaitable[None]] | None = None) -> None:
        if self.loop.is_closed():
            return
        if closing is not None and self.thread.is_alive() and \
                threading.current_thread() is not self.thread:
            try:
                asyncio.run_coroutine_threadsafe(closing(), self.loop).result(timeout=10)
            except Exception:  # noqa: BLE001 - closing must not fail the caller
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=10)
            if not self.thread.is_alive():
                self.loop.close()


class ServerClient:
    """One model server's HTTP client: an aiohttp session per event loop (the caller's for
    ``await request(...)``; a private one on a daemon thread for ``call(...)``), TLS from
    :func:`trust_store` for https, the environment's proxy (unless ``proxy=False``),
    ``timeout`` seconds to read, ``connect_timeout`` to connect; transport failures become
    :class:`BackendError` (see :meth:`transport_error`)."""

    def __init__(self, base_url: str, *, timeout: float,
                 connect_timeout: float | None = None,
                 headers: Mapping[str, str] | None = None,
                 auth: Callable[[], Mapping[str, str]] | None = None,
                 key: Callable[[], str | None] | None = None, proxy: bool = True) -> None:
        self.base_url = base_url
        self.timeout = float(timeout)
        self.connect_timeout = min(10.0, self.timeout) if connect_timeout is None \
            else float(connect_timeout)
        self._headers = dict(headers or {})
        self._auth = auth  # headers read for every request (a key that may rotate)
        self._key = key or (lambda: None)  # what to redact from messages
        self._proxy = env_proxy(base_url) if proxy else None
        self._lock = threading.Lock()
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._thread: _LoopThread | None = None
        self._finalizer: weakref.finalize | None = None

    def __getstate__(self) -> dict[str, Any]:
        # a pickled client (multiprocessing) carries no session, loop or thread
        return {**self.__dict__, "_lock": None, "_sessions": {}, "_thread": None,
                "_finalizer": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ----------------------------------------------------------------------------
    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            # TLS context only for https (loading it costs ~60 ms); True: aiohttp's default
            # context, should a redirect lead to https
            tls: ssl.SSLContext | bool = (
                trust_store() if urlsplit(self.base_url).scheme.lower() == "https" else True)
            session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None, connect=self.connect_timeout,
                                              sock_read=self.timeout),
                # no pool limit: the runner bounds the requests in flight
                connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                # HTTP(S)_PROXY / NO_PROXY read once here: aiohttp's trust_env would look
                # them up in a thread for every request
                proxy=self._proxy)
            # connections of a session made in another (finished) loop cannot be reused
            for other in [lp for lp in self._sessions if lp.is_closed()]:
                self._sessions.pop(other).detach()
            self._sessions[loop] = session
        return session

    def _loop_thread(self) -> _LoopThread:
        with self._lock:
            if self._thread is None:
                self._thread = _LoopThread()
                # a client dropped unclosed: its private loop's session closed, its thread ended
                self._finalizer = weakref.finalize(self, _stop, self._thread, self._sessions)
            return self._thread

    # -- requests ----------------------------------------------------------------------------
    async def request(self, method: str, url: str, *, where: str, json: Any = None,
                      data: Any = None, sink: IO[bytes] | None = None,
                      check: bool = True) -> Answer:
        """The answer to one request; with ``check``, a status outside 2xx raises the
        :func:`map_status_error` of its body; ``sink``: the body goes there (chunked), not
        into ``Answer.content``."""
        session = self._session()
        headers = dict(self._auth()) if self._auth is not None else None
        error: BackendError | None = None
        try:
            async with session.request(method, url, json=json, data=data,
                                       headers=headers) as response:
                status, head = response.status, response.headers
                if sink is not None and 200 <= status < 300:
                    content = b""
                    async for chunk in response.content.iter_chunked(1 << 20):
                        sink.write(chunk)
                else:
                    content = await response.read()
        except TRANSPORT_ERRORS as exc:
            error = self.transport_error(exc, where)
        if error is None and check and not 200 <= status < 300:
            error = map_status_error(status, json_or_text(content), head, key=self._key(),
                                     where=where)
        if error is not None:
            # raised outside the except block: no __context__ pointing at the transport's
            # exception, whose request object carries the Authorization header
            raise error
        return Answer(status, head, content)

    async def open(self, method: str, url: str, *, data: bytes | None = None,
                   headers: Mapping[str, str] | None = None) -> aiohttp.ClientResponse:
        """The response to one request, its body not read yet (read it, then
        :meth:`finish`); a failure raises aiohttp's exception (for callers that answer it
        themselves, as the guard proxy does)."""
        return await self._session().request(method, url, data=data, headers=headers)

    @staticmethod
    def finish(response: aiohttp.ClientResponse) -> None:
        """Give the connection of a response read to its end back to the pool; close that of
        one left unread (so the server stops sending)."""
        if response.content.at_eof():
            response.release()
        else:
            response.close()

    def call(self, method: str, url: str, **kwargs: Any) -> Answer:
        """:meth:`request`, synchronously (from any thread, inside a running loop or not)."""
        return self._loop_thread().run(self.request(method, url, **kwargs))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Any coroutine on this client's private loop (for a few requests in a row)."""
        return self._loop_thread().run(coro)

    # -- errors ------------------------------------------------------------------------------
    def connect_failure(self, exc: BaseException) -> str | None:
        """Why no connection could be made, in words, when ``exc`` (or an exception in its
        chain) says so; None when a connection was made (or it is not known)."""
        chain: list[BaseException] = []
        todo: list[BaseException | None] = [exc]
        while todo:
            e = todo.pop()
            if e is None or any(e is seen for seen in chain):
                continue
            chain.append(e)
            todo += [e.__cause__, e.__context__, getattr(e, "os_error", None)]
        errnos = {getattr(e, "errno", None) for e in chain}
        if any(isinstance(e, ConnectionRefusedError) for e in chain) or \
                errno.ECONNREFUSED in errnos:
            return "connection refused"
        if any(isinstance(e, aiohttp.ClientConnectorDNSError | socket.gaierror) for e in chain):
            return "host name not found"
        if errnos & {errno.EHOSTUNREACH, errno.ENETUNREACH}:
            return "no route to host"
        if any(isinstance(e, aiohttp.ConnectionTimeoutError) for e in chain):
            return f"no connection within {self.connect_timeout:g} s"
        for e in chain:
            if isinstance(e, aiohttp.ClientConnectorError):
                return str(getattr(e, "strerror", None) or e)
        return None

    def transport_error(self, exc: BaseException, where: str) -> BackendError:
        """The :class:`BackendError` of a request that got no HTTP answer: an untrusted
        certificate (permanent ``TLSError``), no connection (``ConnectionError``,
        ``unreachable``), no answer in time (``Timeout``), an invalid URL (permanent
        ``ConfigError``), else a failed connection (``ConnectionError``)."""
        key = self._key()
        if (cert_error := _certificate_error(exc)) is not None:
            inner = getattr(cert_error, "certificate_error", cert_error)  # aiohttp wraps it
            detail = shorten(redact(str(getattr(inner, "verify_message", None) or inner), key))
            return BackendError(f"{where}: the server's TLS certificate is not "
                                f"trusted ({detail}); if it is signed by a private CA, set "
                                "SSL_CERT_FILE to that CA's bundle", permanent=True,
                                error_class="TLSError")
        detail = shorten(redact(f"{type(exc).__name__}: {exc}", key))
        if (cause := self.connect_failure(exc)) is not None:
            return BackendError(f"{where}: cannot connect: {cause} ({detail})",
                                error_class="ConnectionError", unreachable=True)
        if isinstance(exc, TimeoutError):  # aiohttp's read timeouts
            return BackendError(f"{where}: no answer within {self.timeout:g} s",
                                error_class="Timeout")
        if isinstance(exc, aiohttp.InvalidURL):
            return BackendError(f"{where}: invalid URL ({detail})", permanent=True,
                                error_class="ConfigError")
        # reset, dropped or truncated answers, unreadable HTTP
        return BackendError(f"{where}: connection failed ({detail})",
                            error_class="ConnectionError")

    # -- cleanup -----------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the session of the running loop (call from the loop that used it)."""
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close every session and stop the private loop (from any thread)."""
        with self._lock:
            thread, self._thread = self._thread, None
            sessions, self._sessions = self._sessions, {}
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        for loop, session in sessions.items():
            if session.closed:
                continue
            if thread is not None and loop is thread.loop:
                continue  # closed below, on its loop
            if loop.is_closed():
                # its loop is gone, so the session cannot be closed by awaiting; let it go
                session.detach()
            elif loop.is_running():
                loop.call_soon_threadsafe(
                    lambda lp=loop, s=session: lp.create_task(s.close()))
            else:
                loop.run_until_complete(session.close())
        if thread is not None:
            _stop(thread, sessions)


def _stop(thread: _LoopThread, sessions: dict[asyncio.AbstractEventLoop,
                                              aiohttp.ClientSession]) -> None:
    """Close the session of ``thread``'s loop on that loop, then end the thread."""
    own = sessions.pop(thread.loop, None)

    async def closing() -> None:
        if own is not None and not own.closed:
            await own.close()

    thread.stop(closing)
