"""MSR prompts: segmentation and the faux conversation (chat) or plain continuation (completion).

Reference: docs/msr.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from copyprobe.artifacts import PROMPTS
from copyprobe.prompt import Prompt, PromptFormat


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
