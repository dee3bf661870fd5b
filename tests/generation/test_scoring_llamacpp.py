"""Scoring on llama.cpp, the real SmolLM2-135M-Instruct GGUF: token-level and text-level
requests, both paths, the greedy-match flag against greedy generation, a target that the
tokenizer splits differently in context than alone, and the bad inputs."""

from __future__ import annotations

import math

import pytest

from copyprobe.generation.base import BackendError, Decoding
from copyprobe.generation.llamacpp import LlamaCppBackend
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores, load_tokenizer
from copyprobe.prompt import Prompt

pytestmark = pytest.mark.slow

# one thread: llama.cpp's threads spin while they wait, so two on a busy 2-core machine are
# many times slower than one
SPEC = {"backend": "llamacpp", "n_ctx": 512, "n_threads": 1}
STORY = Prompt("completion", text="Once upon a time, in a small village by the sea,")
CHAT = Prompt("chat", messages=({"role": "user", "content": "What is the capital of France?"},))
GREEDY = Decoding(max_tokens=16)


@pytest.fixture(scope="module")
def llama(smollm2_file):
    backend = LlamaCppBackend.from_config(SPEC, smollm2_file)
    yield backend
    backend.close()


def _one(backend, req, path=None):
    out = backend.score_batch([req], path=path)[0]
    assert isinstance(out, TokenScores), out
    return out


def test_tokenizer_loads_no_weights_and_matches_the_model(llama, smollm2_file):
    tok = load_tokenizer(SPEC, smollm2_file)
    text = "The harbour master kept a log of every ship."
    assert tok.tokenize(text) == llama.tokenize(text)
    assert tok.detokenize(tok.tokenize(text)) == text
    assert tok.add_bos is False  # SmolLM2's GGUF does not ask for BOS
    assert "<|im_start|>" not in text and len(tok.tokenize("<|im_start|>")) > 1  # no specials


def test_token_level_paths_record_themselves(llama, window_texts, windows_of):
    ids = llama.tokenize(window_texts[0])
    gaps = []
    for context, target in windows_of(ids, 2, suffix=20):
        req = ScoreRequest(context_ids=context, target_ids=target)
        one, step = _one(llama, req, "one_pass"), _one(llama, req, "stepwise")
        assert (one.path, step.path) == ("one_pass", "stepwise")
        for s in (one, step):
            assert s.token_ids == target and s.n_context_tokens == len(context)  # no BOS
            assert len(s.token_texts) == len(target) and s.finite and s.log_pz < 0
            assert all(x <= 0 for x in s.logprobs)
        gaps.append(abs(one.log_pz - step.log_pz) / len(target))
    # not bit-equal (batched vs token-by-token kernels), but close: the benchmark measures it
    assert all(math.isfinite(g) and g < 0.5 for g in gaps)
    assert llama.check_score_path(None) == "one_pass"
    with pytest.raises(BackendError, match="prompt_logprobs"):
        llama.score_batch([req], path="prompt_logprobs")


@pytest.mark.parametrize("prompt", [STORY, CHAT], ids=["completion", "chat"])
def test_greedy_flag_agrees_with_greedy_generation(llama, prompt):
    text = llama.generate(prompt, GREEDY).text
    assert text.strip()
    greedy = ScoreRequest(prompt=prompt, target=text)
    for path in ("stepwise", "one_pass"):
        s = _one(llama, greedy, path)
        assert s.greedy_match, (path, s.token_texts, s.argmax)
        assert "".join(s.token_texts) == text
    # the last word changed: not what greedy decoding produces
    words = text.rstrip().split(" ")
    perturbed = " ".join(words[:-1] + ["zebra" if words[-1] != "zebra" else "otter"])
    for path in ("stepwise", "one_pass"):
        s = _one(llama, ScoreRequest(prompt=prompt, target=perturbed), path)
        assert not s.greedy_match and s.argmax[0]


