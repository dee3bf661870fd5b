"""Generation: the backend interface and registry, the call cache and the runner.

Importing this package registers the built-in backends. Backends whose libraries are heavy or
optional import them only when instantiated.
"""

from copyprobe.generation.base import (
    BACKENDS,
    Backend,
    BackendError,
    Completion,
    Decoding,
)
from copyprobe.generation import llamacpp  # noqa: F401  (registers "llamacpp")
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.generation.runner import GenerationSummary, build_backend, run_generation

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "Completion",
    "Decoding",
    "GenerationCache",
    "GenerationSummary",
    "build_backend",
    "cache_key",
    "run_generation",
]
