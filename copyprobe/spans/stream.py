"""Span detection on a text that arrives in pieces (a streamed model answer).

Reference: docs/span-index.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from copyprobe.matching.words import SCRIPTS, script_of
from copyprobe.spans.encoding import BYTE_UNITS, settled
from copyprobe.spans.types import Span, SpanIndexError, SpanLookup, Tokens


def check_stream_unit(index: SpanLookup) -> None:
    """Streams are matched in the byte-level units only: in the unit ``tokens`` a model's
    tokens of a text's prefix are not the prefix of the text's tokens (a BPE merges across
    the pieces' boundaries, a piece may end inside a character), so a span could be missed or
    a protected word released. Refused with an error rather than guessed."""
    if index.unit not in BYTE_UNITS:
        raise SpanIndexError(
            f"the streaming output check cannot use an index in unit {index.unit!r} (a "
            "model's tokens of a stream's prefix are not a prefix of the whole answer's "
            "tokens); guard streams with an index in unit words or whitespace, or check "
            "whole answers (OutputGuard.check)")


class StreamTokens:
    """Incremental tokens of a stream: ``tokens``/``starts``/``ends`` of the complete words
    so far (offsets into ``text``, everything fed)."""

    def __init__(self, tokenize: Callable[[str], Tokens]) -> None:
        self._tokenize = tokenize
        self.text = ""         # everything fed
        self.done = 0          # text[:done] is tokenized (encoding.settled)
        self.tokens: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.finished = False

    def __len__(self) -> int:
        return len(self.tokens)

    def _take(self, end: int) -> int:
        """Tokenize ``text[done:end]``; the number of new tokens."""
        seg = self.text[self.done:end]
        if not seg:
            return 0
        toks = self._tokenize(seg)
        base = self.done
        self.tokens += toks.tokens
        self.starts += [s + base for s in toks.starts]
        self.ends += [e + base for e in toks.ends]
        self.done = end
        return len(toks.tokens)

    def feed(self, delta: str) -> int:
        """Append ``delta``; the number of words it completed."""
        if self.finished:
            raise ValueError("the stream is finished")
        if not delta:
            return 0
        before = len(self.text)
        self.text += delta
        cut = settled(self.text, before)
        return self._take(cut) if cut > self.done else 0

    def finish(self) -> int:
        """The end of the stream: the pending word (if any) is complete; the number of new
        words."""
        if self.finished:
            return 0
        self.finished = True
        return self._take(len(self.text))


def indexed_documents(index: SpanLookup) -> Iterator[list[str]]:
    """The tokens of every document an index holds, read from the index itself: the shards'
    stored bytes of a :class:`~copyprobe.spans.index.SpanIndex` (``shards[k].tok``:
    0xFF then the encoded document), the documents of a
    :class:`~copyprobe.spans.reference.MemoryIndex` (``docs``). Another kind of index is a
    TypeError (so is an index in the unit ``tokens``: its documents are ids, not words)."""
    if index.unit not in BYTE_UNITS:
        raise TypeError(f"the documents of an index in unit {index.unit!r} are token ids")
    shards = getattr(index, "shards", None)
    if shards is not None:
        for shard in shards:
            for doc in bytes(shard.tok).split(b"\xff"):
                if doc:
                    yield doc.decode("utf-8").split()
        return
    docs = getattr(index, "docs", None)
    if docs is None:
        raise TypeError(f"cannot read the documents of a {type(index).__name__}")
    for d in docs:
        yield index.tokenize(d.text).tokens


@dataclass(frozen=True)
class SpanLength:
    """How long a span must be: ``min_words`` words, a character of a script group of
    ``chars_per_word`` (:data:`~copyprobe.matching.words.SCRIPTS`: ``han``, ``kana``,
    ``thai``) counting as ``1 / chars_per_word[group]`` of a word. A group's minimum is
    ``round(min_words * chars_per_word[group])`` characters (at least 1); a span mixing
    scripts reaches the length when the fractions of its units (each unit 1 / its group's
    minimum) sum to 1. Kept exact in integers: a unit weighs ``threshold // minimum``."""

    min_words: int
    chars_per_word: tuple[tuple[str, float], ...] = ()

    @classmethod
    def of(cls, min_words: int, chars_per_word: Mapping[str, float] | None = None
           ) -> SpanLength:
        if not isinstance(min_words, int) or isinstance(min_words, bool) or min_words < 1:
            raise ValueError(f"min_words must be a positive integer, got {min_words!r}")
        per = dict(chars_per_word or {})
        for group, ratio in per.items():
            if group not in SCRIPTS:
                raise ValueError(f"chars_per_word: unknown script group {group!r}; known: "
                                 f"{', '.join(SCRIPTS)}")
            if not isinstance(ratio, int | float) or isinstance(ratio, bool) or ratio <= 0:
                raise ValueError(f"chars_per_word.{group} must be a positive number, got "
                                 f"{ratio!r}")
        return cls(min_words, tuple(sorted(per.items())))

    @functools.cached_property
    def minima(self) -> dict[str | None, int]:
        """Units a span of one group needs (None: every other word)."""
        return {None: self.min_words, **{g: max(1, round(self.min_words * r))
                                         for g, r in self.chars_per_word}}

    @functools.cached_property
    def threshold(self) -> int:
        return math.lcm(*self.minima.values())

    @functools.cached_property
    def uniform(self) -> bool:
        """Every unit weighs the same (a span needs ``min_words`` units)."""
        return all(m == self.min_words for m in self.minima.values())

    @property
    def min_units(self) -> int:
        """The fewest units a span reaching the length can have."""
        return min(self.minima.values())

    def weights(self, tokens: Sequence[str]) -> list[int]:
        if self.uniform:
            return [1] * len(tokens)
        t, m = self.threshold, self.minima
        word = t // self.min_words
        # below U+0E00 no character is of a script group (most words: no lookup)
        return [word if w[0] < "\u0e00" else t // m.get(script_of(w), self.min_words)
                for w in tokens]

    def reaches(self, tokens: Sequence[str]) -> bool:
        return sum(self.weights(tokens)) >= self.threshold

    def windows(self, tokens: Sequence[str]) -> Iterator[tuple[int, int]]:
        """For each word ``t`` that completes one, the shortest window ``[s, t + 1)`` ending
        there that reaches the length."""
        if self.uniform:
            yield from ((i, i + self.min_words) for i in range(len(tokens) - self.min_words + 1))
            return
        thr, s, total = self.threshold, 0, 0
        w = self.weights(tokens)
        for t, wt in enumerate(w):
            total += wt
            while total - w[s] >= thr:
                total -= w[s]
                s += 1
            if total >= thr:
                yield s, t + 1


class WindowFilter:
    """The hashes of every window of some documents that just reaches ``length`` (a
    :class:`SpanLength` or a number of words; see the module docstring): ``window in
    filter`` is False only for a window that occurs in none."""

    def __init__(self, docs: Iterable[Sequence[str]], length: SpanLength | int) -> None:
        self.length = length if isinstance(length, SpanLength) else SpanLength(length)
        self.width = self.length.min_words
        hashes: set[int] = set()
        for words in docs:
            words = tuple(words)
            for a, b in self.length.windows(words):
                hashes.add(hash(words[a:b]))
        self._hashes = hashes

    def __len__(self) -> int:
        return len(self._hashes)

    def __contains__(self, window: Sequence[str]) -> bool:
        return hash(tuple(window)) in self._hashes

    @classmethod
    def from_index(cls, index: SpanLookup, length: SpanLength | int, *,
                   max_windows: int = 4_000_000) -> WindowFilter | None:
        """The filter of an index's documents, or None when it would hold more than
        ``max_windows`` windows (or the index's documents cannot be read)."""
        try:
            docs = list(indexed_documents(index))
        except TypeError:
            return None
        min_units = length.min_units if isinstance(length, SpanLength) else length
        if sum(max(0, len(d) - min_units + 1) for d in docs) > max_windows:
            return None
        return cls(docs, length)


@dataclass(frozen=True)
class StreamHit:
    """The first window of ``min_words`` words found in the index: words ``[word_start,
    word_end)`` of the stream, and the span (those words, with their documents; offsets in
    the stream's text)."""

    word_start: int
    word_end: int
    span: Span


class WindowMatcher:
    """The first span of at least ``min_words`` words of a stream, found as the words arrive
    (see the module docstring); ``max_docs`` documents are named with it. ``length`` (a
    :class:`SpanLength`) counts characters of the scripts without spaces as fractions of a
    word: each window is then the shortest that reaches the length, ending at the word."""

    def __init__(self, index: SpanLookup, min_words: int, *, max_docs: int = 5,
                 window_filter: WindowFilter | None = None,
                 length: SpanLength | None = None) -> None:
        if min_words < 1:
            raise ValueError(f"min_words must be >= 1, got {min_words}")
        self.length = length or SpanLength(min_words)
        if self.length.min_words != min_words:
            raise ValueError(f"the span length is of {self.length.min_words} words, not "
                             f"{min_words}")
        if window_filter is not None and window_filter.length != self.length:
            raise ValueError(f"the window filter is of {window_filter.length}, not "
                             f"{self.length}")
        check_stream_unit(index)
        self.index = index
        self.window_filter = window_filter
        self.min_words = min_words
        self.max_docs = max_docs
        self.words = StreamTokens(index.tokenize)
        self.checked = 0       # complete words whose window has been counted
        self.hit: StreamHit | None = None
        self._sums = [0]       # the words' weights summed: _sums[k] is words [0, k)'s
        self._start = 0        # the start of the last window that reached the length

    @property
    def text(self) -> str:
        return self.words.text

    def _scan(self) -> StreamHit | None:
        tokens, wf, sums = self.words.tokens, self.window_filter, self._sums
        length = self.length
        thr, word = length.threshold, length.threshold // self.min_words
        n = len(tokens)
        while self.hit is None and self.checked < n:
            t = self.checked
            self.checked += 1
            tok = tokens[t]
            # below U+0E00 no character is of a script group: a word's weight, no lookup
            sums.append(sums[t] + (word if tok[0] < "\u0e00" else length.weights((tok,))[0]))
            if sums[t + 1] - sums[self._start] < thr:
                continue
            while sums[t + 1] - sums[self._start + 1] >= thr:
                self._start += 1
            window = tokens[self._start:t + 1]
            if wf is not None and window not in wf:
                continue
            if self.index.count(window):
                self.hit = self._hit(self._start, t + 1)
        return self.hit

    def _hit(self, start: int, end: int) -> StreamHit:
        w = self.words
        # the span may start before the shortest window: where the words from an earlier
        # start to the one before ``end`` did not reach the length (lighter units), else
        # they would have been a hit before
        sums, thr = self._sums, self.length.threshold
        while (start > 0 and sums[end - 1] - sums[start - 1] < thr
               and self.index.count(w.tokens[start - 1:end])):
            start -= 1
        a, b = w.starts[start], w.ends[end - 1]
        found = self.index.find_spans(self.text[a:b], min_words=end - start,
                                      max_docs=self.max_docs)
        if not found:  # the index answered count > 0 for these words: it must find them
            raise RuntimeError(f"index counts the words {' '.join(w.tokens[start:end])!r} but "
                               "find_spans does not find them")
        s = found[0]
        return StreamHit(start, end, replace(s, word_start=start, word_end=end, char_start=a,
                                             char_end=b))

    def feed(self, delta: str) -> StreamHit | None:
        """Append ``delta``; the hit, once there is one (then nothing more is read)."""
        if self.hit is None:
            self.words.feed(delta)
            self._scan()
        return self.hit

    def finish(self) -> StreamHit | None:
        if self.hit is None:
            self.words.finish()
            self._scan()
        return self.hit

    def safe_end(self) -> int:
        """Characters of the text that belong to no span of ``min_words`` words (a prefix;
        after a hit: the text before the span)."""
        w = self.words
        if self.hit is not None:
            return self.hit.span.char_start
        if w.finished:
            return len(self.text)
        n = len(w.tokens)
        # the first of the last words that do not reach the length together: after the start
        # of the last window that reached it (_scan has seen every word), else the first word
        k = self._start + 1 if self._sums[n] - self._sums[self._start] >= self.length.threshold \
            else 0
        return w.starts[k] if k < n else w.done

    def extend(self) -> Span | None:
        """The hit's span extended over the complete words held after it (``find_spans`` from
        its start); None before a hit."""
        if self.hit is None:
            return None
        w = self.words
        start = self.hit.word_start
        a = w.starts[start]
        b = w.ends[-1] if len(w) > start else self.hit.span.char_end
        found = self.index.find_spans(self.text[a:b],
                                      min_words=self.hit.word_end - self.hit.word_start,
                                      max_docs=self.max_docs)
        s = found[0]  # the hit's words are its prefix: the first span starts there
        return replace(s, word_start=s.word_start + start, word_end=s.word_end + start,
                       char_start=s.char_start + a, char_end=s.char_end + a)
