"""Scoring through an OpenAI-compatible completions server (the ``openai`` backend with
``echo_logprobs: true``, path ``server_echo``) against a loopback server that answers in vLLM's
documented ``/v1/completions`` format (echo + logprobs, ``prompt_logprobs``) and serves vLLM's
``/tokenize`` and ``/detokenize``, backed by llama.cpp on SmolLM2 (tests/servers/vllm_server.py).

The server computes its numbers with llama.cpp in one pass, so the client's log p_z must equal
llama.cpp's own one-pass log-softmax, read here directly from the model (not through HTTP)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from copyprobe.generation.base import BackendError
from copyprobe.generation.cache import GenerationCache
from copyprobe.generation.limits import RetryPolicy, default_concurrency
from copyprobe.generation.openai_api import OpenAIBackend, server_root
from copyprobe.generation.openai_protocol import read_echo_scores
from copyprobe.generation.logprob_runner import run_scoring
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores, load_tokenizer
from copyprobe.prompt import Prompt

MIT = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this "
       "software and associated documentation files")
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def loopback(smollm2_file, server_module):
    with server_module("vllm_server").VLLMLikeServer(smollm2_file.path, n_ctx=512) as srv:
        yield srv


@pytest.fixture
def server(loopback):
    """The module's server, in vLLM's shape and with no faults queued."""
    loopback.prompt_logprobs, loopback.vllm_fields, loopback.tokenizer_api = True, True, "vllm"
    loopback.min_max_tokens, loopback.num_gpu_blocks = 0, 96
    loopback._faults.clear()
    return loopback


@pytest.fixture(scope="module")
def direct(loopback):
    """llama.cpp's own one-pass log-probs of a token sequence (row i predicts token i+1), read
    here from the model the server holds (one model load for the module)."""
    from llama_cpp import Llama

    llm = loopback.llm

    def logprobs(ids: list[int]) -> np.ndarray:
        with loopback._lock:
            llm.reset()
            llm.eval(ids)
            logits = np.array(llm.scores[:len(ids)], dtype=np.float32)
        return Llama.logits_to_logprobs(logits)

    logprobs.llm = llm  # type: ignore[attr-defined]
    return logprobs


def spec(server, **extra):
    return {"backend": "openai", "model_id": "loopback", "base_url": server.base_url,
            "api_key_optional": True, "api_key_env": "COPYPROBE_UNSET_KEY_FOR_LOCAL_SERVER",
            "request_timeout": 60, "echo_logprobs": True, **extra}


@pytest.fixture
def backend(server):
    b = OpenAIBackend.from_config(spec(server), None)
    yield b
    b.close()


def check_against_direct(scores: TokenScores, ids: list[int], direct) -> None:
    """The scores of ids[n_context_tokens:] equal llama.cpp's one pass over ``ids``."""
    start = scores.n_context_tokens
    assert list(scores.token_ids) == ids[start:]
    lp = direct(ids)
    want = [float(lp[i - 1, ids[i]]) for i in range(start, len(ids))]
    assert scores.logprobs == pytest.approx(want, abs=1e-6)
    assert scores.log_pz == pytest.approx(math.fsum(want), abs=1e-5)
    assert list(scores.argmax) == [int(np.argmax(lp[i - 1])) == ids[i]
                                   for i in range(start, len(ids))]
    assert scores.path == "server_echo"


@pytest.mark.slow
def test_token_level_scores_equal_llama_cpp_one_pass(backend, server, direct):
    ids = direct.llm.tokenize(MIT.encode(), add_bos=False, special=False)
    assert backend.tokenize(MIT) == ids and backend.detokenize(ids) == MIT
    assert backend.server_tokenizer().add_bos is False  # SmolLM2 adds no BOS
    reqs = [ScoreRequest(context_ids=tuple(ids[:8]), target_ids=tuple(ids[8:])),
            ScoreRequest(context_ids=tuple(ids[:3]), target_ids=tuple(ids[3:10]))]
    before = len(server.requests)
    out = backend.score_batch(reqs)
    sent = [b for p, b in server.requests[before:] if p == "/v1/completions"]
    assert len(sent) == 1 and sent[0]["prompt"] == [ids, ids[:10]]  # one batched request
    assert sent[0]["echo"] is True and sent[0]["logprobs"] == 1 and sent[0]["max_tokens"] == 0
    check_against_direct(out[0], ids, direct)
    check_against_direct(out[1], ids[:10], direct)
    assert out[0].n_context_tokens == 8 and out[0].token_texts[0] == direct.llm.detokenize(
        [ids[8]]).decode()
    assert any(out[0].argmax) and not all(out[0].argmax)  # the flag is read, not constant


