"""BERTScore F1 through ONNX Runtime: bert-score's numbers, at hardware speed.

Reference: docs/copyright-metrics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from copyprobe.copyright.metrics._inputs import check_pairs
from copyprobe.copyright.metrics.bertscore import _local_config, default_model_path
from copyprobe.copyright.metrics.onnx_runtime import Batches, cached_model, make_session

__all__ = ["OnnxBertScorer"]

EXPORT = {"exporter": "torch.onnx torchscript", "opset": 17, "attention": "eager",
          "output": "hidden state of layer num_layers"}


def _weight_files(model: Path) -> list[Path]:
    files = sorted(p for p in model.iterdir()
                   if p.suffix in (".safetensors", ".bin") or p.name == "config.json")
    if not any(p.suffix in (".safetensors", ".bin") for p in files):
        raise FileNotFoundError(f"BERTScore model directory {model}: no weights "
                                "(*.safetensors or *.bin)")
    return files


def _export(model: Path, num_layers: int, path: Path) -> None:
    import torch
    from transformers import AutoModel

    net = AutoModel.from_pretrained(str(model), attn_implementation="eager").eval()
    layers = net.encoder.layer
    if not 1 <= num_layers <= len(layers):
        raise ValueError(f"BERTScore model {model}: num_layers {num_layers} not in "
                         f"1..{len(layers)}")
    net.encoder.layer = torch.nn.ModuleList(list(layers[:num_layers]))

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.net(input_ids=input_ids, attention_mask=attention_mask)[0]

    ids = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(Hidden(), (ids, torch.ones_like(ids)), str(path),
                          input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                        "hidden": axes},
                          opset_version=EXPORT["opset"], dynamo=False)


class OnnxBertScorer:
    """``OnnxBertScorer().score(predictions, references)`` -> BERTScore F1 per pair, as
    :class:`~copyprobe.copyright.metrics.bertscore.BertScorer` gives it.

    ``model_path``: a local model directory (default the packaged all-MiniLM-L6-v2);
    ``num_layers`` (default its last layer); ``quantize``: none (fp32, equal to bert-score) or
    int8; ``threads``: onnxruntime intra-op threads (None: one per core); ``device``: cpu or
    cuda (onnxruntime-gpu); ``max_tokens``: padded tokens per batch.
    """

    def __init__(self, model_path: str | Path | None = None, num_layers: int | None = None,
                 batch_size: int = 64, device: str = "cpu", quantize: str = "none",
                 threads: int | None = None, max_tokens: int = 8192,
                 cache_dir: str | Path | None = None) -> None:
        model = Path(model_path if model_path is not None else default_model_path())
        config = _local_config(str(model))
        if config is None:
            raise ValueError(f"BERTScore backend onnx: {str(model)!r} is not a local model "
                             "directory with a config.json (hub ids need backend torch)")
        layers = int(num_layers if num_layers is not None else config["num_hidden_layers"])
        from transformers import AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(str(model), use_fast=True)
        self.model, self.num_layers, self.device, self.quantize = model, layers, device, quantize
        self.threads, self.batch_size = threads, batch_size
        path = cached_model("bertscore", _weight_files(model), {**EXPORT, "layers": layers},
                            lambda p: _export(model, layers, p), quantize, cache_dir)
        self._session = make_session(path, device, threads)
        self.batches = Batches(max_tokens=max_tokens, max_batch=batch_size)
        self._special = {self._tok.cls_token_id, self._tok.sep_token_id}
        self._refs: dict[str, np.ndarray] = {}

    def settings(self) -> dict[str, Any]:
        """What determines the scores, for provenance."""
        import onnxruntime

        return {"metric": "bertscore_f1", "backend": "onnx", "model": str(self.model),
                "num_layers": self.num_layers, "idf": False, "rescale_with_baseline": False,
                "quantize": self.quantize, "onnxruntime_version": onnxruntime.__version__}

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """bert-score's token ids of each text (``sent_encode``: stripped, special tokens,
        cut at ``model_max_length``)."""
        enc = self._tok([t.strip() for t in texts], add_special_tokens=True, truncation=True,
                        max_length=self._tok.model_max_length)
        return [list(x) for x in enc["input_ids"]]

    def embed(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each text's L2-normalised token embeddings (special tokens included), float32, with
        its token weights (0 for [CLS] and [SEP], else 1)."""
        seqs = self.tokenize(texts)
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0))] * len(seqs)
        for idx, ids, mask in self.batches(seqs, pad_id=self._tok.pad_token_id or 0):
            hidden = self._session.run(["hidden"], {"input_ids": ids,
                                                    "attention_mask": mask})[0]
            for row, j in enumerate(idx):
                e = hidden[row, :len(seqs[j])]
                w = np.array([t not in self._special for t in seqs[j]], dtype=np.float32)
                out[j] = (e / np.linalg.norm(e, axis=1, keepdims=True), w)
        return out

    def _embedded(self, texts: list[str], keep: dict[str, tuple[np.ndarray, np.ndarray]],
                  cache: dict[str, Any] | None) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in keep and
                (cache is None or t not in cache)]
        if cache is not None:
            keep.update({t: cache[t] for t in dict.fromkeys(texts) if t in cache})
        if todo:
            for text, emb in zip(todo, self.embed(todo), strict=True):
                keep[text] = emb
                if cache is not None:
                    cache[text] = keep[text]

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """BERTScore F1 of each (prediction, reference) pair, as float64."""
        predictions, references = check_pairs("BERTScore", predictions, references)
        out = np.zeros(len(predictions), dtype=np.float64)
        keep = [i for i, (p, r) in enumerate(zip(predictions, references, strict=True))
                if p.strip() and r.strip()]
        if not keep:
            return out
        refs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        hyps: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._embedded([references[i] for i in keep], refs, self._refs)
        self._embedded([predictions[i] for i in keep], hyps, None)
        for start in range(0, len(keep), self.batch_size):
            chunk = keep[start:start + self.batch_size]
            # bert-score pads each chunk of batch_size pairs and zeroes the padded cosines
            # before taking maxima: a token's best match is then at least 0 when the other
            # side is shorter than the chunk's longest
            h_max = max(len(hyps[predictions[i]][0]) for i in chunk)
            r_max = max(len(refs[references[i]][0]) for i in chunk)
            for i in chunk:
                (h, wh), (r, wr) = hyps[predictions[i]], refs[references[i]]
                sim = h @ r.T
                best_h, best_r = sim.max(axis=1), sim.max(axis=0)
                if len(r) < r_max:
                    best_h = np.maximum(best_h, 0)
                if len(h) < h_max:
                    best_r = np.maximum(best_r, 0)
                p = float((best_h * wh).sum() / wh.sum()) if wh.sum() else np.nan
                rc = float((best_r * wr).sum() / wr.sum()) if wr.sum() else np.nan
                f = 2 * p * rc / (p + rc) if p + rc else np.nan
                out[i] = 0.0 if np.isnan(f) else f
        return out
