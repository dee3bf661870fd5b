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
# Each import registers a backend; heavy libraries (torch, vllm, onnxruntime) load only when
# a backend of that kind is built.
from copyprobe.generation import (  # noqa: F401
    hf,
    llamacpp,
    ocr_cascade,
    openai_api,
    openai_batch,
    vllm_backend,
)
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.generation.runner import (
    GenerationInterrupted,
    GenerationSummary,
    RunSettings,
    backend_identity,
    build_backend,
    generate_shard,
    run_generation,
)

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
    "backend_identity",
    "generate_shard",
    "build_backend",
    "cache_key",
    "run_generation",
]
