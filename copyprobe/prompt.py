"""What is sent to a model: a chat (OpenAI-style messages, text and image parts) or a plain
text prompt. Shared by every study; the generation layer, its cache and every backend take a
:class:`Prompt`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

PromptFormat = Literal["chat", "completion"]


@dataclass(frozen=True)
class Prompt:
    """What is sent to a model: chat messages or a plain-text prompt."""

    format: PromptFormat
    #: chat messages; ``content`` is a string or a list of OpenAI-style content parts
    #: (``{"type": "text", "text": ...}``, ``{"type": "image_url", "image_url": {"url": ...}}``)
    messages: tuple[Mapping[str, Any], ...] = ()
    text: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of :meth:`to_json` (``{"messages": [...]}`` or ``{"prompt": ...}``)."""
        if self.format == "chat":
            return {"messages": [dict(m) for m in self.messages]}
        return {"prompt": self.text}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> Prompt:
        obj = json.loads(raw)
        if "messages" in obj:
            return cls("chat", messages=tuple(obj["messages"]))
        return cls("completion", text=obj["prompt"])


def image_parts(prompt: Prompt) -> list[dict[str, Any]]:
    """The image content parts of a chat prompt (OpenAI style: ``{"type": "image_url",
    "image_url": {"url": "file:///...png" | "data:image/png;base64,..."}}``)."""
    out: list[dict[str, Any]] = []
    for m in prompt.messages:
        content = m.get("content")
        if isinstance(content, list):
            out.extend(p for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return out


def decode_data_url(url: str) -> tuple[str, bytes]:
    """The media type and the bytes of a base64 ``data:`` URL (``data:image/png;base64,...``;
    RFC 2397 with the ``;base64`` form, the one image parts use). ValueError saying what is
    wrong: not a data URL, no ``,``, not base64-encoded, or not valid base64 (characters
    outside the alphabet, lost padding; whitespace, as in wrapped lines, is allowed)."""
    import base64
    import binascii

    if not url.startswith("data:"):
        raise ValueError("not a data: URL")
    head, comma, payload = url[len("data:"):].partition(",")
    if not comma:
        raise ValueError("a data: URL with no ',' before the data")
    media_type, *params = head.split(";")
    if "base64" not in (p.strip().lower() for p in params):
        raise ValueError("the data: URL must be base64 (data:<type>;base64,<data>)")
    try:
        data = base64.b64decode("".join(payload.split()), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"the data: URL's data is not valid base64 ({exc})") from None
    return media_type.strip().lower(), data


def image_bytes(part: Mapping[str, Any]) -> bytes:
    """The bytes of one image part (a ``file://`` path or a base64 ``data:`` URL, see
    :func:`decode_data_url`)."""
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    url = part["image_url"]["url"] if isinstance(part.get("image_url"), dict) else part["url"]
    if url.startswith("data:"):
        return decode_data_url(url)[1]
    parsed = urlparse(url)
    if parsed.scheme in ("file", ""):
        return Path(unquote(parsed.path)).read_bytes()
    raise ValueError(f"image URL scheme {parsed.scheme!r} not supported (use file:// or data:)")


def image_digests(prompt: Prompt) -> tuple[str, ...]:
    """sha256 of every image in the prompt, in order (they enter the cache key)."""
    return tuple(hashlib.sha256(image_bytes(p)).hexdigest() for p in image_parts(prompt))
