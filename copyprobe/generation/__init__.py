"""Generation: the backend interface and registry, the call cache and the runner.

The built-in backends are declared in :mod:`copyprobe.generation.base`; each backend's module
(and its libraries: llama.cpp, torch, vLLM, aiohttp) is imported only when a model of
that kind is built.
"""

from copyprobe.generation.base import (
    BACKENDS,
    Backend,
    BackendError,
    Completion,
    Decoding,
    backend_facts,
)
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.generation.runner import (
    GenerationInterrupted,
    GenerationSummary,
    RunSettings,
    backend_identity,
    build_backend,
    run_generation,
)
from copyprobe.generation.shards import generate_shard, merge_shards, shard_count

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "Completion",
    "Decoding",
    "GenerationCache",
    "GenerationInterrupted",
    "GenerationSummary",
    "RunSettings",
    "backend_facts",
    "backend_identity",
    "build_backend",
    "generate_shard",
    "merge_shards",
    "shard_count",
    "cache_key",
    "run_generation",
]