@pytest.mark.slow
def test_openai_format_without_vllm_fields_gives_the_same_scores(backend, server, direct):
    ids = direct.llm.tokenize(MIT.encode(), add_bos=False, special=False)
    req = ScoreRequest(context_ids=tuple(ids[:8]), target_ids=tuple(ids[8:]))
    with_ranks = backend.score_batch([req])[0]
    server.vllm_fields = False  # token_logprobs + top_logprobs only
    answer = server.completions({"prompt": ids[:3], "echo": True, "logprobs": 1,
                                 "max_tokens": 0})
    assert "prompt_logprobs" not in answer["choices"][0]
    plain = backend.score_batch([req])[0]
    assert plain.logprobs == with_ranks.logprobs and plain.argmax == with_ranks.argmax


@pytest.mark.slow
def test_a_server_that_refuses_max_tokens_0_gets_1_and_the_new_token_is_ignored(backend,
                                                                               server):
    req = ScoreRequest(context_ids=(19556, 905), target_ids=(30, 288))
    want = backend.score_batch([req])[0]
    server.min_max_tokens = 1
    before = len(server.requests)
    got = backend.score_batch([req])[0]
    assert [b["max_tokens"] for p, b in server.requests[before:] if p == "/v1/completions"] \
        == [0, 1]
    assert got == want


@pytest.mark.slow
def test_text_level_completion_scores_the_target_tokens_as_they_occur(backend, direct):
    # "here" + "by granted": " hereby" is one token across the boundary and counts as target
    req = ScoreRequest(prompt=Prompt("completion", text="Permission is here"),
                       target="by granted, free of charge")
    out = backend.score_batch([req])[0]
    ids = direct.llm.tokenize(b"Permission is hereby granted, free of charge", add_bos=False,
                              special=True)
    alone = direct.llm.tokenize(b"Permission is here", add_bos=False, special=True)
    assert out.n_context_tokens == len(alone) - 1 and out.token_texts[0] == " hereby"
    check_against_direct(out, ids, direct)


@pytest.mark.slow
def test_chat_target_is_the_next_assistant_turn_under_the_template(backend, direct):
    prompt = Prompt("chat", messages=({"role": "user", "content": "Continue: Permission is"},))
    target = " hereby granted, free of charge"
    out = backend.score_batch([ScoreRequest(prompt=prompt, target=target)])[0]
    # SmolLM2's template, written out here (independent of the server's Jinja rendering)
    head = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nContinue: Permission "
            "is<|im_end|>\n<|im_start|>assistant\n")
    ids = direct.llm.tokenize((head + target).encode(), add_bos=False, special=True)
    assert out.n_context_tokens == len(direct.llm.tokenize(head.encode(), add_bos=False,
                                                           special=True))
    assert "".join(out.token_texts) == target  # no end-of-turn token is scored
    check_against_direct(out, ids, direct)


@pytest.mark.slow
def test_server_without_prompt_logprobs_is_a_permanent_error(server, tmp_path):
    server.prompt_logprobs = False  # llama.cpp's server (#27174)
    res = run_scoring([ScoreRequest(context_ids=(1, 2, 3), target_ids=(4, 5))],
                      backend_name="openai", identity={"model_id": "loopback"},
                      backend_factory=lambda: OpenAIBackend.from_config(spec(server), None),
                      cache=GenerationCache(tmp_path), path="server_echo")[0]
    assert not res.ok and res.attempts == 1 and res.error_class == "NoPromptLogprobs"
    assert "does not return prompt log-probs" in res.error and "echo_logprobs" in res.error


@pytest.mark.slow
def test_an_echo_server_gives_no_distribution_moments(server, tmp_path):
    res = run_scoring([ScoreRequest(context_ids=(19556,), target_ids=(905, 30), moments=True)],
                      backend_name="openai", identity={"model_id": "loopback"},
                      backend_factory=lambda: OpenAIBackend.from_config(spec(server), None),
                      cache=GenerationCache(tmp_path), path="server_echo")[0]
    assert not res.ok and res.error_class == "MomentsUnavailable"
    assert "does not see the full distribution" in res.error


