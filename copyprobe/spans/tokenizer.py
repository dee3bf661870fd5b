"""A model's tokenizer read from a local file, for span indexes in the unit ``tokens``.

Reference: docs/span-index.md.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from copyprobe.spans.layout import sha256
from copyprobe.spans.types import SpanIndexError, Tokens

__all__ = ["KINDS", "SpanTokenizer", "load_tokenizer", "token_dtype"]

KINDS = ("gguf", "hf")


def token_dtype(vocab_size: int) -> str:
    """infini-gram's token type for a vocabulary: ``u16`` while every id and the document
    separator ``0xFFFF`` fit (vocab_size < 65535), else ``u32`` (separator ``0xFFFFFFFF``)."""
    return "u16" if vocab_size < 0xFFFF else "u32"


def _kind(path: Path) -> tuple[str, Path]:
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return "hf", path / "tokenizer.json"
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return "gguf", ggufs[0]
        raise SpanIndexError(f"{path}: a tokenizer folder needs a tokenizer.json (or exactly "
                             f"one .gguf file; found {len(ggufs)})")
    if not path.is_file():
        raise SpanIndexError(f"{path}: no such tokenizer file")
    if path.suffix == ".gguf":
        return "gguf", path
    if path.suffix == ".json":
        return "hf", path
    with open(path, "rb") as fh:
        if fh.read(4) == b"GGUF":
            return "gguf", path
    raise SpanIndexError(f"{path}: not a tokenizer (a .gguf model file, a tokenizer.json, or a "
                         "folder holding one)")


def _char_starts(text: str) -> list[int]:
    """For each UTF-8 byte offset of ``text`` (and its end): the index of the character that
    byte belongs to."""
    out: list[int] = []
    for i, ch in enumerate(text):
        out += [i] * len(ch.encode("utf-8", "surrogatepass"))
    out.append(len(text))
    return out


class SpanTokenizer:
    """A tokenizer of one local file (see the module docstring); load it with
    :func:`load_tokenizer` (cached per file)."""

    def __init__(self, path: Path, kind: str, impl, vocab_size: int, eos_id: int | None,
                 digest: str):
        self.path, self.kind, self._impl = path, kind, impl
        self.vocab_size, self.eos_id, self.sha256 = vocab_size, eos_id, digest
        self.dtype = token_dtype(vocab_size)

    def identity(self) -> dict:
        """What the manifest records (and what opening an index compares)."""
        return {"kind": self.kind, "path": str(self.path), "sha256": self.sha256,
                "vocab_size": self.vocab_size, "token_dtype": self.dtype}

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (no BOS, no special token)."""
        if self.kind == "hf":
            return list(self._impl.encode(text, add_special_tokens=False).ids)
        return self._impl.tokenize(text)

    def tokenize(self, text: str) -> Tokens:
        """The ids of ``text`` as :class:`Tokens`: ``tokens`` the pieces' text, ``ids`` the
        ids, ``starts`` / ``ends`` each piece's character range in ``text``."""
        if self.kind == "hf":
            enc = self._impl.encode(text, add_special_tokens=False)
            ids = list(enc.ids)
            starts = [a for a, _ in enc.offsets]
            ends = [b for _, b in enc.offsets]
            return Tokens([text[a:b] for a, b in enc.offsets], starts, ends, ids)
        ids = self._impl.tokenize(text)
        llm = self._impl.llm
        pieces = [bytes(llm.detokenize([i])) for i in ids]
        joined = b"".join(pieces)
        data = text.encode("utf-8", "surrogatepass")
        shift = 0
        if joined != data and joined == b" " + data:  # a sentencepiece's leading space
            shift = 1
        where = _char_starts(text)
        starts, ends = [], []
        at = -shift
        for p in pieces:
            a, b = min(max(at, 0), len(data)), min(max(at + len(p), 0), len(data))
            starts.append(where[a])
            # the end: past the character holding the piece's last byte
            ends.append(where[b - 1] + 1 if b > a else where[a])
            at += len(p)
        return Tokens([p.decode("utf-8", "replace") for p in pieces], starts, ends, ids)

    def detokenize(self, ids: Sequence[int]) -> str:
        if self.kind == "hf":
            return self._impl.decode(list(ids), skip_special_tokens=False)
        return self._impl.detokenize(ids)

    def __repr__(self) -> str:
        return f"SpanTokenizer({str(self.path)!r}, kind={self.kind!r}, vocab={self.vocab_size})"


def load_tokenizer(path: str | Path) -> SpanTokenizer:
    """The tokenizer of a local file or folder (an error naming it where there is none);
    loaded once per file content."""
    p = Path(path).expanduser().resolve()
    kind, file = _kind(p)
    st = file.stat()
    return _load(file, kind, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _load(file: Path, kind: str, size: int, mtime_ns: int) -> SpanTokenizer:
    digest = sha256(file)
    if kind == "hf":
        from copyprobe.extras import require

        require("hf", "tokenizers", needed_for="a span index in Hugging Face tokens")
        from tokenizers import Tokenizer

        try:
            impl = Tokenizer.from_file(str(file))
        except Exception as exc:  # the library's own parse errors
            raise SpanIndexError(f"{file}: not a Hugging Face tokenizer.json ({exc})") from None
        vocab = impl.get_vocab_size(with_added_tokens=True)
        return SpanTokenizer(file, kind, impl, vocab, None, digest)
    from copyprobe.extras import require

    require("local", "llama_cpp", needed_for="a span index in a GGUF model's tokens")
    from llama_cpp import Llama

    from copyprobe.generation.llamacpp import LlamaTokenizer

    try:
        llm = Llama(model_path=str(file), vocab_only=True, verbose=False)
    except Exception as exc:  # llama.cpp's ValueError on an unreadable file
        raise SpanIndexError(f"{file}: llama.cpp cannot read its vocabulary ({exc})") from None
    eos = int(llm.token_eos())
    return SpanTokenizer(file, kind, LlamaTokenizer(llm), int(llm.n_vocab()),
                         eos if eos >= 0 else None, digest)
