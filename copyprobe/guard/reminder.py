"""The reminder: what the guard tells the model (policy ``remind``) or the user (policy
``block``) when an infringing request meets protected material.

``remind`` adds the reason to the prompt, either as a system message placed first (style
``system``; an existing first system message gets the reminder appended after a blank line)
or in front of the last user message's text (style ``prefix``, for models whose chat template
has no system role, and for plain-text prompts). ``block`` answers with a refusal message and
the model is never called. The wording is copyprobe's own; a config may replace either text
(``reminder_text``, ``block_text``), with ``{reason}`` standing for the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.prompt import Prompt

POLICIES = ("remind", "block")
STYLES = ("system", "prefix")

#: Words for each task a risk analyzer reports, as they appear in a reason.
TASK_WORDS = {
    "repetition": "reproduce the text word for word",
    "extraction": "copy out a part of the text",
    "paraphrase": "restate the text closely in other words",
    "translation": "translate the text in full",
}

REMINDER_TEXT = (
    "Copyright check: {reason} Reproducing, extracting, closely paraphrasing or fully "
    "translating protected material would infringe its rights holder's copyright. Do not "
    "output the protected text or a close rendering of it. Say briefly why, and offer what "
    "you can do instead: a short summary, a discussion of its ideas, or information about "
    "the work and its author."
)

BLOCK_TEXT = (
    "I can't help with this request: {reason} Providing the protected text, a part of it, a "
    "close paraphrase or a full translation would infringe its rights holder's copyright. I "
    "can summarise it, discuss its ideas, or tell you about the work and its author instead."
)


def reason_text(*, notice: str | None = None, status_basis: str | None = None,
                title: str | None = None, task: str | None = None) -> str:
    """One or two sentences saying why the guard acts: what marks the material as protected
    and what the request asks for."""
    if notice:
        why = f'the material carries the copyright notice "{notice}"'
    elif status_basis:
        what = f'"{title}"' if title else "the material"
        why = f"{what} appears to be under copyright (determined by {status_basis})"
    else:
        why = "the material is treated as protected"
    wants = TASK_WORDS.get(task or "", "use the text in a way that may infringe its copyright")
    return f"{why[0].upper()}{why[1:]}, and the request asks to {wants}."


def reminder_message(reason: str, template: str | None = None) -> str:
    """The text added to the prompt under policy ``remind``."""
    return (template or REMINDER_TEXT).format(reason=reason)


def block_message(reason: str, template: str | None = None) -> str:
    """The answer returned instead of the model's under policy ``block``."""
    return (template or BLOCK_TEXT).format(reason=reason)


def _with_prefix(content: Any, text: str) -> Any:
    if isinstance(content, str):
        return f"{text}\n\n{content}"
    if isinstance(content, list):
        return [{"type": "text", "text": text}, *content]
    raise ValueError(f"cannot add a reminder to message content of type "
                     f"{type(content).__name__}")


def add_reminder(prompt: Prompt, text: str, style: str = "system") -> Prompt:
    """``prompt`` with ``text`` added (see the module docstring for the two styles)."""
    if style not in STYLES:
        raise ValueError(f"reminder style must be one of {', '.join(STYLES)}, got {style!r}")
    if prompt.format == "completion":
        return Prompt("completion", text=f"{text}\n\n{prompt.text}")
    messages: list[Mapping[str, Any]] = [dict(m) for m in prompt.messages]
    if style == "system":
        if messages and messages[0].get("role") == "system" \
                and isinstance(messages[0].get("content"), str):
            first = messages[0]
            messages[0] = {**first, "content": f"{first['content']}\n\n{text}"}
        else:
            messages.insert(0, {"role": "system", "content": text})
        return Prompt("chat", messages=tuple(messages))
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            messages[i] = {**messages[i], "content": _with_prefix(messages[i].get("content"),
                                                                  text)}
            return Prompt("chat", messages=tuple(messages))
    raise ValueError("the prompt has no user message to add the reminder to")
