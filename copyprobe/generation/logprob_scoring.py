"""Scoring a given continuation: the per-token log-probabilities of a target after a context,
teacher-forced, from the backends that can compute them (the capability beside generation).

Reference: docs/backends.md.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from copyprobe.generation.base import BACKENDS, BackendError
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

#: The paths a score can come from (see the module text).
SCORE_PATHS = ("one_pass", "stepwise", "prompt_logprobs", "server_echo")


@dataclass(frozen=True)
class ScoreRequest:
    """What to score: token ids (``context_ids`` + ``target_ids``) or a prompt and a target
    string (``prompt`` + ``target``); exactly one of the two forms."""

    context_ids: tuple[int, ...] | None = None
    target_ids: tuple[int, ...] | None = None
    prompt: Prompt | None = None
    target: str | None = None
    #: also the moments of each position's next-token distribution (:class:`TokenScores`)
    moments: bool = False

    def __post_init__(self) -> None:
        tokens = self.context_ids is not None or self.target_ids is not None
        text = self.prompt is not None or self.target is not None
        if tokens == text:
            raise ValueError("a ScoreRequest is token ids (context_ids + target_ids) or a "
                             "prompt and a target, exactly one of the two")
        if tokens and (self.context_ids is None or not self.target_ids):
            raise ValueError("a token-level ScoreRequest needs context_ids and a non-empty "
                             "target_ids")
        if text and (self.prompt is None or not self.target):
            raise ValueError("a text-level ScoreRequest needs a prompt and a non-empty target")

    @property
    def token_level(self) -> bool:
        return self.target_ids is not None

    def as_dict(self) -> dict[str, Any]:
        """The request as JSON-able data (it enters the cache key; ``moments`` only when
        asked for, so the keys of requests without them are unchanged)."""
        if self.token_level:
            out = {"context_ids": list(self.context_ids or ()),
                   "target_ids": list(self.target_ids or ())}
        else:
            assert self.prompt is not None
            out = {"prompt": self.prompt.as_dict(), "format": self.prompt.format,
                   "target": self.target}
        if self.moments:
            out["moments"] = True
        return out


@dataclass(frozen=True)
class TokenScores:
    """The scores of one target: per target token (as it occurs in the scored sequence) its
    id, text, log-probability given everything before it, and whether it was the argmax."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    argmax: tuple[bool, ...]
    #: one of :data:`SCORE_PATHS`
    path: str
    #: tokens before the target in the scored sequence (BOS and template included)
    n_context_tokens: int
    token_texts: tuple[str, ...] = ()
    #: per target token, the mean ``sum_v p_v log p_v`` and standard deviation of the
    #: log-probability under the model's next-token distribution there (empty: not computed)
    dist_mean: tuple[float, ...] = ()
    dist_std: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if len(self.logprobs) != n or len(self.argmax) != n:
            raise ValueError(f"TokenScores: {n} tokens, {len(self.logprobs)} log-probs and "
                             f"{len(self.argmax)} argmax flags")
        if len(self.dist_mean) != len(self.dist_std) or len(self.dist_mean) not in (0, n):
            raise ValueError(f"TokenScores: {n} tokens, {len(self.dist_mean)} distribution "
                             f"means and {len(self.dist_std)} standard deviations")
        if self.path not in SCORE_PATHS:
            raise ValueError(f"TokenScores: unknown path {self.path!r} (one of {SCORE_PATHS})")

    @property
    def log_pz(self) -> float:
        """log p_z: the sum of the target tokens' log-probabilities (natural log)."""
        return math.fsum(self.logprobs)

    @property
    def greedy_match(self) -> bool:
        """The target is the argmax at every position: greedy decoding reproduces it."""
        return all(self.argmax)

    @property
    def finite(self) -> bool:
        return all(math.isfinite(x) for x in (*self.logprobs, *self.dist_mean, *self.dist_std))

    @property
    def has_moments(self) -> bool:
        return len(self.dist_mean) == len(self.token_ids)

    def as_dict(self) -> dict[str, Any]:
        out = {"token_ids": list(self.token_ids), "logprobs": list(self.logprobs),
               "argmax": list(self.argmax), "path": self.path,
               "n_context_tokens": self.n_context_tokens,
               "token_texts": list(self.token_texts)}
        if self.dist_mean:
            out.update(dist_mean=list(self.dist_mean), dist_std=list(self.dist_std))
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> TokenScores:
        return cls(token_ids=tuple(obj["token_ids"]),
                   logprobs=tuple(float(x) for x in obj["logprobs"]),
                   argmax=tuple(bool(x) for x in obj["argmax"]), path=obj["path"],
                   n_context_tokens=int(obj["n_context_tokens"]),
                   token_texts=tuple(obj.get("token_texts") or ()),
                   dist_mean=tuple(float(x) for x in obj.get("dist_mean") or ()),
                   dist_std=tuple(float(x) for x in obj.get("dist_std") or ()))