@pytest.mark.slow
def test_503_is_retried_once_and_a_rerun_is_served_from_the_cache(server, tmp_path):
    reqs = [ScoreRequest(context_ids=(19556,), target_ids=(905, 30))]
    calls = []

    def factory():
        calls.append(1)
        return OpenAIBackend.from_config(spec(server), None)

    kwargs = dict(backend_name="openai", identity={"model_id": "loopback"},
                  backend_factory=factory, cache=GenerationCache(tmp_path), path="server_echo",
                  retry=RetryPolicy(base_delay=0.01, max_delay=0.05))
    server.fail_next(503, path="/v1/completions")
    before = len(server.requests)
    first = run_scoring(reqs, **kwargs)[0]
    assert first.ok and first.attempts == 2 and not first.from_cache
    assert [p for p, _ in server.requests[before:]].count("/v1/completions") == 2
    before = len(server.requests)
    again = run_scoring(reqs, **kwargs)[0]
    assert again.from_cache and again.scores == first.scores
    assert len(server.requests) == before and len(calls) == 1  # no request, no backend


@pytest.mark.slow
def test_one_prompt_over_the_context_fails_alone(backend):
    reqs = [ScoreRequest(context_ids=(19556,), target_ids=(905,) * 600),
            ScoreRequest(context_ids=(19556,), target_ids=(905, 30))]
    out = backend.score_batch(reqs)
    assert isinstance(out[0], BackendError) and out[0].error_class == "ContextLengthError"
    assert isinstance(out[1], TokenScores) and len(out[1].token_ids) == 2


@pytest.mark.slow
def test_without_echo_logprobs_the_backend_refuses(server):
    b = OpenAIBackend.from_config(spec(server, echo_logprobs=False), None)
    with pytest.raises(BackendError) as info:
        b.score_batch([ScoreRequest(context_ids=(1,), target_ids=(2,))])
    assert info.value.permanent and "echo_logprobs: true" in str(info.value)
    b.close()


@pytest.mark.slow
@pytest.mark.parametrize("api", ["llama.cpp", "none"])
def test_server_without_vllm_tokenize_is_a_clear_error(server, api):
    server.tokenizer_api = api
    tok = load_tokenizer(spec(server), None)
    try:
        with pytest.raises(BackendError) as info:
            tok.tokenize("Hello world")
        assert info.value.permanent and info.value.error_class == "TokenizerUnavailable"
        assert "/tokenize" in str(info.value) and "{content}" in str(info.value)
    finally:
        tok.close()


@pytest.mark.slow
def test_empty_context_without_bos_cannot_be_scored(backend):
    out = backend.score_batch([ScoreRequest(context_ids=(), target_ids=(19556, 905))])[0]
    assert isinstance(out, BackendError) and out.permanent


def test_clamped_and_missing_logprobs():
    """vLLM sends -inf as -9999.0 (read back as -inf, which the runner fails); an answer whose
    prompt log-probs lack the token sent is malformed (a hand-written answer: a real model
    does not produce either)."""
    choice = {"logprobs": {"tokens": ["a", "b", "c"], "token_logprobs": [None, -0.5, -9999.0],
                           "top_logprobs": [None, {"b": -0.5}, {"x": -0.1, "c": -9999.0}],
                           "text_offset": [0, 1, 2]}}
    out = read_echo_scores(choice, [1, 2, 3], 1, where="w")
    assert out.logprobs == (-0.5, -math.inf) and out.argmax == (True, False) and not out.finite
    bad = {**choice, "prompt_logprobs": [None, {"7": {"logprob": -1.0, "rank": 1}},
                                         {"3": {"logprob": -2.0, "rank": 2}}]}
    with pytest.raises(BackendError) as info:
        read_echo_scores(bad, [1, 2, 3], 1, where="w")
    assert info.value.error_class == "MalformedResponse" and not info.value.permanent


@pytest.mark.slow
def test_server_root():
    assert server_root("http://h:8000/v1") == server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("http://h/proxy") == "http://h/proxy"


@pytest.mark.parametrize("blocks, expected, said", [
    (96, 3, "vLLM's KV cache holds 1536 tokens, 3 request(s) of max_model_len 512"),
    (16, 1, "vLLM's KV cache holds 256 tokens, 0 request(s) of max_model_len 512"),
    (100_000, 128, "capped at 128"),
    (None, 8, "vLLM, whose /metrics gives no KV cache size: 8")])
def test_a_local_vllm_server_gets_the_requests_its_kv_cache_holds(server, caplog, blocks,
                                                                   expected, said):
    """vLLM reports no max_num_seqs: a local one (owned_by "vllm" in /v1/models) is sent the
    full-length requests its KV cache holds (/metrics cache_config_info over max_model_len),
    between 1 and 128, or 8 without that line; the log says which."""
    server.num_gpu_blocks = blocks
    with caplog.at_level(logging.INFO, logger="copyprobe.generation.limits"):
        assert default_concurrency("openai", server.base_url) == expected
    assert f"{expected} request(s) at a time" in caplog.text and said in caplog.text
