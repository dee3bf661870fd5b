"""The span index's result types and the protocol every index implements.

Positions are in *words of the index's unit* (:mod:`copyprobe.spans.encoding`): ``word_start``
/ ``word_end`` index the queried text's tokens (end exclusive), ``char_start`` / ``char_end``
the queried text's characters (the original text, before normalisation). A document's
``word_start`` is the word position of the span's first occurrence in that document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class SpanIndexError(ValueError):
    """A corpus or an index that cannot be used: the message names the file or key."""


@dataclass(frozen=True)
class CorpusDoc:
    """One document of a corpus as the span index sees it."""

    source: str
    doc_id: str
    text: str
    title: str = ""
    url: str = ""


@dataclass(frozen=True)
class Tokens:
    """A text's tokens under one unit, each with its character range in the original text;
    in the unit ``tokens`` also the tokenizer's ids (``tokens`` are then the pieces' text)."""

    tokens: list[str]
    starts: list[int]
    ends: list[int]
    ids: list[int] | None = None

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class DocHit:
    """One corpus document a span occurs in (its first occurrence there)."""

    doc_ix: int
    source: str
    doc_id: str
    title: str
    url: str
    word_start: int

    def as_dict(self) -> dict:
        return {"source": self.source, "doc_id": self.doc_id, "title": self.title,
                "url": self.url, "word_start": self.word_start}


@dataclass(frozen=True)
class Span:
    """A maximal verbatim span of the queried text found in the index.

    ``count`` is the number of occurrences in the whole index (all shards, overlapping ones
    included); ``docs`` the first ``max_docs`` documents holding it, in index order
    (``doc_ix``); ``n_docs`` the number of distinct documents, exact when ``n_docs_exact``
    (the occurrences were all read: ``count <= scan_cap``), else a lower bound."""

    word_start: int
    word_end: int
    char_start: int
    char_end: int
    text: str
    count: int
    n_docs: int
    n_docs_exact: bool
    docs: tuple[DocHit, ...] = field(default_factory=tuple)

    @property
    def n_words(self) -> int:
        return self.word_end - self.word_start


@runtime_checkable
class SpanLookup(Protocol):
    """What the studies and the guard need of an index (the suffix-array
    :class:`~copyprobe.spans.index.SpanIndex` and the brute-force
    :class:`~copyprobe.spans.reference.MemoryIndex` alike)."""

    @property
    def unit(self) -> str: ...

    @property
    def n_docs(self) -> int: ...

    @property
    def digest(self) -> str:
        """A content digest of the indexed documents and the unit (changes with either)."""
        ...

    def tokenize(self, text: str) -> Tokens: ...

    def count(self, tokens: Sequence[str]) -> int:
        """Occurrences of the word sequence ``tokens`` (already in the index's unit),
        word-aligned on both sides; 0 for an empty sequence. In the unit ``tokens`` the
        sequence is of token ids (:attr:`Tokens.ids`)."""
        ...

    def find_spans(self, text: str, *, min_words: int, max_docs: int = 5,
                   scan_cap: int = 10_000) -> list[Span]:
        """Every maximal span of ``text`` (tokenized in the index's unit) of at least
        ``min_words`` words that occurs in the index, in order of ``word_start``."""
        ...