def test_chat_target_is_the_assistant_turn_of_the_models_template(llama):
    s = _one(llama, ScoreRequest(prompt=CHAT, target="Paris."))
    # SmolLM2's template adds its default system turn and opens the assistant turn
    assert s.token_texts == ("Paris", ".")
    assert s.n_context_tokens > 20


def test_target_split_differently_in_context_is_scored_as_it_occurs(llama):
    # "licence" alone is " lic" + "ence"; followed by "s" it becomes " lic" + "ences": the
    # token that straddles the prompt/target boundary is target
    prompt = Prompt("completion", text="The licence")
    s = _one(llama, ScoreRequest(prompt=prompt, target="s are free"))
    whole = llama.tokenize("The licences are free")
    assert s.token_ids == tuple(whole[s.n_context_tokens:])
    assert s.token_texts[0] == "ences" and "".join(s.token_texts) == "ences are free"
    assert list(s.token_ids) != llama.tokenize("s are free")  # alone it splits otherwise
    assert llama.tokenize("The licence") != whole[:s.n_context_tokens]
    step = _one(llama, ScoreRequest(prompt=prompt, target="s are free"), "stepwise")
    assert step.token_ids == s.token_ids


def test_bad_inputs_are_permanent_failures(llama):
    ids = llama.tokenize("word " * 600)
    too_long = ScoreRequest(context_ids=tuple(ids[:500]), target_ids=tuple(ids[500:520]))
    empty = ScoreRequest(context_ids=(), target_ids=(42,))  # no BOS, nothing before
    ok = ScoreRequest(context_ids=tuple(ids[:5]), target_ids=tuple(ids[5:8]))
    long_err, empty_err, fine = llama.score_batch([too_long, empty, ok])
    assert isinstance(long_err, BackendError) and long_err.permanent
    assert long_err.error_class == "ContextLengthError"
    assert isinstance(empty_err, BackendError) and empty_err.error_class == "BadRequestError"
    assert isinstance(fine, TokenScores)


def test_generation_is_unchanged_by_scoring(llama, smollm2_file):
    before = llama.generate(STORY, GREEDY)
    _one(llama, ScoreRequest(prompt=STORY, target=" to deal"), "stepwise")  # on its instance
    assert llama.generate(STORY, GREEDY) == before
    # the cache key of generation is what it was
    assert set(LlamaCppBackend.identity_from_config(SPEC, smollm2_file)) == {
        "model_id", "weights_sha256", "n_ctx", "min_p", "llama_cpp_python"}
    scorer = LlamaCppBackend.scorer_from_config(SPEC, smollm2_file)
    try:
        assert scorer.llm is None  # scoring loads only the instance of its path
        req = ScoreRequest(prompt=STORY, target=" to deal")
        assert _one(scorer, req).logprobs == _one(llama, req).logprobs
        assert scorer.llm is None
    finally:
        scorer.close()


def test_moments_on_both_paths_and_only_when_asked(llama, window_texts, windows_of):
    ids = llama.tokenize(window_texts[0])
    (context, target), = windows_of(ids, 1, suffix=12)
    plain = ScoreRequest(context_ids=context, target_ids=target)
    asked = ScoreRequest(context_ids=context, target_ids=target, moments=True)
    assert "moments" not in plain.as_dict() and asked.as_dict()["moments"] is True
    assert not _one(llama, plain).has_moments
    one, step = _one(llama, asked, "one_pass"), _one(llama, asked, "stepwise")
    for s in (one, step):
        assert s.has_moments and len(s.dist_mean) == 12
        # the mean log-probability is minus the entropy: below 0, above -log(vocab)
        assert all(-math.log(49152) <= m <= 0 for m in s.dist_mean)
        assert all(sd >= 0 for sd in s.dist_std)
    assert one.logprobs == _one(llama, plain).logprobs  # asking changes no log-prob
    # the two kernels round differently; the moments agree as the log-probs do
    assert max(abs(a - b) for a, b in zip(one.dist_mean, step.dist_mean)) < 0.5
