"""The proxy's settings (:class:`ProxySettings`), a chat request's validation
(:func:`parse_chat_request`, a 400 naming the field) and the answers the proxy makes itself
(a block); shared by :mod:`copyprobe.guard.serve` and :mod:`copyprobe.guard.proxy_app`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from copyprobe.guard.pipeline import GuardDecision
from copyprobe.guard.served_index import RELOAD_MODES
from copyprobe.prompt import decode_data_url

log = logging.getLogger("copyprobe.guard.serve")

CHAT_PATH = "/v1/chat/completions"
ROLES = ("system", "developer", "user", "assistant", "tool")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
#: the environment variable that hands a worker process its settings (JSON; no key in it)
SETTINGS_ENV = "COPYPROBE_GUARD_PROXY_SETTINGS"


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
        if self.index_reload not in RELOAD_MODES:
            raise ValueError(f"--index-reload must be one of {', '.join(RELOAD_MODES)}, got "
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
