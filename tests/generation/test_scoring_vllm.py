"""vLLM's engine path of scoring (``prompt_logprobs``), tested without vLLM: the conversion of
vLLM-shaped results into TokenScores (stand-ins of vLLM's documented ``Logprob`` and
``RequestOutput``: vllm/logprobs.py, vllm/outputs.py), ``score_batch`` driven through a
stand-in engine, and ``tokenizer_from_config`` with a real transformers tokenizer. The engine
itself runs only where a CUDA GPU and vLLM are (the last test)."""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from copyprobe.generation.base import BackendError
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores
from copyprobe.generation.vllm_backend import VLLMBackend, scores_from_request_output
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

HAVE_VLLM = importlib.util.find_spec("vllm") is not None


@dataclass
class Logprob:
    """vLLM's ``Logprob`` (vllm/logprobs.py): rank 1 is the argmax."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class RequestOutput:
    """The fields of vLLM's ``RequestOutput`` that scoring reads (prompt_logprobs: None first,
    then per position ``{token id: Logprob}``)."""

    prompt_token_ids: list[int]
    prompt_logprobs: list[dict[int, Logprob] | None] | None
    outputs: list[Any] = field(default_factory=list)


def test_prompt_logprobs_become_token_scores():
    ids = [5, 6, 7, 8, 9]
    entries = [None,
               {6: Logprob(-0.1, 1, "b")},
               {7: Logprob(-2.0, 3, "c"), 11: Logprob(-0.5, 1, "x")},
               {8: Logprob(-0.7, 2, "d"), 12: Logprob(-0.7, 1, "y")},  # a tie: still argmax
               {9: Logprob(-9999.0, 40000, "e"), 2: Logprob(-0.01, 1, "z")}]  # clamped -inf
    out = scores_from_request_output(RequestOutput(ids, entries), ids, 1)
    assert out.path == "prompt_logprobs" and out.n_context_tokens == 1
    assert out.token_ids == (6, 7, 8, 9) and out.token_texts == ("b", "c", "d", "e")
    assert out.logprobs == (-0.1, -2.0, -0.7, -math.inf) and not out.finite
    assert out.argmax == (True, False, True, False)
    part = scores_from_request_output(RequestOutput(ids, entries), ids, 3)
    assert part.token_ids == (8, 9) and part.n_context_tokens == 3


@pytest.mark.parametrize("output, error_class", [
    (RequestOutput([5, 6, 7], [None, {6: Logprob(-1.0, 1)}, {7: Logprob(-1.0, 1)}]),
     "MalformedResponse"),  # another prompt than the one sent
    (RequestOutput([5, 6], None), "MalformedResponse"),  # prompt_logprobs not set
    (RequestOutput([5, 6], [None, {9: Logprob(-1.0, 1)}]), "MalformedResponse"),  # token lacking
])
def test_unusable_outputs_are_errors(output, error_class):
    with pytest.raises(BackendError) as info:
        scores_from_request_output(output, [5, 6], 1)
    assert info.value.error_class == error_class


# -- a real transformers tokenizer (a tiny word-level one, with BOS and a chat template) ---------
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> "
            "{% endfor %}{% if add_generation_prompt %}<|assistant|> {% endif %}")
WORDS = ["hello", "world", "the", "cat", "sat", "on", "mat", "say", "hi"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    special = ["<s>", "</s>", "[UNK]", "<|user|>", "<|assistant|>", "<|end|>"]
    vocab = {t: i for i, t in enumerate(special + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[
        ("<s>", 0)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="[UNK]", additional_special_tokens=special[3:])
    fast.chat_template = TEMPLATE
    folder = tmp_path_factory.mktemp("tokenizer")
    fast.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tok(tokenizer_dir):
    return VLLMBackend.tokenizer_from_config(
        {"backend": "vllm", "model_id": "org/model", "tokenizer": str(tokenizer_dir)}, None)


@pytest.mark.slow
def test_tokenizer_from_config_reads_the_tokenizer_key(tok):
    assert tok.bos_ids == [0] and tok.add_bos
    ids = tok.tokenize("the cat sat")
    assert ids == [8, 9, 10] and tok.tokenize("the cat sat", special=True) == [0, 8, 9, 10]
    assert tok.detokenize(ids) == "the cat sat"
    chat = tok.tokenize_chat([{"role": "user", "content": "say hi"}], add_generation_prompt=True)
    assert chat == [0, 3, 13, 14, 5, 4]  # <s> <|user|> say hi <|end|> <|assistant|>
    open_turn = tok.tokenize_chat([{"role": "user", "content": "say hi"},
                                   {"role": "assistant", "content": "hello world"}],
                                  continue_final_message=True)
    assert open_turn == [*chat[:-1], 4, 6, 7]  # the turn is left open: no <|end|>


def test_a_gguf_without_tokenizer_key_is_a_config_error(tmp_path):
    gguf = ModelFile(tmp_path / "m.gguf", "0" * 64, 0, "test")
    with pytest.raises(BackendError) as info:
        VLLMBackend.tokenizer_from_config({"backend": "vllm"}, gguf)
    assert info.value.error_class == "ConfigError" and "'tokenizer'" in str(info.value)


class StandInEngine:
    """Answers ``LLM.generate`` as vLLM documents it for ``prompt_logprobs`` (deterministic
    numbers: position i's token has log-prob -0.25 * i and is the argmax on even ids); rejects
    the whole call when a prompt is over ``max_len``, as vLLM does."""

    def __init__(self, tokenizer: Any, max_len: int = 64) -> None:
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.calls: list[tuple[list[Any], Any]] = []

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        self.calls.append((prompts, sampling_params))
        out = []
        for p in prompts:
            ids = p["prompt_token_ids"]
            if len(ids) > self.max_len:
                raise ValueError(f"The decoder prompt (length {len(ids)}) is longer than the "
                                 f"maximum model length of {self.max_len}.")
            lps: list[dict[int, Logprob] | None] = [None]
            for i, t in enumerate(ids[1:], 1):
                rank = 1 if t % 2 == 0 else 2
                entry = {t: Logprob(-0.25 * i, rank, f"t{t}")}
                if rank != 1:
                    entry[1] = Logprob(-0.01, 1, "t1")
                lps.append(entry)
            out.append(RequestOutput(list(ids), lps))
        return out


class SamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.mark.slow
def test_score_batch_through_a_stand_in_engine(tok):
    engine = StandInEngine(tok.tokenizer)
    backend = VLLMBackend(engine, SamplingParams)
    chat = Prompt("chat", messages=({"role": "user", "content": "say hi"},))
    reqs = [ScoreRequest(context_ids=(8, 9), target_ids=(10, 11)),
            ScoreRequest(prompt=chat, target="hello world"),
            ScoreRequest(context_ids=(8,), target_ids=(9,) * 80)]  # over max_len: alone
    out = backend.score_batch(reqs)
    assert engine.calls[0][1].kwargs == {"prompt_logprobs": 1, "max_tokens": 1,
                                         "temperature": 0.0}
    assert engine.calls[0][0][0] == {"prompt_token_ids": [0, 8, 9, 10, 11]}  # BOS added
    assert isinstance(out[0], TokenScores) and out[0].path == "prompt_logprobs"
    assert out[0].token_ids == (10, 11) and out[0].n_context_tokens == 3
    assert out[0].logprobs == (-0.75, -1.0) and out[0].argmax == (True, False)
    assert isinstance(out[1], TokenScores) and out[1].token_ids == (6, 7)  # hello world
    assert out[1].n_context_tokens == 6
    assert isinstance(out[2], BackendError) and out[2].error_class == "ContextLengthError"
    assert backend.tokenize("hello world") == [6, 7]


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


GPU_REASON = ("needs a CUDA GPU and vllm installed (pip install copyprobe[vllm]); "
              f"cuda={_cuda()}, vllm={HAVE_VLLM}")


@pytest.mark.slow
@pytest.mark.skipif(not (_cuda() and HAVE_VLLM), reason=GPU_REASON)
def test_engine_scores_on_gpu():  # pragma: no cover - CUDA nodes only
    from copyprobe.generation.base import Decoding

    model = os.environ.get("COPYPROBE_VLLM_MODEL", "HuggingFaceTB/SmolLM2-135M-Instruct")
    spec = {"backend": "vllm", "model_id": model, "max_model_len": 2048,
            "gpu_memory_utilization": 0.3, "enforce_eager": True}
    backend = VLLMBackend.from_config(spec, None)
    try:
        ids = backend.tokenize("Permission is hereby granted, free of charge, to any person "
                               "obtaining a copy of this software")
        out = backend.score_batch([ScoreRequest(context_ids=tuple(ids[:6]),
                                                target_ids=tuple(ids[6:]))])[0]
        assert isinstance(out, TokenScores) and out.finite and out.path == "prompt_logprobs"
        assert out.token_ids == tuple(ids[6:]) and out.log_pz < 0
        if out.greedy_match:  # greedy decoding from the context reproduces the target
            text = Prompt("completion", text=backend.detokenize(ids[:6]))
            greedy = backend.generate(text, Decoding(max_tokens=len(ids) - 6))
            assert backend.tokenize(greedy.text)[:len(ids) - 6] == ids[6:]
    finally:
        backend.close()
