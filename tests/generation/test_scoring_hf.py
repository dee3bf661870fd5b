"""Scoring on transformers, the real SmolLM2-135M-Instruct GGUF dequantised to float32: one
forward pass equals decoding step by step (log p_z within 1e-4 relative), against the
incremental path and against the logits that ``generate`` itself reads while it decodes; the
greedy-match flag against greedy generation; batching; a target split differently in context;
bad inputs."""

from __future__ import annotations

import pytest

from copyprobe.generation.base import BackendError, Decoding
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores, load_tokenizer
from copyprobe.prompt import Prompt

pytestmark = pytest.mark.slow

CHAT = Prompt("chat", messages=({"role": "user", "content": "What is the capital of France?"},))
REL = 1e-4


def _scores(backend, reqs, path=None):
    out = backend.score_batch(reqs, path=path)
    assert all(isinstance(x, TokenScores) for x in out), out
    return out


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def windows(smollm2_hf, window_texts, windows_of):
    """Three windows of a control document (prefix 50, suffix 25: stepwise decoding is one
    forward per token on 2 cores)."""
    ids = smollm2_hf.tokenize(window_texts[1])
    return [ScoreRequest(context_ids=c, target_ids=t) for c, t in windows_of(ids, 3, suffix=25)]


def test_one_pass_equals_stepwise_decoding(smollm2_hf, windows):
    one = _scores(smollm2_hf, windows, "one_pass")
    step = _scores(smollm2_hf, windows, "stepwise")
    for a, b, req in zip(one, step, windows, strict=True):
        assert (a.path, b.path) == ("one_pass", "stepwise")
        assert a.token_ids == b.token_ids == req.target_ids and len(a.token_ids) == 25
        assert a.n_context_tokens == 50  # SmolLM2 adds no BOS
        assert _rel(a.log_pz, b.log_pz) < REL, (a.log_pz, b.log_pz)
        assert a.argmax == b.argmax


def test_one_pass_equals_the_logits_generate_reads(smollm2_hf, windows):
    """Greedy decoding with ``generate`` (its own per-step logits), then the generated tokens
    scored in one pass: the same log p_z and every position the argmax; a perturbed target
    is not greedy."""
    import torch

    model, tok = smollm2_hf.model, smollm2_hf.tokenizer
    for req in windows[:2]:
        prefix = torch.tensor([list(req.context_ids)])
        with torch.inference_mode():
            out = model.generate(input_ids=prefix, attention_mask=torch.ones_like(prefix),
                                 do_sample=False, max_new_tokens=12, min_new_tokens=12,
                                 output_logits=True, return_dict_in_generate=True,
                                 pad_token_id=tok.eos_token_id, repetition_penalty=1.0)
        new = out.sequences[0, prefix.shape[1]:].tolist()
        steps = [float(torch.log_softmax(lg[0].double(), -1)[t]) for lg, t in
                 zip(out.logits, new, strict=True)]
        scored = _scores(smollm2_hf, [ScoreRequest(context_ids=req.context_ids,
                                                   target_ids=tuple(new))])[0]
        assert scored.greedy_match
        assert _rel(scored.log_pz, sum(steps)) < REL, (scored.log_pz, sum(steps))
        for got, want in zip(scored.logprobs, steps, strict=True):
            assert abs(got - want) < 1e-3
        wrong = new[:-1] + [new[-1] + 1]
        perturbed = _scores(smollm2_hf, [ScoreRequest(context_ids=req.context_ids,
                                                      target_ids=tuple(wrong))])[0]
        assert not perturbed.greedy_match and all(perturbed.argmax[:-1])


