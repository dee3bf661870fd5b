"""``copyprobe guard serve``: the guard as an OpenAI-compatible HTTP proxy.

:class:`ProxySettings`, the request's validation (:func:`parse_chat_request`) and the answers
the proxy makes itself; :func:`make_server` (one process, e.g. in a test's thread) and
:func:`run` (``--workers N`` processes, each building its app with :func:`app_from_env`) serve
the ASGI application of :mod:`copyprobe.guard.proxy_app` with uvicorn. Routes, limits, errors,
headers, logs and measurements: docs/guard.md ("copyprobe guard serve").
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from copyprobe.guard.pipeline import GuardDecision
from copyprobe.prompt import decode_data_url

log = logging.getLogger("copyprobe.guard.serve")

CHAT_PATH = "/v1/chat/completions"
ROLES = ("system", "developer", "user", "assistant", "tool")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
#: the environment variable that hands a worker process its settings (JSON; no key in it)
SETTINGS_ENV = "COPYPROBE_GUARD_PROXY_SETTINGS"
INDEX_RELOAD = ("reload", "keep")


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
    #: worker processes (uvicorn's), each with its own guard and upstream connections
    workers: int = 1
    #: a span index folder rebuilt under the running proxy: ``reload`` (serve the new build
    #: from the next request on) or ``keep`` (serve the snapshot opened at start)
    index_reload: str = "reload"

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise ValueError(f"--upstream must be an http(s) URL, got {self.upstream!r}")
        if self.max_body_bytes < 1:
            raise ValueError("max_body_bytes must be positive")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"--workers must be a positive integer, got {self.workers!r}")
        if self.index_reload not in INDEX_RELOAD:
            raise ValueError(f"--index-reload must be one of {', '.join(INDEX_RELOAD)}, got "
                             f"{self.index_reload!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self) | {"guard": dict(self.guard)})


class RequestError(Exception):
    """A request the proxy answers with an error status (never forwarded)."""

    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None,
                 close: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = (status, message, type_,
                                                                      param, code)
        self.close = close  # the connection is closed after the answer (a body left unread)

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


# -- serving ----------------------------------------------------------------------------------

def configure_logging() -> None:
    """The request log as JSON lines on stderr (the command's and each worker's)."""
    if any(getattr(h, "copyguard", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.copyguard = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _uvicorn_config(app: Any, settings: ProxySettings, **kw: Any) -> Any:
    import uvicorn

    # uvicorn's own logging stays off (log_config=None: warnings only): the proxy logs one
    # JSON line per request itself
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None,
                          access_log=False, server_header=False, lifespan="on",
                          timeout_keep_alive=settings.client_timeout, backlog=2048,
                          timeout_graceful_shutdown=5, **kw)


class ProxyServer:
    """The proxy bound to ``settings.host:port`` (port 0: a free one, in ``server_address``)
    and served by uvicorn in this process: :meth:`serve_forever` (a thread of its own, or the
    main thread, which then stops on SIGINT/SIGTERM), :meth:`shutdown`, :meth:`server_close`.
    Building it builds the guard: a component that cannot be built stops it here."""

    def __init__(self, settings: ProxySettings, guard: Any = None) -> None:
        import uvicorn

        from copyprobe.guard.proxy_app import Proxy

        self.proxy = Proxy(settings, guard)
        config = _uvicorn_config(self.proxy.app, settings)
        self.socket = config.bind_socket()
        self.socket.listen(config.backlog)  # clients connect (and wait) from now on
        self.server_address = self.socket.getsockname()[:2]
        self.server = uvicorn.Server(config)
        self._running = threading.Event()
        self._stopped = threading.Event()

    @property
    def guard(self) -> Any:
        return self.proxy.guard

    @property
    def requests_served(self) -> int:
        return self.proxy.requests_served

    def serve_forever(self, poll_interval: float | None = None) -> None:
        self._running.set()
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self.server.should_exit = True
        if self._running.is_set():
            self._stopped.wait(30)

    def server_close(self) -> None:
        self.socket.close()
        self.proxy.close()


def make_server(settings: ProxySettings, guard: Any = None) -> ProxyServer:
    """A bound proxy in this process (``guard``: one built by the caller, with components of
    its own); call ``serve_forever()`` to serve."""
    return ProxyServer(settings, guard)


def app_from_env() -> Any:
    """The ASGI application of a worker process, from the settings in :data:`SETTINGS_ENV`
    (uvicorn's factory for ``--workers`` > 1)."""
    from copyprobe.guard.proxy_app import Proxy

    configure_logging()
    raw = json.loads(os.environ[SETTINGS_ENV])
    return Proxy(ProxySettings(**raw)).app


def run(settings: ProxySettings, started: Callable[[str, int, str], None]) -> int | None:
    """Serve until SIGINT/SIGTERM; ``started(host, port, guard_digest)`` once listening.
    The requests served (None with several workers: each counts its own in its log)."""
    if settings.workers == 1:
        server = ProxyServer(settings)
        try:
            started(*server.server_address, server.guard.digest)
            server.serve_forever()
        finally:
            server.server_close()
        return server.requests_served
    from uvicorn.supervisors import Multiprocess

    from copyprobe.guard.proxy_app import Proxy

    probe = Proxy(settings)  # a component that cannot be built stops the command here
    digest = probe.guard.digest
    probe.close()
    os.environ[SETTINGS_ENV] = settings.to_json()
    config = _uvicorn_config("copyprobe.guard.serve:app_from_env", settings, factory=True,
                             workers=settings.workers)
    sock = config.bind_socket()
    sock.listen(config.backlog)
    try:
        started(*sock.getsockname()[:2], digest)
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
    return None


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
