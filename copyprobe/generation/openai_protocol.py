"""The OpenAI wire protocol, shared by the synchronous and the Batch API backends: base URLs,
keys and their redaction, request messages (images as ``data:`` URLs), ``Retry-After``, error
bodies mapped to :class:`~copyprobe.generation.base.BackendError`, and answers read into
:class:`~copyprobe.generation.base.Completion`. Standard library only: no HTTP client here.

Reference: docs/backends.md.
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import mimetypes
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from copyprobe.generation.base import BackendError, Completion
from copyprobe.generation.logprob_scoring import TokenScores
from copyprobe.prompt import Prompt

__all__ = [
    "DEFAULT_BASE_URL",
    "LOGPROB_FLOOR",
    "MAX_MESSAGE_CHARS",
    "NO_PROMPT_LOGPROBS",
    "PLACEHOLDER_KEY",
    "int_or_none",
    "json_or_text",
    "map_status_error",
    "normalize_base_url",
    "parse_retry_after",
    "prepare_messages",
    "read_choice",
    "read_echo_scores",
    "read_key",
    "redact",
    "scores_from_prompt_logprobs",
    "shorten",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent as the key when ``api_key_optional`` is set and the variable is unset.
PLACEHOLDER_KEY = "not-needed"
#: Longest server message kept in an error (server messages can echo prompts).
MAX_MESSAGE_CHARS = 500

_CONTEXT_RE = re.compile(
    r"context[ _-]?(length|size|window)|maximum context|exceed_context_size|prompt is too long"
    r"|too many tokens|reduce the length of the (messages|prompt)")
_CONTENT_FILTER_CODES = frozenset({"content_filter", "content_policy_violation"})
_CONTENT_FILTER_RE = re.compile(
    r"content[ _]filter|content management policy|flagged as potentially violating")
_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# Secrets that may appear in server messages even when they are not our key.
_SECRET_RES = (
    re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}"),
    re.compile(r"(?i)\bbearer\s+[^\s\"',;]+"),
)


# -- helpers -----------------------------------------------------------------------------------
def normalize_base_url(url: str | None) -> str:
    """The base URL as it enters the identity: scheme and host lower-cased, userinfo, query,
    fragment and trailing slashes removed; ``None``/empty is the official API."""
    if not url:
        return DEFAULT_BASE_URL
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def redact(text: str, key: str | None = None) -> str:
    """``text`` with ``key`` and anything that looks like an OpenAI key or bearer token
    replaced by ``***``."""
    if key and key != PLACEHOLDER_KEY:
        text = text.replace(key, "***")
    for rx in _SECRET_RES:
        text = rx.sub("***", text)
    return text


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None
                      ) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``Retry-After`` (delta seconds or an
    HTTP date); ``None`` when absent or unparseable. Never negative."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lower.get(name)
        if raw is None:
            continue
        try:
            value = float(raw.strip())
        except ValueError:
            continue
        if math.isnan(value):
            continue
        return max(0.0, value / divisor)
    raw = lower.get("retry-after")
    if raw:
        try:
            parsed = email.utils.parsedate_to_datetime(raw.strip())
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if parsed is None:  # pragma: no cover - older Pythons
            return None
        if parsed.tzinfo is None:
            import datetime as _dt

            parsed = parsed.replace(tzinfo=_dt.timezone.utc)
        return max(0.0, parsed.timestamp() - (time.time() if now is None else now))
    return None


def _mime_type(path: Path, data: bytes) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    if guessed and guessed.startswith("image/"):
        return guessed
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return guessed or "application/octet-stream"


def _file_to_data_url(url: str) -> str:
    parts = urlsplit(url)
    path = Path(unquote(parts.path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BackendError(f"image {path} could not be read ({type(exc).__name__})",
                           permanent=True, error_class="ImageError") from None
    return f"data:{_mime_type(path, data)};base64,{base64.b64encode(data).decode('ascii')}"


def _convert_part(part: Any) -> Any:
    if not (isinstance(part, Mapping) and part.get("type") == "image_url"):
        return dict(part) if isinstance(part, Mapping) else part
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise BackendError("image_url part without a url", permanent=True,
                           error_class="ImageError")
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("file", ""):
        url = _file_to_data_url(url)
    new_image = {**image, "url": url} if isinstance(image, Mapping) else {"url": url}
    return {**part, "image_url": new_image}


def prepare_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The chat messages as sent: copies (the prompt is not changed), with ``file://`` images
    turned into ``data:`` URLs."""
    out: list[dict[str, Any]] = []
    for message in prompt.messages:
        msg = dict(message)
        content = msg.get("content")
        if isinstance(content, list):
            msg["content"] = [_convert_part(p) for p in content]
        out.append(msg)
    return out