def test_a_batch_scores_as_its_items_alone(smollm2_hf, windows):
    short = ScoreRequest(context_ids=windows[0].context_ids[:7],
                         target_ids=windows[0].target_ids[:5])
    reqs = [*windows[:2], short]
    batch = _scores(smollm2_hf, reqs)  # right padding to the longest
    assert smollm2_hf.max_score_batch == 4
    for req, got in zip(reqs, batch, strict=True):
        alone = _scores(smollm2_hf, [req])[0]
        assert got.token_ids == alone.token_ids
        assert _rel(got.log_pz, alone.log_pz) < 1e-5


def test_chat_greedy_answer_is_greedy_under_the_template(smollm2_hf):
    text = smollm2_hf.generate(CHAT, Decoding(max_tokens=12)).text
    assert "paris" in text.lower()
    s = _scores(smollm2_hf, [ScoreRequest(prompt=CHAT, target=text)])[0]
    assert s.greedy_match and "".join(s.token_texts) == text
    assert s.n_context_tokens > 20  # SmolLM2's template adds its default system turn
    other = _scores(smollm2_hf, [ScoreRequest(prompt=CHAT, target="Berlin.")])[0]
    assert not other.greedy_match and other.log_pz < s.log_pz


def test_target_split_differently_in_context_is_scored_as_it_occurs(smollm2_hf):
    prompt = Prompt("completion", text="The licence")
    s = _scores(smollm2_hf, [ScoreRequest(prompt=prompt, target="s are free")])[0]
    whole = smollm2_hf.tokenize("The licences are free")
    assert s.token_ids == tuple(whole[s.n_context_tokens:])
    assert s.token_texts[0] == "ences" and "".join(s.token_texts) == "ences are free"
    assert list(s.token_ids) != smollm2_hf.tokenize("s are free")


def test_bad_inputs_are_permanent_failures(smollm2_hf):
    long = ScoreRequest(context_ids=(42,) * 8200, target_ids=(43,))  # the context is 8192
    empty = ScoreRequest(context_ids=(), target_ids=(42,))
    long_err, empty_err = smollm2_hf.score_batch([long, empty])
    assert isinstance(long_err, BackendError) and long_err.permanent
    assert long_err.error_class == "ContextLengthError"
    assert isinstance(empty_err, BackendError) and empty_err.error_class == "BadRequestError"
    with pytest.raises(BackendError, match="server_echo"):
        smollm2_hf.score_batch([empty], path="server_echo")


def test_tokenizer_alone_matches_the_model(smollm2_hf, smollm2_file):
    tok = load_tokenizer({"backend": "hf"}, smollm2_file)
    text = "The harbour master kept a log of every ship.\n\n  Each entry named the tide."
    assert tok.tokenize(text) == smollm2_hf.tokenize(text)
    assert tok.detokenize(tok.tokenize(text)) == text and tok.add_bos is False


def test_moments_in_a_batch_and_stepwise(smollm2_hf, windows):
    """The next-token distribution's moments where asked (one request of a batch), equal on
    both paths and to a float64 softmax of the model's logits."""
    import numpy as np
    import torch
    from scipy.special import log_softmax

    asked = ScoreRequest(context_ids=windows[0].context_ids,
                         target_ids=windows[0].target_ids, moments=True)
    batch = _scores(smollm2_hf, [asked, windows[1]], "one_pass")
    assert batch[0].has_moments and not batch[1].has_moments
    step = _scores(smollm2_hf, [asked], "stepwise")[0]
    assert step.dist_mean == pytest.approx(batch[0].dist_mean, abs=1e-4)
    ids = torch.tensor([[*asked.context_ids, *asked.target_ids]])
    with torch.inference_mode():
        logits = smollm2_hf.model(input_ids=ids).logits[0, 49:-1].double().numpy()
    logp = log_softmax(logits, axis=1)
    mu = (np.exp(logp) * logp).sum(1)
    assert batch[0].dist_mean == pytest.approx(list(mu), abs=1e-4)
    sd = np.sqrt((np.exp(logp) * logp ** 2).sum(1) - mu ** 2)
    assert batch[0].dist_std == pytest.approx(list(sd), abs=1e-4)
