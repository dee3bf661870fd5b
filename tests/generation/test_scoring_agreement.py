"""The same GGUF (SmolLM2-135M-Instruct Q4_1) scored through llama.cpp and through
transformers (dequantised to float32) gives per-window log p_z that agree.

The tolerances are measured (benchmarks/scoring_exactness.py, 200 windows of licence texts
and Wikipedia leads, 2026-12-01) and asserted here, with a margin, on 24 windows of the
packaged control documents, cut in llama.cpp's tokens and given to both engines as the same
token ids. Measured over the 200 windows: Spearman of log p_z 0.99917, mean absolute
difference per token 0.080 nats (median over windows 0.070, p95 0.140: above the 0.05 the
issue hoped for; llama.cpp's Q4_1 kernels quantise the activations, transformers computes the
dequantised weights in float32), argmax equal on 98.1% of target tokens, greedy-match flags
equal on 100% of the windows, but only because no 50-token suffix of real text is greedy for
this 135M model. On greedy targets (16 tokens that transformers decodes greedily after a
prefix) the flags differ often: of 48, transformers' one pass calls 47 greedy (one near-tie
flips between a batch of 8 in ``generate`` and the scoring batch), llama.cpp 27 (per-token
argmax agreement 96.4%, and 0.964^16 = 0.56). So a greedy-match flag is a property of the
engine and its quantisation, not of the weights alone. On the 24 windows here: Spearman
0.99739, 0.058 nats per token, argmax 99.2%; llama.cpp greedy on 5 of the 6 greedy targets.
"""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.generation.llamacpp import LlamaCppBackend
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores

pytestmark = pytest.mark.slow

N_WINDOWS = 24
N_GREEDY = 6
MIN_SPEARMAN = 0.995
MAX_MAD_PER_TOKEN = 0.10
MIN_ARGMAX_EQUAL = 0.97
MIN_LLAMA_GREEDY = 3  # of the N_GREEDY greedy targets (27 of 48 in the benchmark)


def _scores(backend, reqs):
    out = []
    for i in range(0, len(reqs), backend.max_score_batch):
        out += backend.score_batch(reqs[i:i + backend.max_score_batch], path="one_pass")
    assert all(isinstance(x, TokenScores) for x in out), out
    return out


def _spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _greedy_targets(hf, reqs: list[ScoreRequest]) -> list[ScoreRequest]:
    """The prefixes of ``reqs`` (all 50 tokens, so no padding) with the 16 tokens that
    transformers decodes greedily after each, in one batched ``generate``."""
    import torch

    prefix = torch.tensor([list(r.context_ids) for r in reqs])
    with torch.inference_mode():
        out = hf.model.generate(input_ids=prefix, attention_mask=torch.ones_like(prefix),
                                do_sample=False, max_new_tokens=16, min_new_tokens=16,
                                pad_token_id=hf.tokenizer.eos_token_id, repetition_penalty=1.0)
    return [ScoreRequest(context_ids=r.context_ids, target_ids=tuple(row[prefix.shape[1]:]))
            for r, row in zip(reqs, out.tolist(), strict=True)]


def test_llamacpp_and_transformers_agree(smollm2_file, smollm2_hf, window_texts, windows_of):
    llama = LlamaCppBackend.scorer_from_config({"n_ctx": 512, "n_threads": 1}, smollm2_file)
    try:
        reqs = []
        for text in window_texts:
            reqs += [ScoreRequest(context_ids=c, target_ids=t)
                     for c, t in windows_of(llama.tokenize(text), 2)]
        reqs = reqs[:N_WINDOWS]
        assert len(reqs) == N_WINDOWS
        lp = _scores(llama, reqs)
        hp = _scores(smollm2_hf, reqs)
        greedy = _greedy_targets(smollm2_hf, reqs[:N_GREEDY])
        lg, hg = _scores(llama, greedy), _scores(smollm2_hf, greedy)
    finally:
        llama.close()
    a, b = [x.log_pz for x in lp], [x.log_pz for x in hp]
    mad = float(np.mean([np.mean(np.abs(np.subtract(x.logprobs, y.logprobs)))
                         for x, y in zip(lp, hp, strict=True)]))
    flags = float(np.mean([x.greedy_match == y.greedy_match for x, y in zip(lp, hp)]))
    argmax = float(np.mean([np.mean(np.equal(x.argmax, y.argmax)) for x, y in zip(lp, hp)]))
    assert _spearman(a, b) >= MIN_SPEARMAN, _spearman(a, b)
    assert mad <= MAX_MAD_PER_TOKEN, mad
    assert argmax >= MIN_ARGMAX_EQUAL, argmax
    assert flags == 1.0, flags  # real-text windows: greedy for neither engine
    assert sum(x.greedy_match for x in hg) >= N_GREEDY - 1  # its own greedy decoding
    assert sum(x.greedy_match for x in lg) >= MIN_LLAMA_GREEDY
    # the windows are not all alike: the ranks mean something
    assert max(a) - min(a) > 20
