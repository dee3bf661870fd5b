"""The proxy's output check (:mod:`copyprobe.guard.serve`): upstream answers rewritten by the
output-side guard (:mod:`copyprobe.guard.output`).

:func:`check_completion` checks a whole chat completion; :class:`StreamRelay` rewrites an SSE
stream as it arrives (each choice's ``delta.content`` fed to its own
:class:`~copyprobe.guard.output.OutputStream`); :func:`completion_from_sse` and
:func:`sse_from_completion` read an answer sent in the other format than the one asked for.
An answer the check cannot read raises :class:`UpstreamFormatError`; a check that fails raises
:class:`OutputCheckError` (``on_error: raise``) or leaves the choice unchecked (``pass``).
What the client gets: docs/guard.md ("In the proxy").
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


try:  # several times faster per event than json (the relay's main cost); optional
    import orjson

    _json = orjson.dumps  # noqa: F811 (same output: compact, UTF-8)
    _loads = orjson.loads
except ImportError:  # pragma: no cover (depends on the install)
    _loads = json.loads


class UpstreamFormatError(Exception):
    """An upstream answer the output check cannot read (not the format asked for, an SSE
    event whose data is not JSON, an unknown content type)."""


class OutputCheckError(Exception):
    """The output check failed (``on_error: raise``): the answer is not relayed."""


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


def _failed(exc: Exception, on_error: str, errors: dict[int, str], idx: int) -> None:
    """A check that raised: :class:`OutputCheckError` under ``raise``, else recorded."""
    msg = f"{type(exc).__name__}: {exc}"[:500]
    if on_error == "raise":
        raise OutputCheckError(f"the output check failed: {msg}") from exc
    errors[idx] = msg


def _unchecked(text: str, check_s: float = 0.0) -> OutputFinding:
    return OutputFinding("unchecked", None, text, None, check_s)


def check_completion(obj: dict[str, Any], guard: OutputGuard, on_error: str = "raise",
                     errors: dict[int, str] | None = None
                     ) -> tuple[dict[str, Any], list[OutputFinding]]:
    """A non-streaming chat completion with each choice's content checked (rewritten in
    place); the findings, one per choice with text content (``unchecked`` where the check
    failed under ``on_error: pass``; the error goes to ``errors``)."""
    findings: list[OutputFinding] = []
    errors = {} if errors is None else errors
    for choice in obj.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            continue
        idx = int(choice.get("index", 0))
        try:
            finding = guard.check(content)
        except Exception as exc:  # noqa: BLE001 (a damaged or vanished index, ...)
            _failed(exc, on_error, errors, idx)
            findings.append(_unchecked(content))
            continue
        findings.append(finding)
        if finding.action == "pass":
            continue
        message["content"] = finding.text
        choice["finish_reason"] = CONTENT_FILTER
        choice["copyguard"] = copyguard_info(finding, guard, idx)
        obj.setdefault("copyguard", choice["copyguard"])
    return obj, findings


# -- the other format ---------------------------------------------------------------------------

def sse_events(data: bytes) -> list[bytes]:
    """The data of each event of an SSE body (``data:`` lines joined); comments and events
    without data are left out."""
    out = []
    for raw in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = [ln[5:].removeprefix(b" ") for ln in raw.split(b"\n") if ln.startswith(b"data:")]
        if lines:
            out.append(b"\n".join(lines))
    return out


def completion_from_sse(data: bytes) -> dict[str, Any]:
    """The chat completion a whole SSE stream of chat chunks adds up to (each choice's content
    joined, its last finish_reason); :class:`UpstreamFormatError` when an event is not JSON or
    no event is a chat chunk."""
    base: dict[str, Any] = {}
    choices: dict[int, dict[str, Any]] = {}
    for payload in sse_events(data):
        if payload.strip() == b"[DONE]":
            break
        obj = _parse_event(payload)
        if not isinstance(obj, dict):
            continue
        for k in ("id", "created", "model", "system_fingerprint", "usage"):
            if obj.get(k) is not None:
                base[k] = obj[k]
        for ch in obj.get("choices") or []:
            if not isinstance(ch, dict):
                continue
            c = choices.setdefault(int(ch.get("index", 0)), {"role": "assistant", "content": "",
                                                            "finish_reason": None})
            delta = ch.get("delta") or {}
            if isinstance(delta.get("content"), str):
                c["content"] += delta["content"]
            if delta.get("role"):
                c["role"] = delta["role"]
            if ch.get("finish_reason") is not None:
                c["finish_reason"] = ch["finish_reason"]
    if not choices:
        raise UpstreamFormatError("the upstream's event stream holds no chat completion chunk")
    return {**base, "object": "chat.completion", "choices": [
        {"index": i, "message": {"role": c["role"], "content": c["content"]}, "logprobs": None,
         "finish_reason": c["finish_reason"]} for i, c in sorted(choices.items())]}


def sse_from_completion(obj: dict[str, Any]) -> list[bytes]:
    """A (checked) chat completion as the events of a stream: one chunk per choice with its
    whole content (and its ``copyguard`` object), then ``[DONE]``."""
    base = {k: obj[k] for k in ("id", "created", "model", "system_fingerprint") if k in obj}
    out = []
    for ch in obj.get("choices") or []:
        message = ch.get("message") or {}
        delta = {"role": message.get("role", "assistant"), "content": message.get("content")}
        chunk: dict[str, Any] = {**base, "object": "chat.completion.chunk", "choices": [
            {"index": ch.get("index", 0), "delta": delta, "logprobs": None,
             "finish_reason": ch.get("finish_reason")}]}
        if "copyguard" in ch:
            chunk["copyguard"] = ch["copyguard"]
        out.append(b"data: " + _json(chunk) + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


def _string(literal: bytes) -> str | None:
    """The string a JSON string literal holds (None: not exactly one JSON string)."""
    if literal[:1] != b'"' or literal[-1:] != b'"':
        return None
    try:
        value = _loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _parse_event(payload: bytes | str) -> Any:
    try:
        return _loads(payload)
    except ValueError:
        text = bytes(payload[:80]) if isinstance(payload, bytes) else payload[:80].encode()
        raise UpstreamFormatError(f"an event of the upstream's stream is not JSON: "
                                  f"{text!r}") from None


# -- streams -----------------------------------------------------------------------------------

_MARK = "\u2063copyguard-content\u2063"  # (invisible separators: never in a chunk's fields)
_PLAIN_CHOICE_KEYS = frozenset(("index", "delta", "finish_reason", "logprobs"))


def _plain_delta(obj: Any) -> dict[str, Any] | None:
    """The one choice of a chunk that only adds content to it (most events), else None."""
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    c = choices[0]
    if not isinstance(c, dict) or c.get("finish_reason") is not None \
            or c.get("logprobs") is not None or not _PLAIN_CHOICE_KEYS.issuperset(c):
        return None
    d = c.get("delta")
    if not isinstance(d, dict) or len(d) != 1 or not isinstance(d.get("content"), str):
        return None
    return c


def _same_run(first: dict[str, Any], choice: dict[str, Any], obj: dict[str, Any],
              plain: dict[str, Any]) -> bool:
    """Whether ``obj`` continues the run begun by ``first``: the same choice, every other
    field equal."""
    return (plain.get("index", 0) == choice.get("index", 0) and len(obj) == len(first)
            and all(k == "choices" or first.get(k) == v for k, v in obj.items()))


class StreamRelay:
    """Rewrites one upstream SSE stream of ``n`` choices (see the module docstring):
    :meth:`feed` the bytes as they arrive, :meth:`finish` at the upstream's end; both return
    the bytes to send. ``done``: the guard ended the stream (stop reading, close the
    upstream); ``findings``: each choice's finding once decided; ``errors``: the choices whose
    check failed under ``on_error: pass`` (then relayed unchecked from there on)."""

    def __init__(self, guard: OutputGuard, n: int = 1, on_error: str = "raise") -> None:
        self.guard = guard
        self.n = max(1, n)
        self.on_error = on_error
        self.buf = b""
        self.streams: dict[int, OutputStream] = {}
        self.ended: set[int] = set()
        self.stopped = False       # some choice was stopped by the guard
        self.done = False
        self.findings: dict[int, OutputFinding] = {}
        self.errors: dict[int, str] = {}
        self.released = False      # some text (or the guard's last chunk) was let through
        self._last: dict[str, Any] = {}   # the last chat chunk (the guard's chunks copy it)
        #: the upstream's plain delta around its content: (head, tail, chunk, choice)
        self._shape: tuple[bytes, bytes, dict[str, Any], dict[str, Any]] | None = None
        #: a plain delta's encoding around its content: (chunk, choice, head, tail)
        self._template: tuple[dict[str, Any], dict[str, Any], bytes, bytes] | None = None

    # -- events --------------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        if self.done:
            return out
        buf = self.buf + data if self.buf else data
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        at, events = 0, []
        while True:
            cut = buf.find(b"\n\n", at)
            if cut < 0:
                break
            events.append(buf[at:cut + 2])
            at = cut + 2
        self.buf = buf[at:] if at else buf
        return self._events(events)

    def _events(self, events: list[bytes]) -> list[bytes]:
        """The events of one read; consecutive plain content deltas of a choice are checked
        and sent on as one (what arrived together is relayed together)."""
        out: list[bytes] = []
        run: tuple[dict[str, Any], dict[str, Any], list[str]] | None = None
        for raw in events:
            if self.done:
                return out
            payload = self._payload(raw)
            obj = None
            if payload is not None and payload.strip() != b"[DONE]":
                shape, content = self._shape, None
                if shape is not None and payload.startswith(shape[0]) \
                        and payload.endswith(shape[1]):
                    content = _string(payload[len(shape[0]):len(payload) - len(shape[1])])
                if content is not None:  # shaped as the last plain delta: no parse needed
                    obj, plain = shape[2], shape[3]
                else:
                    obj = _parse_event(payload)
                    plain = _plain_delta(obj)
                    if plain is not None:
                        content = plain["delta"]["content"]
                        self._learn(payload, obj, plain, content)
                if plain is not None:
                    if run is not None and (run[0] is obj or _same_run(run[0], run[1], obj,
                                                                       plain)):
                        run[2].append(content)
                        continue
                    if run is not None:
                        out.extend(self._run(run))
                    run = (obj, plain, [content])
                    continue
            if run is not None:
                out.extend(self._run(run))
                run = None
            if not self.done:
                out.extend(self._event(raw, payload, obj))
        if run is not None and not self.done:
            out.extend(self._run(run))
        return out

    def _learn(self, payload: bytes, obj: dict[str, Any], plain: dict[str, Any],
               content: str) -> None:
        """Remember how the upstream writes a plain delta: the bytes around its content's
        string, when that string occurs once and right after ``"content":``. A later payload
        with the same bytes around one JSON string is that chunk with that content."""
        for lit in (_ENCODE(content).encode("utf-8"), json.dumps(content).encode("ascii")):
            at = payload.find(lit)
            if at >= 0 and payload.find(lit, at + 1) < 0 \
                    and payload[:at].rstrip().endswith(b'"content":'):
                self._shape = (payload[:at], payload[at + len(lit):], obj, plain)
                return
        self._shape = None

    def _run(self, run: tuple[dict[str, Any], dict[str, Any], list[str]]) -> list[bytes]:
        """A run of plain content deltas of one choice (:func:`_plain_delta`): each delta
        checked as it came, what is released sent as one event."""
        obj, choice, parts = run
        idx = int(choice.get("index", 0))
        if idx in self.ended:
            return []
        self._last = obj
        rewritten, final = self._choice(idx, choice, parts)
        events = [] if rewritten is None else [self._encode(obj, choice, rewritten)]
        if final is not None:
            events.append(final)
        if len(self.ended) >= self.n and self.stopped:
            events.append(b"data: [DONE]\n\n")
            self.done = True
        return events

    def _encode(self, obj: dict[str, Any], choice: dict[str, Any],
                rewritten: dict[str, Any]) -> bytes:
        """``obj`` with its one choice ``rewritten``, as an event; a choice that differs from
        ``choice`` in its content only is spliced into the encoding of the run's first event
        (one string encoded instead of the whole chunk)."""
        delta = rewritten.get("delta")
        content = delta.get("content") if isinstance(delta, dict) and len(delta) == 1 else None
        if not isinstance(content, str) or len(rewritten) != len(choice) \
                or rewritten.get("finish_reason") is not None:
            return b"data: " + _json({**obj, "choices": [rewritten]}) + b"\n\n"
        t = self._template
        if t is None or len(choice) != len(t[1]) or not _same_run(t[0], t[1], obj, choice):
            enc = _json({**obj, "choices": [{**choice, "delta": {"content": _MARK}}]})
            head, _, tail = enc.partition(_json(_MARK))
            t = self._template = (obj, choice, b"data: " + head, tail + b"\n\n")
        return t[2] + _json(content) + t[3]

    def finish(self) -> list[bytes]:
        """The upstream ended: what is held is released (or decided) now."""
        if self.done:
            return []
        out = self._events([self.buf + b"\n\n"]) if self.buf.strip() else []
        out.extend(self._close_open())
        if self.stopped and not self.done:
            out.append(b"data: [DONE]\n\n")
            self.done = True
        return out

    @staticmethod
    def _payload(raw: bytes) -> bytes | None:
        """The event's data (its ``data:`` lines joined), None if it has none."""
        if raw.startswith(b"data: ") and raw.find(b"\n", 6) == len(raw) - 2:
            return raw[6:-2]  # one data line: most events
        data = [ln[5:].removeprefix(b" ") for ln in raw.split(b"\n") if ln.startswith(b"data:")]
        return b"\n".join(data) if data else None

    def _event(self, raw: bytes, payload: bytes | None, obj: Any) -> list[bytes]:
        if payload is None:
            return [raw] if raw.strip() else []  # a comment, an event without data
        if obj is None:  # [DONE]
            out = self._close_open()
            self.done = True
            return [*out, b"data: [DONE]\n\n"]
        return self._chunk(obj, raw)

    def _chunk(self, obj: Any, raw: bytes, parts: list[str] | None = None) -> list[bytes]:
        """A parsed event; ``parts``: the deltas a run's one choice joined (each checked as
        it came, so the decisions are those of the events one by one)."""
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
            rewritten, final = self._choice(idx, choice, parts)
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

    def _step(self, idx: int, stream: OutputStream, content: str | None
              ) -> tuple[str, OutputFinding | None]:
        """``stream.feed(content)`` (``finish()`` when ``content`` is None); where the check
        fails under ``on_error: pass``, the text it held and ``content`` unchecked."""
        try:
            return stream.feed(content) if content is not None else stream.finish()
        except Exception as exc:  # noqa: BLE001 (a damaged or vanished index, ...)
            _failed(exc, self.on_error, self.errors, idx)
            held = stream.text[stream.released:]
            stream.released = len(stream.text)
            return held, (_unchecked(stream.text, stream.check_s) if content is None else None)

    def _choice(self, idx: int, choice: dict[str, Any], parts: list[str] | None = None
                ) -> tuple[dict[str, Any] | None, bytes | None]:
        """The choice as sent on (None: nothing to send) and the guard's last chunk of it
        (None: not stopped)."""
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if idx in self.errors:  # unchecked from its failure on
            self.released = True
            if choice.get("finish_reason") is not None:
                self.ended.add(idx)
                self.findings[idx] = _unchecked(self.streams[idx].text)
            if parts is not None:  # a run: its choice holds the first delta's content only
                choice = {**choice, "delta": {**delta, "content": "".join(parts)}}
            return choice, None
        stream = self.streams.get(idx)
        if stream is None:
            stream = self.streams[idx] = self.guard.stream()
        delta = dict(delta)
        release, finding = "", None
        pieces = parts or ([content] if isinstance(content, str) and content else [])
        before = ""  # released by the pieces before the one that decided
        for i, piece in enumerate(pieces):
            before = release
            more, finding = self._step(idx, stream, piece)
            release += more
            if idx in self.errors:  # the rest unchecked
                release += "".join(pieces[i + 1:])
            if finding is not None or idx in self.errors:
                break
        if finding is None and choice.get("finish_reason") is not None:
            before = release
            more, finding = self._step(idx, stream, None)
            release += more
        self.released |= bool(release)
        if finding is not None:
            self.findings[idx] = finding
            self.ended.add(idx)
            if finding.action not in ("pass", "unchecked"):
                self.stopped = self.released = True
                if finding.action == "block" and before:  # sent before the block message
                    rest = {k: v for k, v in delta.items() if k != "content"}
                    return {**choice, "finish_reason": None,
                            "delta": {**rest, "content": before}}, \
                        self._final(idx, finding, "")
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
            if idx in self.errors:
                release, finding = "", _unchecked(stream.text)
            else:
                release, finding = self._step(idx, stream, None)
            self.findings[idx] = finding
            self.ended.add(idx)
            self.released |= bool(release) or finding.action not in ("pass", "unchecked")
            if finding.action not in ("pass", "unchecked"):
                self.stopped = True
                out.append(self._final(idx, finding, release))
            elif release:
                out.append(b"data: " + _json({**self._base, "choices": [
                    {"index": idx, "delta": {"content": release}, "logprobs": None,
                     "finish_reason": None}]}) + b"\n\n")
        return out


def output_summary(findings: Mapping[int, OutputFinding],
                   errors: Mapping[int, str] | None = None) -> dict[str, Any]:
    """The request log's fields for the output check."""
    acted = [f for f in findings.values() if f.action != "pass"]
    first = acted[0] if acted else None
    out = {"output_action": first.action if first else ("unchecked" if errors else "pass"),
           "output_s": round(sum(f.check_s for f in findings.values()), 6),
           "output_span_words": first.span.n_words if first and first.span else None}
    if errors:
        out["output_errors"] = {str(k): v for k, v in errors.items()}
    return out
