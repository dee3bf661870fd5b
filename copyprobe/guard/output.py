"""The output-side guard: the model's answer checked against an index of protected materials.

Reference: docs/guard.md.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from copyprobe.spans.encoding import BYTE_UNITS
from copyprobe.spans.stream import SpanLength, StreamHit, WindowFilter, WindowMatcher
from copyprobe.spans.types import DocHit, Span, SpanLookup

OUTPUT_ACTIONS = ("block", "truncate")
#: ``finish_reason`` of an answer the guard gave instead of the model's (the input checks'
#: block, or the output check's).
BLOCK_FINISH_REASON = "guard_block"
#: ``finish_reason`` of an answer the output check cut before a protected span.
TRUNCATE_FINISH_REASON = "guard_truncate"
_FINISH = {"pass": None, "block": BLOCK_FINISH_REASON, "truncate": TRUNCATE_FINISH_REASON}
#: Characters of each script without spaces that count as one word of ``min_words``
#: (docs/guard.md: measured chance recurrence in real texts; 12 words: 12 Chinese
#: characters, 24 Japanese kana, 32 Thai characters).
CHARS_PER_WORD = {"han": 1.0, "kana": 2.0, "thai": 2.7}

OUTPUT_BLOCK_TEXT = (
    "I can't provide this answer: {reason} Reproducing protected material would infringe its "
    "rights holder's copyright. I can summarise it, discuss its ideas, or tell you about the "
    "work and its author instead."
)


def output_reason(span: Span) -> str:
    """One sentence saying what the answer reproduces."""
    titles = [d.title or d.doc_id for d in span.docs]
    what = f' ("{titles[0]}")' if titles else ""
    return (f"The answer reproduces {span.n_words} or more consecutive words of protected "
            f"material{what}.")


def _span_from_dict(d: Mapping[str, Any]) -> Span:
    docs = tuple(DocHit(**h) for h in d.get("docs") or ())
    return Span(**{**d, "docs": docs})


@dataclass(frozen=True)
class OutputFinding:
    """The output check's decision on one answer.

    ``action``: ``pass``, ``block`` or ``truncate``; ``span``: the first protected span with
    its documents (None on pass; in a stream, its first ``min_words`` words); ``text``: what
    the client gets (the answer, the text before the span, or the block message);
    ``finish_reason``: None on pass, else ``guard_block`` / ``guard_truncate``; ``check_s``:
    seconds the check took."""

    action: str
    span: Span | None
    text: str
    finish_reason: str | None
    check_s: float

    def as_record(self) -> dict[str, Any]:
        """Flat columns (the guard's decisions table)."""
        s = self.span
        return {"output_action": self.action,
                "output_span_words": s.n_words if s is not None else None,
                "output_span_text": s.text if s is not None else None,
                "output_doc_ids": [d.doc_id for d in s.docs] if s is not None else None,
                "output_s": self.check_s}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OutputFinding:
        span = d.get("span")
        return cls(action=d["action"], span=_span_from_dict(span) if span else None,
                   text=d["text"], finish_reason=d.get("finish_reason"),
                   check_s=float(d.get("check_s") or 0.0))


class OutputGuard:
    """Checks answers against ``index`` (any :class:`~copyprobe.spans.types.SpanLookup`: the
    suffix-array :class:`~copyprobe.spans.index.SpanIndex`, or a small
    :class:`~copyprobe.spans.reference.MemoryIndex`). Thread-safe: each stream keeps its own
    state, and the index is only read.

    ``prefilter``: streams ask a :class:`~copyprobe.spans.stream.WindowFilter` of the index's
    ``min_words``-word windows first and the index only for a window it may hold (exact
    either way; about 2 us a word instead of an index query). ``None`` (the default) builds
    it when the index is small enough (``WindowFilter.from_index``), True requires it,
    False never builds it."""

    def __init__(self, index: SpanLookup, *, min_words: int = 12, action: str = "block",
                 block_text: str | None = None, max_docs: int = 5,
                 prefilter: bool | None = None,
                 chars_per_word: Mapping[str, float] | None = None) -> None:
        if action not in OUTPUT_ACTIONS:
            raise ValueError(f"output action must be one of {', '.join(OUTPUT_ACTIONS)}, got "
                             f"{action!r}")
        if not isinstance(min_words, int) or min_words < 1:
            raise ValueError(f"min_words must be a positive integer, got {min_words!r}")
        if not isinstance(max_docs, int) or max_docs < 1:
            raise ValueError(f"max_docs must be a positive integer, got {max_docs!r}")
        self.index = index
        self.min_words = min_words
        # in a model's tokens no unit is a character of a script: every unit counts alike
        self.length = SpanLength.of(min_words, None if index.unit not in BYTE_UNITS else
                                    {**CHARS_PER_WORD, **(chars_per_word or {})})
        self.action = action
        self.block_text = block_text
        self.max_docs = max_docs
        self.window_filter: WindowFilter | None = None
        if prefilter is not False:
            self.window_filter = WindowFilter.from_index(
                index, self.length, max_windows=2**62 if prefilter else 4_000_000)
            if prefilter and self.window_filter is None:
                raise ValueError(f"cannot read the documents of {type(index).__name__} for "
                                 "the prefilter")

    def message(self, span: Span) -> str:
        """The block message for an answer holding ``span`` (also the note a truncated
        answer's client is given)."""
        return (self.block_text or OUTPUT_BLOCK_TEXT).format(reason=output_reason(span))

    def decide(self, text: str, span: Span | None, check_s: float) -> OutputFinding:
        """The finding for ``text`` whose first protected span is ``span`` (None: none)."""
        if span is None:
            return OutputFinding("pass", None, text, None, check_s)
        out = self.message(span) if self.action == "block" else text[:span.char_start]
        return OutputFinding(self.action, span, out, _FINISH[self.action], check_s)

    def check(self, text: str) -> OutputFinding:
        """The whole answer ``text`` checked."""
        t0 = time.perf_counter()
        spans = self.index.find_spans(text, min_words=self.length.min_units,
                                      max_docs=self.max_docs)
        if not self.length.uniform:
            spans = [s for s in spans if self.length.reaches(s.text.split())]
        return self.decide(text, spans[0] if spans else None, time.perf_counter() - t0)

    def stream(self) -> OutputStream:
        return OutputStream(self)


class OutputStream:
    """One streamed answer: :meth:`feed` each delta, then :meth:`finish`. Each returns the
    text that may be released now (a prefix of the answer, in order) and the finding once
    decided: from a hit on (every later call returns ``("", finding)``), or at
    :meth:`finish`, which always returns one (``pass`` when nothing matched)."""

    def __init__(self, guard: OutputGuard) -> None:
        self.guard = guard
        self.matcher = WindowMatcher(guard.index, guard.min_words, max_docs=guard.max_docs,
                                     window_filter=guard.window_filter, length=guard.length)
        self.released = 0      # characters of the answer released so far
        self.check_s = 0.0
        self.finding: OutputFinding | None = None

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return self.matcher.text

    def _step(self, hit: StreamHit | None, t0: float) -> tuple[str, OutputFinding | None]:
        m = self.matcher
        if hit is not None:
            end = hit.span.char_start if self.guard.action == "truncate" else self.released
        else:
            end = m.safe_end()
        release = m.text[self.released:end] if end > self.released else ""
        self.released = max(self.released, end)
        self.check_s += time.perf_counter() - t0
        if hit is not None:
            self.finding = self.guard.decide(m.text, hit.span, self.check_s)
        elif m.words.finished:
            self.finding = OutputFinding("pass", None, m.text, None, self.check_s)
        return release, self.finding

    def feed(self, delta: str) -> tuple[str, OutputFinding | None]:
        if self.finding is not None:
            return "", self.finding
        t0 = time.perf_counter()
        return self._step(self.matcher.feed(delta), t0)

    def finish(self) -> tuple[str, OutputFinding]:
        if self.finding is not None:
            return "", self.finding
        t0 = time.perf_counter()
        release, finding = self._step(self.matcher.finish(), t0)
        assert finding is not None
        return release, finding
