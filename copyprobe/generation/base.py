"""The backend interface. A backend turns one :class:`~copyprobe.prompts.Prompt` into one
:class:`Completion`; everything else (caching, retries, shards, provenance) lives in the runner,
so a new backend (API, batch, GPU) is one module and one registry entry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from copyprobe.models import ModelFile
from copyprobe.prompts import Prompt
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
        return asdict(self)


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class BackendError(RuntimeError):
    """A request failed. ``permanent`` errors are not retried (bad request, context too long)."""

    def __init__(self, message: str, *, permanent: bool = False, error_class: str | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.error_class = error_class or type(self).__name__


class Backend(ABC):
    """One loaded model behind one generation library or service."""

    name: ClassVar[str]
    #: True when the backend loads local weights given by ``model_file`` in config.
    needs_model_file: ClassVar[bool] = False

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

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release resources."""


BACKENDS: Registry[type[Backend]] = Registry("backend")
