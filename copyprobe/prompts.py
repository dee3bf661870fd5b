"""MSR prompts: segmentation and the faux conversation (chat) or plain continuation (completion).

Semantics reproduce the MSR authors' scripts exactly (see FACTS section 1):

* the text is cut at the first occurrence of ``cut_at`` (Wikipedia: ``"References"``), split on
  whitespace and truncated to ``num_words`` words;
* ``n`` (even) parts of ``len(words) // n`` words each, the last part taking the remainder,
  each joined with single spaces;
* chat: a system message, then parts 1..n-1 alternating user (odd) / assistant (even); part n is
  held out as the reference the model should write as the next assistant turn;
* completion (base models without a chat template): parts 1..n-1 joined by single spaces as a
  plain-text prompt that the model continues.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from copyprobe.artifacts import PROMPTS

PromptFormat = Literal["chat", "completion"]


class TooShort(ValueError):
    """The document has too few words for ``n`` segments."""


def segment(text: str, n: int, num_words: int | None = None, cut_at: str | None = None,
            min_segment_words: int = 1) -> list[str]:
    """Split ``text`` into ``n`` parts as the MSR authors did."""
    if n < 2 or n % 2:
        raise ValueError(f"n must be an even number >= 2, got {n}")
    if cut_at and cut_at in text:
        text = text.split(cut_at)[0]
    words = text.strip().split()
    if num_words is not None:
        words = words[:num_words]
    per = len(words) // n
    if per < min_segment_words:
        raise TooShort(f"{len(words)} words: too short for n={n} segments of at least "
                       f"{min_segment_words} word(s)")
    parts = [" ".join(words[i * per:(i + 1) * per]) for i in range(n - 1)]
    parts.append(" ".join(words[(n - 1) * per:]))
    return parts


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


def image_bytes(part: Mapping[str, Any]) -> bytes:
    """The bytes of one image part (a ``file://`` path or a base64 ``data:`` URL)."""
    import base64
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    url = part["image_url"]["url"] if isinstance(part.get("image_url"), dict) else part["url"]
    if url.startswith("data:"):
        return base64.b64decode(url.split(",", 1)[1])
    parsed = urlparse(url)
    if parsed.scheme in ("file", ""):
        return Path(unquote(parsed.path)).read_bytes()
    raise ValueError(f"image URL scheme {parsed.scheme!r} not supported (use file:// or data:)")


def image_digests(prompt: Prompt) -> tuple[str, ...]:
    """sha256 of every image in the prompt, in order (they enter the cache key)."""
    return tuple(hashlib.sha256(image_bytes(p)).hexdigest() for p in image_parts(prompt))


def build_prompt(parts: list[str], prompt_format: PromptFormat,
                 system_message: str | None) -> tuple[Prompt, str]:
    """Return (prompt, reference) for segmented ``parts``; the reference is the last part."""
    shown, reference = parts[:-1], parts[-1]
    if prompt_format == "chat":
        msgs: list[dict[str, str]] = []
        if system_message:
            msgs.append({"role": "system", "content": system_message})
        for i, part in enumerate(shown, start=1):
            msgs.append({"role": "user" if i % 2 else "assistant", "content": part})
        return Prompt("chat", messages=tuple(msgs)), reference
    if prompt_format == "completion":
        return Prompt("completion", text=" ".join(shown)), reference
    raise ValueError(f"unknown prompt format {prompt_format!r}")


def request_id(model: str, doc_id: str, prompt: Prompt) -> str:
    h = hashlib.sha256(prompt.to_json().encode()).hexdigest()[:12]
    return f"{model}:{doc_id}:{h}"


def build_prompts(corpus: pd.DataFrame, curated: pd.DataFrame, *, model: str,
                  msr: Mapping[str, Any], cut_at: str | None) -> pd.DataFrame:
    """The PROMPTS table for the kept documents of ``curated`` (one row each; too-short
    documents get status 'skipped' with the reason)."""
    kept = curated[curated["kept"]][["doc_id", "split"]]
    docs = corpus.merge(kept, on="doc_id", how="inner", validate="one_to_one")
    rows = []
    for doc in docs.itertuples(index=False):
        base = {"model": model, "source": doc.source, "doc_id": doc.doc_id, "split": doc.split,
                "prompt_format": msr["prompt_format"], "document": doc.text,
                "n": msr["n"], "num_words": msr["num_words"]}
        try:
            parts = segment(doc.text, msr["n"], msr["num_words"], cut_at,
                            msr["min_segment_words"])
        except TooShort as exc:
            rows.append({**base, "request_id": f"{model}:{doc.doc_id}:skipped",
                         "status": "skipped", "reason": str(exc), "prompt": None,
                         "reference": None})
            continue
        prompt, reference = build_prompt(parts, msr["prompt_format"], msr["system_message"])
        rows.append({**base, "request_id": request_id(model, doc.doc_id, prompt),
                     "status": "ready", "reason": "", "prompt": prompt.to_json(),
                     "reference": reference})
    return pd.DataFrame(rows, columns=PROMPTS.columns)
