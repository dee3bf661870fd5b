"""The backend interface. A backend turns one :class:`~copyprobe.prompt.Prompt` into one
:class:`Completion`; everything else (caching, retries, shards, provenance) lives in the runner,
so a new backend (API, batch, GPU) is one module and one registry entry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt
from copyprobe.registry import Registry


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; every field enters the cache key."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    repeat_penalty: float = 1.0
    max_tokens: int = 384
    seed: int = 0

    @classmethod
    def from_config(cls, spec: Mapping[str, Any]) -> Decoding:
        known = {k: spec[k] for k in cls.__dataclass_fields__ if k in spec}
        return cls(**known)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def as_dict(self) -> dict[str, Any]:
        # every field is a plain number: no need for dataclasses.asdict's deep copies, which
        # were a third of the time of replaying cached requests
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class BackendError(RuntimeError):
    """A request failed.

    ``permanent`` errors (bad request, content filter, context too long) are recorded at once;
    transient ones (429, 5xx, timeouts, dropped connections) are retried by the runner with
    exponential backoff and jitter, waiting at least ``retry_after`` seconds when the service
    said so. ``error_class`` is a short stable name (``RateLimitError``, ``ContextLengthError``,
    ...) used in failure summaries. ``unreachable`` says that no connection to the service
    could be made at all (refused, unknown host, no route, connect timeout): when every first
    attempt of a run says so, the runner stops instead of retrying. Messages must never contain
    credentials.
    """

    def __init__(self, message: str, *, permanent: bool = False, error_class: str | None = None,
                 retry_after: float | None = None, status_code: int | None = None,
                 unreachable: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.error_class = error_class or type(self).__name__
        self.retry_after = retry_after
        self.status_code = status_code
        self.unreachable = unreachable


@dataclass(frozen=True)
class BatchItem:
    """One request of a batch: ``custom_id`` maps the answer back (it is the cache key)."""

    custom_id: str
    prompt: Prompt
    sample_index: int = 0


@dataclass(frozen=True)
class BatchStatus:
    """State of a submitted batch. ``done`` is True once results (or errors) can be fetched;
    ``failed`` when the whole batch failed or expired (its requests are then resubmitted)."""

    batch_id: str
    status: str
    done: bool
    failed: bool = False
    completed: int = 0
    total: int = 0
    message: str = ""


class Backend(ABC):
    """One loaded model behind one generation library or service."""

    name: ClassVar[str]
    #: True when :meth:`agenerate` is implemented; the runner then sends requests
    #: concurrently (bounded by the model's max_concurrency and rate limits).
    supports_async: ClassVar[bool] = False
    #: True for asynchronous batch services (OpenAI Batch API): the runner then uses
    #: :meth:`submit_batch` / :meth:`poll_batch` / :meth:`fetch_batch` instead of generate.
    supports_batch_api: ClassVar[bool] = False
    #: How many prompts one :meth:`generate_batch` call may take (GPU backends batch).
    max_batch_size: int = 1

    @classmethod
    @abstractmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        """Everything about the model and library that changes outputs (model id, weights hash
        or revision, settings such as context size, library versions). It enters the cache key
        and must be computable without loading the model, so a fully cached run loads nothing."""

    @classmethod
    @abstractmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> Backend:
        """Build (load) the backend from a model's config slice."""

    @abstractmethod
    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        """Generate one completion. Raise :class:`BackendError` on failure."""

    def generate_batch(self, prompts: Sequence[Prompt], decoding: Decoding,
                       sample_indices: Sequence[int]) -> list[Completion | BackendError]:
        """Generate for several prompts at once (one result or error per prompt, in order).
        The default loops over :meth:`generate`; batched backends override it."""
        out: list[Completion | BackendError] = []
        for prompt, idx in zip(prompts, sample_indices, strict=True):
            try:
                out.append(self.generate(prompt, decoding, idx))
            except BackendError as exc:
                out.append(exc)
        return out

    # -- batch services (supports_batch_api) ---------------------------------------------------
    def submit_batch(self, items: Sequence[BatchItem], decoding: Decoding) -> str:
        """Submit requests to a batch service; return the batch id."""
        raise NotImplementedError(f"backend {self.name!r} has no batch interface")

    def poll_batch(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError(f"backend {self.name!r} has no batch interface")

    def fetch_batch(self, batch_id: str) -> dict[str, Completion | BackendError]:
        """Results of a finished batch by ``custom_id``."""
        raise NotImplementedError(f"backend {self.name!r} has no batch interface")

    async def agenerate(self, prompt: Prompt, decoding: Decoding,
                        sample_index: int = 0) -> Completion:
        """Asynchronous :meth:`generate`, for backends with ``supports_async``."""
        raise NotImplementedError(f"backend {self.name!r} has no async interface")

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release resources."""


BACKENDS: Registry[type[Backend]] = Registry("backend")

# The built-in backends and the facts that config validation and the workflow need without
# importing them (each module loads its libraries: llama.cpp, torch, vLLM, aiohttp):
#   remote            calls a service over the network (one thread per job; capped by the
#                     llm_api resource; the key is checked before any job starts)
#   needs_model_file  loads local weights named by ``model_file``, which must exist
#   gpu               wants a GPU on a cluster node
#   api_key_env       the variable holding its API key unless the model names another
#                     (``api_key_env``); None: no key
#   key_optional      honours ``api_key_optional: true`` (servers that need no key)
#   scores            it can score a given continuation (copyprobe.generation.logprob_scoring): True,
#                     or "echo_logprobs" (only against a server that echoes prompt log-probs,
#                     switched on by the model's echo_logprobs); score_paths: how;
#                     score_moments: it sees the whole next-token distribution (Min-k%++)
#   reads             the model keys it reads (beyond those every model has); a key that
#                     another backend reads and this one does not is a config error
#                     (copyprobe.generation.model_keys); ``n_threads`` is read by the job of
#                     every local backend (its reservation), whatever the engine does with it
_LOCAL = ("n_threads",)
_HUB = ("model_id", "revision", "model_file", "dtype", "batch_size", "trust_remote_code")
_OPENAI = ("model_id", "revision", "base_url", "api_key_env", "request_timeout",
           "max_tokens_param", "server_sampling_params")
BACKENDS.declare("llamacpp", "copyprobe.generation.llamacpp:LlamaCppBackend",
                 remote=False, needs_model_file=True, gpu=False,
                 scores=True, score_paths=("one_pass", "stepwise"), score_moments=True,
                 reads=(*_LOCAL, "model_file", "model_id", "n_ctx"))
BACKENDS.declare("hf", "copyprobe.generation.hf:HFBackend",
                 remote=False, needs_model_file=False, gpu=True,
                 scores=True, score_paths=("one_pass", "stepwise"), score_moments=True,
                 reads=(*_LOCAL, *_HUB, "device_map", "vision"))
BACKENDS.declare("vllm", "copyprobe.generation.vllm_backend:VLLMBackend",
                 remote=False, needs_model_file=False, gpu=True,
                 scores=True, score_paths=("prompt_logprobs",),
                 reads=(*_LOCAL, *_HUB, "tokenizer", "tensor_parallel_size", "max_model_len",
                        "gpu_memory_utilization", "enforce_eager", "max_images_per_prompt",
                        "seed", "hf_overrides"))
BACKENDS.declare("openai", "copyprobe.generation.openai_api:OpenAIBackend",
                 remote=True, needs_model_file=False, gpu=False,
                 api_key_env="OPENAI_API_KEY", key_optional=True,
                 scores="echo_logprobs", score_paths=("server_echo",),
                 reads=(*_OPENAI, "api_key_optional", "endpoint", "echo_logprobs"))
BACKENDS.declare("openai_batch", "copyprobe.generation.openai_batch:OpenAIBatchBackend",
                 remote=True, needs_model_file=False, gpu=False,
                 api_key_env="OPENAI_API_KEY", key_optional=False, price_factor=0.5,
                 reads=(*_OPENAI, "batch_dir", "metadata", "completion_window"))
BACKENDS.declare("ocr_cascade", "copyprobe.generation.ocr_cascade:OCRCascadeBackend",
                 remote=False, needs_model_file=False, gpu=False,
                 reads=(*_LOCAL, "text_backend"))

#: Wrappers around a model's backend, each switched on by a block of the same name in the
#: model's entry, each declared by the study that brings it (the guard study's ``guard:`` runs
#: every request through the copyright guard). A wrapper class
#: has two class methods: ``wrap_identity(block, spec, identity) -> identity`` (what the
#: wrapper adds to the cache identity, so a wrapped and a bare model never share answers) and
#: ``wrap(block, spec, backend) -> Backend``, and ``records(block, spec, prompts) ->
#: (DataFrame, TableSpec)``: what it recorded of the requests of a PROMPTS table (the guard:
#: its decisions), which the generate job that made them writes as its output named after the
#: wrapper, where a rule asks for it. Declared, so a wrapper's module is imported only when a
#: model uses it.
BACKEND_WRAPPERS: Registry[Any] = Registry("backend wrapper")


def backend_wrappers(spec: Mapping[str, Any]) -> list[str]:
    """The wrappers a model's config slice switches on, in registry order (an empty block
    switches one on with its defaults). The studies that bring wrappers are loaded first:
    they declare them."""
    from copyprobe.studies import load_wrapper_studies

    load_wrapper_studies()
    return [name for name in BACKEND_WRAPPERS.names()
            if spec.get(name) is not None and spec.get(name) is not False]


def backend_facts(name: str) -> dict[str, Any]:
    """What is known about a backend without importing it: ``remote``, ``needs_model_file``,
    ``gpu``, ``key_optional`` (all False for a backend registered without a declaration),
    ``api_key_env`` (None) and ``price_factor`` (1.0; the Batch API bills half the list price). The keys it reads: :func:`backend_model_keys`; whether it scores:
    :func:`copyprobe.generation.logprob_scoring.scoring_facts`."""
    facts: dict[str, Any] = {"remote": False, "needs_model_file": False, "gpu": False,
                             "api_key_env": None, "key_optional": False, "price_factor": 1.0}
    facts.update({k: v for k, v in BACKENDS.facts(name).items()
                  if k not in ("reads", "scores", "score_paths", "score_moments")})
    return facts


def backend_model_keys(name: str) -> frozenset[str] | None:
    """The model keys a backend declares it reads (None: a backend registered without that
    declaration, whose keys are not checked)."""
    reads = BACKENDS.facts(name).get("reads")
    return None if reads is None else frozenset(reads)


#: CPU threads of a local engine whose model sets no ``n_threads``: what its generate job
#: reserves and hands the engine (Snakemake lowers it to ``--cores`` when fewer are given).
DEFAULT_LOCAL_THREADS = 4


def job_threads(spec: Mapping[str, Any]) -> int:
    """Cores a generation job of this model uses: 1 for a remote backend (an API client waits
    on the network), else the model's ``n_threads``, else :data:`DEFAULT_LOCAL_THREADS`. The
    job hands the engine the number it was granted, so the reservation and the engine's
    threads agree."""
    if backend_facts(spec["backend"])["remote"]:
        return 1
    return int(spec.get("n_threads") or DEFAULT_LOCAL_THREADS)


class BatchedBackend(Backend):
    """For engines that batch natively (transformers, vLLM): they implement
    :meth:`generate_batch`, and a single request is a batch of one."""

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        result = self.generate_batch([prompt], decoding, [sample_index])[0]
        if isinstance(result, BackendError):
            raise result
        return result