class Tokenizer(Protocol):
    """A model's own tokenizer, loaded without the weights where the engine allows it
    (llama.cpp's ``vocab_only``, a transformers tokenizer, a server's ``/tokenize``)."""

    #: the model's tokenizer puts a BOS token before a sequence (the scorer adds it)
    add_bos: bool

    def tokenize(self, text: str) -> list[int]:
        """The token ids of ``text``, without BOS or any special token."""

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of token ids."""


class ScoringBackend:
    """The scoring interface a backend class adds beside :class:`~copyprobe.generation.base.
    Backend` (a mixin). ``tokenize`` and ``detokenize`` use the model's own tokenizer, so that
    windows can be cut in its tokens."""

    #: the path :meth:`score_batch` takes unless told otherwise
    default_score_path: str = "one_pass"
    #: how many requests one :meth:`score_batch` call may take
    max_score_batch: int = 1

    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """The model's token ids of ``text``, without BOS or any special token."""

    @abstractmethod
    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of token ids."""

    @abstractmethod
    def score_batch(self, requests: Sequence[ScoreRequest], *,
                    path: str | None = None) -> list[TokenScores | BackendError]:
        """Score each request (one result or error per request, in order). ``path``: one of
        the backend's :attr:`score_paths` (default :attr:`default_score_path`); a path it does
        not have is a permanent :class:`BackendError`."""

    #: the paths this backend can take
    score_paths: tuple[str, ...] = ("one_pass",)

    @classmethod
    @abstractmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> Tokenizer:
        """The model's tokenizer, as light as the engine allows (windows are cut in it before
        any score is computed, so a fully cached run loads no weights)."""

    @classmethod
    def scorer_from_config(cls, spec: Mapping[str, Any],
                           model_file: ModelFile | None) -> ScoringBackend:
        """The backend loaded for scoring (a score runner's factory calls this). The default
        is ``from_config``; an engine that needs another instance to score (llama.cpp: the
        logits of every position) loads only that one here."""
        return cls.from_config(spec, model_file)  # type: ignore[attr-defined, no-any-return]

    def check_score_path(self, path: str | None) -> str:
        """``path`` or the default path, or a permanent error naming the backend's paths."""
        path = path or self.default_score_path
        if path not in self.score_paths:
            raise BackendError(f"{type(self).__name__} cannot score on path {path!r} (its "
                               f"paths: {', '.join(self.score_paths)})", permanent=True,
                               error_class="ConfigError")
        return path


def first_target_token(token_ends: Sequence[int], boundary: int) -> int:
    """The index of the first target token of a sequence tokenised whole: the first token
    that ends after ``boundary`` (the length of the text before the target, in the units of
    ``token_ends``: characters or bytes). A token that straddles the boundary is a target
    token; tokens of zero width (special tokens at the start) stay with the prompt."""
    for i, end in enumerate(token_ends):
        if end > boundary:
            return i
    return len(token_ends)


def _softmax_rows(logits: Any, target_ids: Sequence[int], name: str) -> tuple[Any, ...]:
    """Per row of ``logits`` (shape (len(target_ids), vocab)), in float64: ``z`` (the row less
    its peak), ``p = exp(z)``, ``total`` (the sum of ``p``), each target's log-probability by
    log-softmax and whether it is the row's argmax."""
    import numpy as np

    rows = np.asarray(logits, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(target_ids):
        raise ValueError(f"{name}: {rows.shape} logits for {len(target_ids)} targets")
    ids = np.asarray(target_ids, dtype=np.int64)
    peak = rows.max(axis=1, keepdims=True)
    z = rows - peak
    p = np.exp(z)
    total = p.sum(axis=1)
    logprobs = rows[np.arange(len(ids)), ids] - (np.log(total) + peak[:, 0])
    return (z, p, total, [float(x) for x in logprobs],
            [bool(x) for x in rows.argmax(axis=1) == ids])


def logit_scores(logits: Any, target_ids: Sequence[int]) -> tuple[list[float], list[bool]]:
    """Per row of ``logits`` (an array-like of shape (len(target_ids), vocab), the logits
    that predict each target token): its log-probability, by log-softmax in float64, and
    whether it is the argmax of the row."""
    *_, logprobs, top = _softmax_rows(logits, target_ids, "logit_scores")
    return logprobs, top


def logit_scores_and_moments(logits: Any, target_ids: Sequence[int]
                             ) -> tuple[list[float], list[bool], list[float], list[float]]:
    """:func:`logit_scores` (the same numbers, bit for bit) and, per row, the mean
    ``mu = sum_v p_v log p_v`` and the standard deviation ``sqrt(sum_v p_v (log p_v)^2 -
    mu^2)`` of the log-probability under the row's softmax distribution, in float64 from one
    exponential (Min-k%++, Zhang et al. 2024)."""
    import numpy as np

    z, p, total, logprobs, top = _softmax_rows(logits, target_ids, "logit_scores_and_moments")
    z -= np.log(total)[:, None]  # log p
    p /= total[:, None]
    # p_v log p_v is 0 where p_v is 0 (a -inf logit: log p_v = -inf)
    plogp = np.multiply(p, z, out=p, where=p > 0)
    mu = plogp.sum(axis=1)
    second = np.einsum("ij,ij->i", plogp, np.where(np.isfinite(z), z, 0.0))
    std = np.sqrt(np.maximum(second - mu * mu, 0.0))
    return logprobs, top, [float(x) for x in mu], [float(x) for x in std]


def load_tokenizer(spec: Mapping[str, Any], model_file: ModelFile | None) -> Tokenizer:
    """The tokenizer of a model entry's backend (see :meth:`ScoringBackend.
    tokenizer_from_config`); a backend that cannot score is a :class:`BackendError`."""
    cls = BACKENDS.get(spec["backend"])
    if not issubclass(cls, ScoringBackend):
        raise BackendError(f"backend {spec['backend']!r} cannot score", permanent=True)
    return cls.tokenizer_from_config(spec, model_file)


def scoring_facts(backend: str) -> dict[str, Any]:
    """What the registry declares of a backend's scoring, without importing it: ``scores``
    (True: always; ``"echo_logprobs"``: only when the model sets ``echo_logprobs: true``, a
    server that returns prompt log-probs; False: never), ``score_paths`` and
    ``score_moments`` (it sees the whole next-token distribution: :class:`TokenScores`'
    ``dist_mean`` and ``dist_std``)."""
    facts = BACKENDS.facts(backend) if backend in BACKENDS else {}
    return {"scores": facts.get("scores", False),
            "score_paths": tuple(facts.get("score_paths", ())),
            "score_moments": bool(facts.get("score_moments", False))}


def scoring_backends() -> list[str]:
    """The backends that can score (some only with a setting), sorted."""
    return sorted(b for b in BACKENDS.names() if scoring_facts(b)["scores"])


def can_score(spec: Mapping[str, Any]) -> bool:
    """A model entry's backend can score its targets (see :func:`scoring_facts`)."""
    scores = scoring_facts(spec["backend"])["scores"]
    if scores == "echo_logprobs":
        return bool(spec.get("echo_logprobs"))
    return bool(scores)


def cannot_score_reason(name: str, spec: Mapping[str, Any], key: str | None = None) -> str | None:
    """None when model ``name`` can score; else a message naming the key and the
    alternatives (the backends that score, and the Monte Carlo estimate)."""
    if can_score(spec):
        return None
    key = key or f"models.{name}"
    backend = spec["backend"]
    others = ", ".join(scoring_backends())
    if scoring_facts(backend)["scores"] == "echo_logprobs":
        why = (f"backend {backend!r} scores only against a completions server that returns "
               "the prompt's log-probs (vLLM's server does; llama.cpp's server and OpenAI's "
               "API do not): set echo_logprobs: true for such a server")
    else:
        why = f"backend {backend!r} cannot return the log-probabilities of a given text"
    return (f"config key '{key}.backend': {why}; the backends that score are {others}, and a "
            "model without prompt log-probs can use method: monte_carlo (sampled estimate)")


def target_start(full_ids: Sequence[int], prompt_ids: Sequence[int]) -> int:
    """Where the target begins in a rendered sequence: the length of the common prefix of the
    whole sequence's ids (prompt + target, tokenised once) and the prompt's own ids. A token
    that straddles the boundary (the tokenizer merged the prompt's last characters with the
    target's first) differs from the prompt's last token, so it counts as target."""
    n = 0
    for a, b in zip(full_ids, prompt_ids):
        if a != b:
            break
        n += 1
    return n


class TemplateTokenizer(Protocol):
    """A tokenizer that also renders chat templates (a server's ``/tokenize``, a transformers
    tokenizer): what :func:`score_sequence` needs."""

    #: the tokens the model's tokenizer puts before a text (BOS), possibly none
    bos_ids: list[int]

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """The ids of ``text``; ``special``: with the tokens the tokenizer adds (BOS)."""

    def tokenize_chat(self, messages: list[dict[str, Any]], *,
                      add_generation_prompt: bool = False,
                      continue_final_message: bool = False) -> list[int]:
        """The ids of ``messages`` under the model's chat template."""


def score_sequence(request: ScoreRequest, tok: TemplateTokenizer) -> tuple[list[int], int]:
    """(the token ids of the whole sequence to score, the index of the first target token).

    Token-level: ``bos_ids + context_ids + target_ids``. A completion prompt: ``prompt.text +
    target`` tokenised once (with BOS). A chat prompt: the messages plus an assistant turn
    holding the target, rendered with ``continue_final_message`` (the turn left open: its
    end-of-turn token is not scored), against the messages with the generation prompt. The
    target starts where the two tokenisations part (:func:`target_start`). A target with
    nothing before it (no BOS, empty context) or that adds no token is a permanent error."""
    if request.token_level:
        bos = list(tok.bos_ids)
        ids = [*bos, *(request.context_ids or ()), *(request.target_ids or ())]
        start = len(bos) + len(request.context_ids or ())
    else:
        assert request.prompt is not None and request.target is not None
        if request.prompt.format == "chat":
            messages = [dict(m) for m in request.prompt.messages]
            turn = {"role": "assistant", "content": request.target}
            ids = tok.tokenize_chat([*messages, turn], continue_final_message=True)
            start = target_start(ids, tok.tokenize_chat(messages, add_generation_prompt=True))
        else:
            text = request.prompt.text or ""
            ids = tok.tokenize(text + request.target, special=True)
            start = target_start(ids, tok.tokenize(text, special=True))
    if start < 1:
        raise BackendError("the first target token has nothing before it (the model adds no "
                           "BOS and the context is empty): it cannot be scored", permanent=True,
                           error_class="EmptyContext")
    if start >= len(ids):
        raise BackendError("the target adds no token to the prompt", permanent=True,
                           error_class="EmptyTarget")
    return ids, start
