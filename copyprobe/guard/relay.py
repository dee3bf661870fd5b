"""The proxy's output check (:mod:`copyprobe.guard.serve`): upstream answers rewritten by the
output-side guard (:mod:`copyprobe.guard.output`).

Non-streaming (:func:`check_completion`): each choice's ``message.content`` is checked whole;
``block`` replaces it with the block message, ``truncate`` cuts it before the first protected
span; either sets the choice's ``finish_reason`` to ``"content_filter"`` and adds a
``copyguard`` object (:func:`copyguard_info`: action, span_text, words, docs, count, message)
to the choice and, for the first such choice, to the response.

Streaming (:class:`StreamRelay`): the upstream's server-sent events are parsed as they arrive
(``data:`` lines, events ending at a blank line, split anywhere by the transport); each
choice's ``delta.content`` is fed to its own :class:`~copyprobe.guard.output.OutputStream`
and replaced by the text it releases (a span crossing chunk boundaries is caught; held-back
text is released when the choice finishes). When a choice hits, its last chunk carries
``finish_reason: "content_filter"``, the ``copyguard`` object and, for ``block``, the block
message as its content (for ``truncate``: the rest of the text before the span; the note is
``copyguard.message``). Once every choice has ended and one was stopped by the guard, the
relay sends ``data: [DONE]`` itself and the proxy closes the upstream response.

Decided here:

* ``n > 1``: one matcher per choice (by ``index``); a choice the guard stops ends alone, the
  others go on; the upstream is closed when all ``n`` have ended.
* Tool-call deltas (``delta.tool_calls``), ``role``, ``refusal`` and anything but
  ``delta.content`` pass through unchecked, as do events that are not JSON chat chunks
  (comments, errors); the output check reads the answer's text only.
* A chunk left with nothing to say (its content held back, no other field) is not sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from copyprobe.guard.output import OutputFinding, OutputGuard, OutputStream

CONTENT_FILTER = "content_filter"


#: one encoder for every event (``json.dumps`` with options builds one per call)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json(obj: Any) -> bytes:
    return _ENCODE(obj).encode("utf-8")


def copyguard_info(finding: OutputFinding, guard: OutputGuard,
                   choice: int = 0) -> dict[str, Any]:
    """The ``copyguard`` object of an answer the output check acted on."""
    span = finding.span
    assert span is not None
    return {"action": finding.action, "check": "output", "choice": choice,
            "span_text": span.text, "words": span.n_words, "count": span.count,
            "docs": [{"source": d.source, "doc_id": d.doc_id, "title": d.title}
                     for d in span.docs],
            "message": guard.message(span), "check_s": round(finding.check_s, 6)}


def check_completion(obj: dict[str, Any], guard: OutputGuard
                     ) -> tuple[dict[str, Any], list[OutputFinding]]:
    """A non-streaming chat completion with each choice's content checked (rewritten in
    place); the findings, one per choice with text content."""
    findings: list[OutputFinding] = []
    for choice in obj.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            continue
        finding = guard.check(content)
        findings.append(finding)
        if finding.action == "pass":
            continue
        message["content"] = finding.text
        choice["finish_reason"] = CONTENT_FILTER
        choice["copyguard"] = copyguard_info(finding, guard, int(choice.get("index", 0)))
        obj.setdefault("copyguard", choice["copyguard"])
    return obj, findings


class StreamRelay:
    """Rewrites one upstream SSE stream of ``n`` choices (see the module docstring):
    :meth:`feed` the bytes as they arrive, :meth:`finish` at the upstream's end; both return
    the bytes to send. ``done``: the guard ended the stream (stop reading, close the
    upstream); ``findings``: each choice's finding once decided."""

    def __init__(self, guard: OutputGuard, n: int = 1) -> None:
        self.guard = guard
        self.n = max(1, n)
        self.buf = b""
        self.streams: dict[int, OutputStream] = {}
        self.ended: set[int] = set()
        self.stopped = False       # some choice was stopped by the guard
        self.done = False
        self.findings: dict[int, OutputFinding] = {}
        self._last: dict[str, Any] = {}   # the last chat chunk (the guard's chunks copy it)

    # -- events --------------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        if self.done:
            return out
        buf = self.buf + data if self.buf else data
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        at = 0
        while not self.done:
            cut = buf.find(b"\n\n", at)
            if cut < 0:
                break
            out.extend(self._event(buf[at:cut + 2]))
            at = cut + 2
        self.buf = buf[at:] if at else buf
        return out

    def finish(self) -> list[bytes]:
        """The upstream ended: what is held is released (or decided) now."""
        if self.done:
            return []
        out = self._event(self.buf + b"\n\n") if self.buf.strip() else []
        out.extend(self._close_open())
        if self.stopped and not self.done:
            out.append(b"data: [DONE]\n\n")
            self.done = True
        return out

    @staticmethod
    def _payload(raw: bytes) -> str | None:
        """The event's data (its ``data:`` lines joined), None if it has none."""
        if raw.startswith(b"data: ") and raw.find(b"\n", 6) == len(raw) - 2:
            return raw[6:-2].decode("utf-8", errors="replace")  # one data line: most events
        lines = raw.decode("utf-8", errors="replace").split("\n")
        data = [ln[5:].removeprefix(" ") for ln in lines if ln.startswith("data:")]
        return "\n".join(data) if data else None

    def _event(self, raw: bytes) -> list[bytes]:
        payload = self._payload(raw)
        if payload is None:
            return [raw] if raw.strip() else []
        if payload.strip() == "[DONE]":
            out = self._close_open()
            self.done = True
            return [*out, b"data: [DONE]\n\n"]
        try:
            obj = json.loads(payload)
        except json.JSONDecodeError:
            return [raw]
        if not isinstance(obj, dict) or not isinstance(obj.get("choices"), list) \
                or not obj["choices"]:
            return [raw]  # an error, a usage-only chunk, ...
        self._last = obj
        out: list[bytes] = []
        kept = []
        for choice in obj["choices"]:
            if not isinstance(choice, dict):
                kept.append(choice)
                continue
            idx = int(choice.get("index", 0))
            if idx in self.ended:
                continue
            rewritten, final = self._choice(idx, choice)
            if rewritten is not None:
                kept.append(rewritten)
            if final is not None:
                out.append(final)
        events = [b"data: " + _json({**obj, "choices": kept}) + b"\n\n"] if kept else []
        events.extend(out)
        if len(self.ended) >= self.n and self.stopped:
            events.append(b"data: [DONE]\n\n")
            self.done = True
        return events

    @property
    def _base(self) -> dict[str, Any]:
        """The fields of the guard's own chunks taken from the upstream's last one."""
        return {k: self._last[k] for k in ("id", "object", "created", "model",
                                           "system_fingerprint") if k in self._last}

    def _choice(self, idx: int, choice: dict[str, Any]
                ) -> tuple[dict[str, Any] | None, bytes | None]:
        """The choice as sent on (None: nothing to send) and the guard's last chunk of it
        (None: not stopped)."""
        stream = self.streams.get(idx)
        if stream is None:
            stream = self.streams[idx] = self.guard.stream()
        delta = dict(choice.get("delta") or ())
        content = delta.get("content")
        release, finding = "", None
        if isinstance(content, str) and content:
            release, finding = stream.feed(content)
        if finding is None and choice.get("finish_reason") is not None:
            more, finding = stream.finish()
            release += more
        if finding is not None:
            self.findings[idx] = finding
            self.ended.add(idx)
            if finding.action != "pass":
                self.stopped = True
                return self._sendable(choice, delta, "", drop_finish=True), \
                    self._final(idx, finding, release)
        if release or "content" in delta:
            delta["content"] = release
        return self._sendable(choice, delta, release), None

    @staticmethod
    def _sendable(choice: dict[str, Any], delta: dict[str, Any], release: str, *,
                  drop_finish: bool = False) -> dict[str, Any] | None:
        if drop_finish:
            delta = {k: v for k, v in delta.items() if k != "content"}
            choice = {**choice, "finish_reason": None}
        if not release:
            if len(delta) <= ("content" in delta) and choice.get("finish_reason") is None:
                return None  # nothing but held-back content
            delta.pop("content", None)
        return {**choice, "delta": delta}

    def _final(self, idx: int, finding: OutputFinding, release: str) -> bytes:
        content = finding.text if finding.action == "block" else release
        return b"data: " + _json({
            **self._base, "choices": [{"index": idx, "delta": {"content": content},
                                       "logprobs": None, "finish_reason": CONTENT_FILTER}],
            "copyguard": copyguard_info(finding, self.guard, idx)}) + b"\n\n"

    def _close_open(self) -> list[bytes]:
        """Finish every choice still open (the upstream ended it without a finish_reason)."""
        out: list[bytes] = []
        for idx, stream in sorted(self.streams.items()):
            if idx in self.ended:
                continue
            release, finding = stream.finish()
            self.findings[idx] = finding
            self.ended.add(idx)
            if finding.action != "pass":
                self.stopped = True
                out.append(self._final(idx, finding, release))
            elif release:
                out.append(b"data: " + _json({**self._base, "choices": [
                    {"index": idx, "delta": {"content": release}, "logprobs": None,
                     "finish_reason": None}]}) + b"\n\n")
        return out


def output_summary(findings: Mapping[int, OutputFinding]) -> dict[str, Any]:
    """The request log's fields for the output check."""
    acted = [f for f in findings.values() if f.action != "pass"]
    first = acted[0] if acted else None
    return {"output_action": first.action if first else "pass",
            "output_s": round(sum(f.check_s for f in findings.values()), 6),
            "output_span_words": first.span.n_words if first and first.span else None}
