"""What the ONNX Runtime paths of the encoder metrics share: the export cache, sessions on a
device, dynamic int8 quantisation and length-sorted batches.

Reference: docs/copyright-metrics.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEVICES", "QUANTIZE", "Batches", "cache_dir", "cached_model", "file_sha256",
           "make_session"]

DEVICES = ("cpu", "cuda")
QUANTIZE = ("none", "int8")


def cache_dir(path: str | Path | None = None) -> Path:
    """Where exports live: ``path``, else ``$COPYPROBE_ONNX_CACHE``, else
    ``~/.cache/copyprobe/onnx``."""
    if path is None:
        path = os.environ.get("COPYPROBE_ONNX_CACHE") or Path.home() / ".cache/copyprobe/onnx"
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    return out


_SHA: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised per (path, size, mtime) within the process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        _SHA[key] = h.hexdigest()
    return _SHA[key]


def _quantize_int8(src: Path, dst: Path) -> None:
    from copyprobe.extras import require

    # onnxruntime.quantization imports the onnx package
    require("copyright", "onnxruntime", "onnx", needed_for="int8 quantisation")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"])


def cached_model(name: str, weight_files: Sequence[Path], settings: dict[str, Any],
                 export: Callable[[Path], None], quantize: str = "none",
                 directory: str | Path | None = None) -> Path:
    """The cached ONNX file of a model: exported by ``export(path)`` on first use (written to a
    temporary name and renamed, so a crash leaves no half file), then int8-quantised if asked."""
    from copyprobe.extras import require

    require("copyright", "onnxruntime", needed_for="ONNX scoring")
    import onnxruntime

    if quantize not in QUANTIZE:
        raise ValueError(f"{name}: quantize must be one of {QUANTIZE}, not {quantize!r}")
    key = {"weights": [file_sha256(Path(p)) for p in weight_files], "settings": settings,
           "onnxruntime": onnxruntime.__version__}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    root = cache_dir(directory)
    fp32 = root / f"{name}-{digest}.onnx"
    if not fp32.is_file():
        _atomic(fp32, export)
        (root / f"{name}-{digest}.json").write_text(json.dumps(key, indent=1, sort_keys=True))
    if quantize == "none":
        return fp32
    int8 = root / f"{name}-{digest}-int8.onnx"
    if not int8.is_file():
        _atomic(int8, lambda p: _quantize_int8(fp32, p))
    return int8


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".onnx.tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def make_session(path: Path, device: str = "cpu", threads: int | None = None) -> Any:
    """An onnxruntime InferenceSession on ``device`` (cpu, or cuda through onnxruntime-gpu's
    CUDAExecutionProvider), ``threads`` intra-op threads (None: onnxruntime's default, one per
    core)."""
    import onnxruntime as ort

    if device not in DEVICES:
        raise ValueError(f"ONNX scoring: device must be one of {DEVICES}, not {device!r}")
    if device == "cuda":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise RuntimeError("ONNX scoring on device cuda: this onnxruntime has no "
                               "CUDAExecutionProvider (install onnxruntime-gpu on a machine "
                               f"with an NVIDIA GPU; available: {ort.get_available_providers()})")
        providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    else:
        providers = ["CPUExecutionProvider"]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=opts, providers=providers)


class Batches:
    """Length-sorted batches of token sequences (at most ``max_batch`` sequences and
    ``max_tokens`` padded tokens each), counting the tokens run and the padding among them."""

    def __init__(self, max_tokens: int = 8192, max_batch: int = 64) -> None:
        self.max_tokens, self.max_batch = max_tokens, max_batch
        self.real_tokens = self.padded_tokens = self.runs = 0

    def __call__(self, seqs: Sequence[Sequence[int]], pad_id: int = 0) -> Iterator[
            tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(indices into ``seqs``, ids, attention mask) per batch, the longest texts first."""
        lengths = np.array([len(s) for s in seqs])
        order = np.argsort(-lengths, kind="stable")
        i = 0
        while i < len(order):
            width = int(lengths[order[i]])
            n = max(1, min(self.max_batch, self.max_tokens // max(width, 1)))
            idx = order[i:i + n]
            ids = np.full((len(idx), width), pad_id, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, j in enumerate(idx):
                ids[row, :lengths[j]] = seqs[j]
                mask[row, :lengths[j]] = 1
            self.real_tokens += int(lengths[idx].sum())
            self.padded_tokens += ids.size
            self.runs += 1
            yield idx, ids, mask
            i += n

    @property
    def padding_waste(self) -> float:
        """Share of the tokens run that were padding."""
        return 1 - self.real_tokens / self.padded_tokens if self.padded_tokens else 0.0
