"""The embedded llama.cpp backend and the runner, on the real SmolLM2-135M-Instruct GGUF."""

import pandas as pd
import pytest

from copyprobe.artifacts import GENERATIONS, to_table
from copyprobe.generation import GenerationCache, run_generation
from copyprobe.generation.base import BackendError, Decoding
from copyprobe.generation.llamacpp import LlamaCppBackend
from copyprobe.prompt import Prompt

CHAT = Prompt("chat", messages=(
    {"role": "system", "content": "Continue the text."},
    {"role": "user", "content": "The river rises in the northern hills and flows south"},
    {"role": "assistant", "content": "through three market towns before it reaches"},
    {"role": "user", "content": "the estuary, where it widens into a broad tidal basin"},
))
COMPLETION = Prompt("completion", text="Once upon a time, in a small village by the sea,")


def test_greedy_is_deterministic_across_repeats(smollm2_backend):
    d = Decoding(max_tokens=24)
    outs = [smollm2_backend.generate(CHAT, d) for _ in range(3)]
    assert outs[0].text.strip() != ""
    assert len({o.text for o in outs}) == 1  # reset() per request: no prompt-cache drift
    assert outs[0].completion_tokens <= 24 and outs[0].prompt_tokens > 20


def test_completion_format(smollm2_backend):
    out = smollm2_backend.generate(COMPLETION, Decoding(max_tokens=12))
    assert out.text and out.prompt_tokens >= 10


def test_sampling_differs_by_sample_index_and_is_reproducible(smollm2_backend):
    d = Decoding(temperature=1.0, max_tokens=24, seed=7)
    a0 = smollm2_backend.generate(COMPLETION, d, sample_index=0).text
    a1 = smollm2_backend.generate(COMPLETION, d, sample_index=1).text
    assert smollm2_backend.generate(COMPLETION, d, sample_index=0).text == a0
    assert a0 != a1


def test_context_overflow_is_a_permanent_failure(smollm2_file):
    small = LlamaCppBackend.from_config({"n_ctx": 256, "n_threads": 2}, smollm2_file)
    try:
        with pytest.raises(BackendError) as info:
            small.generate(Prompt("completion", text="word " * 400), Decoding(max_tokens=8))
        assert info.value.permanent and info.value.error_class == "ContextLengthError"
    finally:
        small.close()


def _prompts(texts):
    return pd.DataFrame({
        "request_id": [f"r{i}" for i in range(len(texts))],
        "status": ["ready"] * len(texts),
        "prompt": [Prompt("completion", text=t).to_json() for t in texts],
    })


def test_runner_caches_records_failures_and_loads_lazily(smollm2_file, tmp_path):
    spec = {"n_ctx": 256, "n_threads": 2}
    identity = LlamaCppBackend.identity_from_config(spec, smollm2_file)
    loads = []

    def factory():
        loads.append(1)
        return LlamaCppBackend.from_config(spec, smollm2_file)

    prompts = _prompts(["The capital of France is", "word " * 400, "Water boils at"])
    cache = GenerationCache(tmp_path / "cache")
    kw = dict(model="smol", backend_name="llamacpp", identity=identity,
              backend_factory=factory, decoding=Decoding(max_tokens=8), cache=cache)
    df, summary = run_generation(prompts, **kw)
    to_table(df, GENERATIONS)  # fits the declared schema
    assert summary.model_calls == 3 and summary.cache_hits == 0 and summary.failed == 1
    assert summary.failures_by_class == {"ContextLengthError": 1}
    failed = df[df["status"] == "failed"].iloc[0]
    assert failed["request_id"] == "r1" and pd.isna(failed["text"])
    assert "context" in failed["error"].lower()
    assert loads == [1]

    # Rerun: answered requests come from the cache; only the failed one is tried again.
    df2, s2 = run_generation(prompts, **kw)
    assert s2.cache_hits == 2 and s2.model_calls == 1
    ok1 = df.set_index("request_id").loc[["r0", "r2"], "text"].tolist()
    ok2 = df2.set_index("request_id").loc[["r0", "r2"], "text"].tolist()
    assert ok1 == ok2
    assert df2.set_index("request_id").loc["r0", "from_cache"]

    # Fully cached: the model is never loaded.
    loads.clear()
    _, s3 = run_generation(prompts.iloc[[0, 2]], **kw)
    assert s3.model_calls == 0 and loads == []

    # A different decoding parameter is a different key: new calls.
    _, s4 = run_generation(prompts.iloc[[0]], **{**kw, "decoding": Decoding(max_tokens=9)})
    assert s4.model_calls == 1 and s4.cache_hits == 0


def test_the_tokenizer_loads_without_llama_cpps_context_warning(smollm2_file, capfd):
    """extraction-map cuts windows with the vocabulary-only load: llama.cpp's warning that
    n_ctx_seq exceeds n_ctx_train (0, unread in that mode) is not printed."""
    capfd.readouterr()
    tok = LlamaCppBackend.tokenizer_from_config({}, smollm2_file)
    assert tok.detokenize(tok.tokenize("hello world")).strip() == "hello world"
    assert "n_ctx_train" not in capfd.readouterr().err
