"""The embedded CPU backend: llama.cpp through llama-cpp-python, on a local GGUF file.

Reference: docs/backends.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from copyprobe.generation.base import Backend, BackendError, Completion, Decoding
from copyprobe.generation.logprob_scoring import (
    ScoreRequest,
    ScoringBackend,
    TokenScores,
    first_target_token,
    logit_scores,
    logit_scores_and_moments,
)
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

log = logging.getLogger(__name__)


def _llama_class() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BackendError("llama-cpp-python is not installed", permanent=True) from exc
    return Llama


class LlamaTokenizer:
    """The :class:`~copyprobe.generation.logprob_scoring.Tokenizer` of a ``Llama`` instance (a
    ``vocab_only`` one loads no weights): plain text, no BOS, no special-token parsing."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        # llama.cpp adds BOS only where the model's vocabulary asks for it
        self.add_bos = len(llm.tokenize(b"a", add_bos=True)) > len(llm.tokenize(b"a",
                                                                                add_bos=False))

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def detokenize(self, ids: Sequence[int]) -> str:
        return bytes(self.llm.detokenize(list(ids))).decode("utf-8", errors="replace")


class LlamaCppBackend(Backend, ScoringBackend):
    name = "llamacpp"
    score_paths = ("one_pass", "stepwise")
    max_score_batch = 1

    def __init__(self, model_path: str | Path, *, weights_sha256: str, model_id: str,
                 n_ctx: int = 4096, n_threads: int | None = None,
                 load_generation: bool = True) -> None:
        _llama_class()
        self.model_path = Path(model_path)
        self.model_id = model_id
        self.weights_sha256 = weights_sha256
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.llm: Any = self._load(logits_all=False) if load_generation else None
        self._scorer: Any = None  # the logits_all=True instance, loaded by the first one_pass
        self._tokenizer: LlamaTokenizer | None = None

    def _load(self, *, logits_all: bool) -> Any:
        # n_threads_batch (prompt processing) follows n_threads: left unset, llama-cpp-python
        # takes every core of the machine for it, whatever the job reserved
        llm = _llama_class()(model_path=str(self.model_path), n_ctx=self.n_ctx,
                             n_threads=self.n_threads, n_threads_batch=self.n_threads, seed=0,
                             logits_all=logits_all, verbose=False)
        log.info("llama.cpp: %s, n_ctx %d, n_threads %d, n_threads_batch %d%s",
                 self.model_path.name, self.n_ctx, llm.n_threads, llm.n_threads_batch,
                 ", logits_all (scoring)" if logits_all else "")
        return llm

    def _generation_llm(self) -> Any:
        if self.llm is None:
            self.llm = self._load(logits_all=False)
        return self.llm

    def _scoring_llm(self) -> Any:
        if self._scorer is None:
            self._scorer = self._load(logits_all=True)
        return self._scorer

    @classmethod
    def _from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None,
                     load_generation: bool) -> LlamaCppBackend:
        if model_file is None:
            raise BackendError("llamacpp needs a model_file", permanent=True)
        return cls(model_file.path, weights_sha256=model_file.sha256,
                   model_id=spec.get("model_id", model_file.path.name),
                   n_ctx=spec.get("n_ctx", 4096), n_threads=spec.get("n_threads"),
                   load_generation=load_generation)

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> LlamaCppBackend:
        return cls._from_config(spec, model_file, load_generation=True)

    @classmethod
    def scorer_from_config(cls, spec: Mapping[str, Any],
                           model_file: ModelFile | None) -> LlamaCppBackend:
        # no generation instance: each scoring path loads the instance it runs on
        return cls._from_config(spec, model_file, load_generation=False)

    @classmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> LlamaTokenizer:
        if model_file is None:
            raise BackendError("llamacpp needs a model_file", permanent=True)
        from llama_cpp._utils import suppress_stdout_stderr

        # a vocabulary-only load still makes a context, and llama.cpp warns on stderr that its
        # default n_ctx (512) exceeds the n_ctx_train it does not read (0): meaningless here
        with suppress_stdout_stderr(disable=False):
            llm = _llama_class()(model_path=str(model_file.path), vocab_only=True,
                                 verbose=False)
        return LlamaTokenizer(llm)

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        # The chat template is inside the GGUF file, so the weights hash covers it.
        if model_file is None:
            raise BackendError("llamacpp needs a model_file", permanent=True)
        return {
            "model_id": spec.get("model_id", model_file.path.name),
            "weights_sha256": model_file.sha256,
            "n_ctx": spec.get("n_ctx", 4096),
            "min_p": 0.0,
            "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        }

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        self._generation_llm().reset()
        seed = decoding.seed + sample_index
        self.llm.set_seed(seed)
        kwargs: dict[str, Any] = {
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "top_k": decoding.top_k,
            "min_p": 0.0,
            "repeat_penalty": decoding.repeat_penalty,
            "max_tokens": decoding.max_tokens,
            "seed": seed,
        }
        try:
            if prompt.format == "chat":
                out = self.llm.create_chat_completion(messages=[dict(m) for m in prompt.messages],
                                                      **kwargs)
                choice = out["choices"][0]
                text = choice["message"]["content"] or ""
            else:
                out = self.llm.create_completion(prompt=prompt.text, **kwargs)
                choice = out["choices"][0]
                text = choice["text"]
        except ValueError as exc:  # e.g. "Requested tokens exceed context window"
            raise BackendError(str(exc), permanent=True, error_class="ContextLengthError") from exc
        usage = out.get("usage") or {}
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"),
                          finish_reason=choice.get("finish_reason"))

    # -- scoring -------------------------------------------------------------------------------
    def _tokens(self) -> LlamaTokenizer:
        if self._tokenizer is None:
            llm = next((x for x in (self._scorer, self.llm) if x is not None), None)
            self._tokenizer = LlamaTokenizer(llm if llm is not None else self._scoring_llm())
        return self._tokenizer

    def tokenize(self, text: str) -> list[int]:
        return self._tokens().tokenize(text)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._tokens().detokenize(ids)

    def _render_chat(self, llm: Any, prompt: Prompt) -> str:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise BackendError(f"{self.model_id} has no chat template: use completion prompts",
                               permanent=True, error_class="BadRequestError")

        def text(tok: int) -> str:
            return "" if tok < 0 else bytes(llm.detokenize([tok], special=True)).decode(
                "utf-8", errors="replace")

        try:
            return Jinja2ChatFormatter(template=template, eos_token=text(llm.token_eos()),
                                       bos_token=text(llm.token_bos()),
                                       add_generation_prompt=True)(
                messages=[dict(m) for m in prompt.messages]).prompt
        except Exception as exc:  # jinja2 errors, raise_exception in the template
            raise BackendError(f"chat template failed: {exc}", permanent=True,
                               error_class="TemplateError") from exc

    def _sequence(self, llm: Any, req: ScoreRequest) -> tuple[list[int], int]:
        """The scored sequence and how many of its tokens precede the target."""
        bos = [llm.token_bos()] if self._tokens().add_bos else []
        if req.token_level:
            context = bos + list(req.context_ids or ())
            return context + list(req.target_ids or ()), len(context)
        assert req.prompt is not None and req.target is not None
        if req.prompt.format == "chat":
            before, bos = self._render_chat(llm, req.prompt), []  # the template has its BOS
        else:
            before = req.prompt.text
        data = (before + req.target).encode("utf-8")
        # special=True: the template's (and a completion prompt's) special tokens are parsed,
        # as llama-cpp-python's chat and text completion do
        ids = list(llm.tokenize(data, add_bos=False, special=True))
        pieces = [bytes(llm.detokenize([t], special=True)) for t in ids]
        joined = b"".join(pieces)
        shift = 0 if joined == data else 1 if joined == b" " + data else None
        if shift is None:
            raise BackendError("cannot align the tokens with the text (the detokenised pieces "
                               "differ from it)", permanent=True, error_class="TokenizationError")
        ends, total = [], -shift
        for piece in pieces:
            total += len(piece)
            ends.append(total)
        return bos + ids, len(bos) + first_target_token(ends, len(before.encode("utf-8")))

    def score_batch(self, requests: Sequence[ScoreRequest], *,
                    path: str | None = None) -> list[TokenScores | BackendError]:
        path = self.check_score_path(path)
        llm = self._scoring_llm() if path == "one_pass" else self._generation_llm()
        out: list[TokenScores | BackendError] = []
        for req in requests:
            try:
                out.append(self._score(llm, req, path))
            except BackendError as exc:
                out.append(exc)
        return out

    def _score(self, llm: Any, req: ScoreRequest, path: str) -> TokenScores:
        import numpy as np

        ids, n_context = self._sequence(llm, req)
        target = ids[n_context:]
        if n_context == 0 or not target:
            raise BackendError(f"nothing to score: {n_context} tokens before the target and "
                               f"{len(target)} in it", permanent=True,
                               error_class="BadRequestError")
        if len(ids) > self.n_ctx:
            raise BackendError(f"a sequence of {len(ids)} tokens does not fit n_ctx "
                               f"{self.n_ctx}", permanent=True, error_class="ContextLengthError")
        llm.reset()
        if path == "one_pass":
            llm.eval(ids)
            rows = np.array(llm.scores[n_context - 1:len(ids) - 1], dtype=np.float32)
        else:  # stepwise, on the generation instance (logits of the last position only)
            import llama_cpp

            n_vocab = llm.n_vocab()

            def last() -> Any:
                ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
                return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()

            llm.eval(ids[:n_context])
            rows_list = [last()]
            for tok in target[:-1]:
                llm.eval([tok])
                rows_list.append(last())
            rows = np.stack(rows_list)
        if req.moments:
            logprobs, argmax, mean, std = logit_scores_and_moments(rows, target)
        else:
            (logprobs, argmax), mean, std = logit_scores(rows, target), [], []
        texts = tuple(bytes(llm.detokenize([t], special=True)).decode("utf-8", errors="replace")
                      for t in target)
        return TokenScores(token_ids=tuple(target), logprobs=tuple(logprobs),
                           argmax=tuple(argmax), path=path, n_context_tokens=n_context,
                           token_texts=texts, dist_mean=tuple(mean), dist_std=tuple(std))

    def close(self) -> None:
        for attr in ("llm", "_scorer"):
            llm = getattr(self, attr, None)
            if llm is not None:
                llm.close()
                setattr(self, attr, None)
        self._tokenizer = None