def _error_fields(body: object) -> tuple[str | None, str | None, str | None]:
    """(code, type, message) of an OpenAI error body (``{"error": {...}}`` or its inside)."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if isinstance(body, Mapping):
        code = body.get("code")
        type_ = body.get("type")
        message = body.get("message")
        return (str(code) if code is not None else None,
                str(type_) if type_ is not None else None,
                str(message) if message is not None else None)
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return None, None, text
    return None, None, None


def json_or_text(content: bytes) -> object:
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return content.decode("utf-8", "replace")


def shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "..."


def map_status_error(status: int, body: object, headers: Mapping[str, str] | None = None, *,
                     key: str | None = None, where: str = "") -> BackendError:
    """The :class:`BackendError` for an HTTP error response (see the module table)."""
    code, type_, message = _error_fields(body)
    detail = shorten(redact(message or "", key))
    label = f"{where}: " if where else ""
    msg = (f"{label}HTTP {status}" + (f" [{code}]" if code else "")
           + (f" {detail}" if detail else ""))
    text = " ".join(x for x in (code, type_, message) if x).lower()
    retry_after = parse_retry_after(headers)

    def err(error_class: str, permanent: bool, ra: float | None = None) -> BackendError:
        return BackendError(msg, permanent=permanent, error_class=error_class, retry_after=ra,
                            status_code=status)

    if code in _CONTENT_FILTER_CODES or _CONTENT_FILTER_RE.search(text):
        return err("ContentFilterError", True)
    if status == 429:
        if code == "insufficient_quota" or type_ == "insufficient_quota":
            return err("InsufficientQuota", True)
        if "request too large" in text:
            return err("RequestTooLarge", True)
        return err("RateLimitError", False, retry_after)
    if 400 <= status < 500 and (code in _CONTEXT_CODES or type_ in _CONTEXT_CODES
                                or _CONTEXT_RE.search(text)):
        return err("ContextLengthError", True)
    if status >= 500 or status == 409:
        return err("ServerError", False, retry_after)
    if status == 408:
        return err("Timeout", False, retry_after)
    if status in (401, 403):
        return err("AuthError", True)
    if status == 404:
        return err("NotFoundError", True)
    if 400 <= status < 500:
        return err("BadRequestError", True)
    return err("MalformedResponse", False)  # 1xx/3xx reaching us: treat as a bad answer


def read_key(env_name: str, optional: bool, where: str) -> str:
    value = os.environ.get(env_name)
    if value:
        return value
    if optional:
        return PLACEHOLDER_KEY
    raise BackendError(f"environment variable {env_name} is not set; it must hold the API key "
                       f"for {where} (set api_key_optional: true for servers without keys)",
                       permanent=True, error_class="AuthError")


# -- answers -----------------------------------------------------------------------------------
def read_choice(body: Mapping[str, Any], *, chat: bool, where: str,
                status: int = 200) -> Completion:
    """The first choice of a successful response body (``choices`` already checked to be a
    non-empty list of objects) as a Completion. ``finish_reason`` content_filter is a
    permanent ``ContentFilterError``; a null chat ``content`` gives the ``refusal`` text if
    any, else ``""`` when a finish reason is given; anything unreadable is a transient
    ``MalformedResponse``. Shared by the synchronous and the Batch API backends."""

    def malformed(why: str) -> BackendError:
        return BackendError(f"{where}: HTTP {status} answer {why}",
                            error_class="MalformedResponse", status_code=status)

    choice = body["choices"][0]
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise BackendError(f"{where}: answer withheld by the content filter "
                           "(finish_reason content_filter)", permanent=True,
                           error_class="ContentFilterError", status_code=status)
    if chat:
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise malformed("has a choice without a message")
        text = message.get("content")
        if isinstance(text, list):  # some servers return content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, Mapping))
        if text is None:
            refusal = message.get("refusal")
            if isinstance(refusal, str):
                text = refusal
            elif finish is not None:
                text = ""
    else:
        text = choice.get("text")
    if not isinstance(text, str):
        raise malformed("has no text")
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    return Completion(text=text, prompt_tokens=int_or_none(usage.get("prompt_tokens")),
                      completion_tokens=int_or_none(usage.get("completion_tokens")),
                      finish_reason=finish if isinstance(finish, str) else None)



def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- prompt log-probs (scoring) ----------------------------------------------------------------
#: vLLM sends a log-probability of -inf as -9999.0 (``clamp_prompt_logprobs`` and the
#: completions ``logprobs``); read back, anything at or below it is -inf (a failed score).
LOGPROB_FLOOR = -9999.0
#: error_class of an answer without the prompt's log-probs (llama.cpp's server, OpenAI's API)
NO_PROMPT_LOGPROBS = "NoPromptLogprobs"


def _logprob(value: Any) -> float:
    out = float(value)
    return -math.inf if out <= LOGPROB_FLOOR else out


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def scores_from_prompt_logprobs(entries: Any, ids: list[int], start: int, *, path: str,
                                where: str, token_texts: tuple[str, ...] = ()) -> TokenScores:
    """The scores of ``ids[start:]`` from vLLM's prompt log-probs: per position None (the
    first) or ``{token id (int, or its decimal string in JSON): Logprob}`` where a Logprob has
    ``logprob``, ``rank`` (1: the argmax) and ``decoded_token`` (vLLM's ``Logprob`` objects of
    the engine, or their JSON in a completions answer). A token is the argmax when its rank is
    1 or its log-prob is the position's largest (ties). A position without the token that was
    sent is a transient ``MalformedResponse``."""
    out_lp: list[float] = []
    out_max: list[bool] = []
    texts: list[str] = []
    for i in range(start, len(ids)):
        entry = entries[i] if i < len(entries) else None
        if not isinstance(entry, Mapping) or not entry:
            raise BackendError(f"{where}: no prompt log-probs at position {i} of {len(ids)}",
                               error_class="MalformedResponse")
        own = entry.get(ids[i], entry.get(str(ids[i])))
        if own is None or _field(own, "logprob") is None:
            raise BackendError(f"{where}: the prompt log-probs at position {i} lack token "
                               f"{ids[i]}, the token sent", error_class="MalformedResponse")
        value = _logprob(_field(own, "logprob"))
        best = max(_logprob(_field(e, "logprob")) for e in entry.values())
        out_lp.append(value)
        out_max.append(_field(own, "rank") == 1 or value >= best)
        texts.append(str(_field(own, "decoded_token") or ""))
    return TokenScores(token_ids=tuple(ids[start:]), logprobs=tuple(out_lp),
                       argmax=tuple(out_max), path=path, n_context_tokens=start,
                       token_texts=token_texts or tuple(texts))


def read_echo_scores(choice: Mapping[str, Any], ids: list[int], start: int, *,
                     where: str) -> TokenScores:
    """The scores of ``ids[start:]`` from one choice of a ``/v1/completions`` answer to
    ``echo: true, logprobs: 1, max_tokens: 0`` whose prompt was ``ids`` (path
    ``server_echo``). vLLM's own ``prompt_logprobs`` (token ids and ranks) are read when the
    answer has them; else the OpenAI-format ``logprobs`` (``token_logprobs``, first null, and
    ``top_logprobs``: the token is the argmax when its log-prob is the position's largest).
    Entries after the prompt (a generated token) are ignored. An answer with log-probs for
    fewer positions than the prompt has tokens (llama.cpp's server returns the generated
    token's only, llama.cpp #27174; OpenAI's API none) is a permanent ``NoPromptLogprobs``."""
    logprobs = choice.get("logprobs")
    token_lps = logprobs.get("token_logprobs") if isinstance(logprobs, Mapping) else None
    prompt_lps = choice.get("prompt_logprobs")
    have = max(len(token_lps) if isinstance(token_lps, list) else 0,
               len(prompt_lps) if isinstance(prompt_lps, list) else 0)
    if have < len(ids):
        raise BackendError(
            f"{where}: the server does not return prompt log-probs (echo with logprobs gave "
            f"{have} log-prob entries for a prompt of {len(ids)} tokens), so it cannot score; "
            "echo_logprobs: true needs a server that does (vLLM's does; llama.cpp's server and "
            "OpenAI's API do not)", permanent=True, error_class=NO_PROMPT_LOGPROBS)
    tokens = logprobs.get("tokens") if isinstance(logprobs, Mapping) else None
    texts = (tuple(str(t) for t in tokens[start:len(ids)])
             if isinstance(tokens, list) and len(tokens) >= len(ids) else ())
    if isinstance(prompt_lps, list) and len(prompt_lps) >= len(ids):
        return scores_from_prompt_logprobs(prompt_lps, ids, start, path="server_echo",
                                           where=where, token_texts=texts)
    assert isinstance(logprobs, Mapping) and isinstance(token_lps, list)
    tops = logprobs.get("top_logprobs")
    out_lp: list[float] = []
    out_max: list[bool] = []
    for i in range(start, len(ids)):
        if not isinstance(token_lps[i], int | float):
            raise BackendError(f"{where}: no log-prob for prompt token {i} of {len(ids)}",
                               error_class="MalformedResponse")
        value = _logprob(token_lps[i])
        top = tops[i] if isinstance(tops, list) and i < len(tops) else None
        if not isinstance(top, Mapping) or not top:
            raise BackendError(f"{where}: no top log-probs for prompt token {i} of {len(ids)}",
                               error_class="MalformedResponse")
        best = max(_logprob(v) for v in top.values())
        out_lp.append(value)
        out_max.append(value >= best)
    return TokenScores(token_ids=tuple(ids[start:]), logprobs=tuple(out_lp),
                       argmax=tuple(out_max), path="server_echo", n_context_tokens=start,
                       token_texts=texts)
