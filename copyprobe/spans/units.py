"""How an index's unit is stored and searched: one codec per kind of unit.

Reference: docs/span-index.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from copyprobe.spans.encoding import (
    BYTE_UNITS,
    StreamDigest,
    check_unit,
    encode_doc,
    encode_query,
    tokenize,
    words,
)
from copyprobe.spans.tokenizer import SpanTokenizer, load_tokenizer
from copyprobe.spans.types import SpanIndexError, Tokens

__all__ = ["ByteCodec", "Codec", "TokenCodec", "make_codec"]

_NP = {"u16": "<u2", "u32": "<u4"}


class ByteCodec:
    """The byte-level units (see the module docstring)."""

    dtype = "u8"
    width = 1
    doc_sep = b"\xff"
    vocab_size = 255
    eos_id = 254
    tokenizer: SpanTokenizer | None = None

    def __init__(self, unit: str):
        if check_unit(unit) not in BYTE_UNITS:
            raise SpanIndexError(f"unit {unit!r} is not byte-level")
        self.unit = unit

    def doc(self, text: str) -> tuple[bytes, int] | None:
        """A document's stored bytes and its number of units (None: no unit)."""
        toks = words(text, self.unit)
        return (encode_doc(toks), len(toks)) if toks else None

    def tokenize(self, text: str) -> Tokens:
        return tokenize(text, self.unit)

    def layout(self, toks: Tokens) -> tuple[bytes, list[int]]:
        """The text's bytes and the offset of the space before each unit (and the last)."""
        parts = [w.encode("utf-8") for w in toks.tokens]
        pos = [0] * (len(parts) + 1)
        at = 0
        for k, p in enumerate(parts):
            pos[k] = at
            at += 1 + len(p)
        pos[len(parts)] = at
        return b" " + b" ".join(parts) + b" ", pos

    def slice(self, buf: bytes, pos: list[int], i: int, j: int) -> bytes:
        """The query of units ``[i, j)`` of a :meth:`layout`."""
        return buf[pos[i]:pos[j] + 1]

    def matched(self, query: bytes, m: int) -> int:
        """Whole units of ``query`` inside its first ``m`` bytes."""
        return query[1:m].count(b" ")

    def query(self, seq: Sequence) -> bytes:
        """The query of a unit sequence (``tokens`` of :meth:`tokenize`)."""
        return encode_query(seq)

    def position(self, stored: bytes) -> int:
        """Units before an occurrence, from the document's bytes before it (separator
        excluded)."""
        return stored.count(b" ")

    def ids(self, query: bytes) -> list[int]:
        """The engine's ``input_ids`` of a query."""
        return list(query)

    def probe(self, first_doc: bytes) -> bytes:
        """A query that must occur: the first document's first two units (or its one);
        ``first_doc`` is the shard's bytes after its first separator."""
        head = first_doc.split(self.doc_sep)[0]
        return b" " + b" ".join(head.split()[:2]) + b" "

    def span_text(self, toks: Tokens, i: int, j: int) -> str:
        return " ".join(toks.tokens[i:j])

    def digest(self) -> StreamDigest:
        return StreamDigest(self.unit)

    def identity(self) -> dict | None:
        """The tokenizer's identity for the manifest (None: no tokenizer)."""
        return None


class TokenCodec(ByteCodec):
    """A model's token ids (see the module docstring)."""

    def __init__(self, tokenizer: SpanTokenizer):
        self.unit = "tokens"
        self.tokenizer = tokenizer
        self.dtype = tokenizer.dtype
        self.width = 2 if self.dtype == "u16" else 4
        self.doc_sep = b"\xff" * self.width
        self.vocab_size = 0xFFFF if self.dtype == "u16" else tokenizer.vocab_size
        eos = tokenizer.eos_id
        self.eos_id = eos if eos is not None and 0 <= eos < self.vocab_size else (
            self.vocab_size - 1)

    def _bytes(self, ids: Sequence[int]) -> bytes:
        return np.asarray(ids, dtype=_NP[self.dtype]).tobytes()

    def doc(self, text: str) -> tuple[bytes, int] | None:
        ids = self.tokenizer.encode(text)
        return (self._bytes(ids), len(ids)) if ids else None

    def tokenize(self, text: str) -> Tokens:
        return self.tokenizer.tokenize(text)

    def layout(self, toks: Tokens) -> tuple[bytes, list[int]]:
        w = self.width
        return self._bytes(toks.ids or []), [k * w for k in range(len(toks) + 1)]

    def slice(self, buf: bytes, pos: list[int], i: int, j: int) -> bytes:
        return buf[pos[i]:pos[j]]

    def matched(self, query: bytes, m: int) -> int:
        return m // self.width

    def query(self, seq: Sequence) -> bytes:
        """The query of token ids (a sequence of ints; text pieces are refused: pieces do not
        decide ids)."""
        if any(not isinstance(t, int | np.integer) for t in seq):
            raise SpanIndexError("an index in unit 'tokens' is queried with token ids "
                                 "(Tokens.ids), not with text pieces")
        return self._bytes(seq)

    def position(self, stored: bytes) -> int:
        return len(stored) // self.width

    def ids(self, query: bytes) -> list[int]:
        return np.frombuffer(query, dtype=_NP[self.dtype]).tolist()

    def probe(self, first_doc: bytes) -> bytes:
        w = self.width
        ids = np.frombuffer(first_doc[:len(first_doc) // w * w], dtype=_NP[self.dtype])
        end = np.flatnonzero(ids == (1 << (8 * w)) - 1)
        head = ids[:end[0]] if len(end) else ids
        return head[:2].tobytes()

    def span_text(self, toks: Tokens, i: int, j: int) -> str:
        return "".join(toks.tokens[i:j])

    def digest(self) -> StreamDigest:
        return StreamDigest(self.unit, self.tokenizer.sha256)

    def identity(self) -> dict | None:
        return self.tokenizer.identity()


Codec = ByteCodec


def make_codec(unit: str, tokenizer: str | Path | SpanTokenizer | None = None) -> ByteCodec:
    """The codec of ``unit``; ``tokens`` needs ``tokenizer`` (a path or a loaded one), the
    byte units refuse one."""
    check_unit(unit)
    if unit in BYTE_UNITS:
        if tokenizer is not None:
            raise SpanIndexError(f"a tokenizer is given for unit {unit!r}; only the unit "
                                 "'tokens' takes one")
        return ByteCodec(unit)
    if tokenizer is None:
        raise SpanIndexError("the span-index unit 'tokens' needs a tokenizer (a GGUF model "
                             "file, a tokenizer.json or a model folder holding one)")
    tok = tokenizer if isinstance(tokenizer, SpanTokenizer) else load_tokenizer(tokenizer)
    return TokenCodec(tok)
