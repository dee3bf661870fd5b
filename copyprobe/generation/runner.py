"""Run a table of prompts through a backend with the call cache.

For every ready prompt and sample index the runner computes the cache key; a stored answer is
reused (``from_cache``), otherwise the backend is called (the model is loaded only when the
first uncached request needs it) and a successful answer is stored at once, so an interrupted
run resumes where it stopped. A failed call becomes a row with ``status='failed'`` and its error
class and message, never text that a scorer would count.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from copyprobe import __version__
from copyprobe.artifacts import GENERATIONS
from copyprobe.generation.base import BACKENDS, Backend, BackendError, Decoding
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.models import ModelFile
from copyprobe.progress import Progress
from copyprobe.prompts import Prompt

log = logging.getLogger(__name__)


@dataclass
class GenerationSummary:
    requests: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    failures_by_class: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "model_calls": self.model_calls,
                "cache_hits": self.cache_hits, "failed": self.failed,
                "failures_by_class": dict(self.failures_by_class)}


def build_backend(spec: Mapping[str, Any], model_file: ModelFile | None) -> Backend:
    """Instantiate the backend named in a model's config slice."""
    cls = BACKENDS.get(spec["backend"])
    return cls.from_config(spec, model_file)  # type: ignore[attr-defined]


def _versions() -> dict[str, str]:
    out = {"copyprobe": __version__}
    for dist in ("llama_cpp_python",):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


class _LazyBackend:
    def __init__(self, factory: Callable[[], Backend]) -> None:
        self._factory = factory
        self._backend: Backend | None = None

    def get(self) -> Backend:
        if self._backend is None:
            t0 = time.perf_counter()
            self._backend = self._factory()
            log.info("loaded backend %s in %.1f s", self._backend.name,
                     time.perf_counter() - t0)
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


def run_generation(
    prompts: pd.DataFrame,
    *,
    model: str,
    backend_name: str,
    identity: Mapping[str, Any],
    backend_factory: Callable[[], Backend],
    decoding: Decoding,
    cache: GenerationCache,
    samples: int = 1,
    shard: str = "all",
) -> tuple[pd.DataFrame, GenerationSummary]:
    """Generate for every ``status == 'ready'`` row of a PROMPTS table.

    ``identity`` is the backend identity used in cache keys; it must be computable without
    loading the model (for llama.cpp: model id, weights hash, context size, library version), so
    that a fully cached run never loads the model at all.
    """
    ready = prompts[prompts["status"] == "ready"]
    summary = GenerationSummary()
    versions = json.dumps(_versions(), sort_keys=True)
    lazy = _LazyBackend(backend_factory)
    rows: list[dict[str, Any]] = []
    progress = Progress(total=len(ready) * samples, label=f"generate {model} [{shard}]")
    try:
        for req in ready.itertuples(index=False):
            prompt = Prompt.from_json(req.prompt)
            for sample_index in range(samples):
                key = cache_key(backend=backend_name, identity=identity, decoding=decoding,
                                prompt=prompt, sample_index=sample_index)
                base = {"request_id": req.request_id, "cache_key": key, "backend": backend_name,
                        "model": model, "model_id": str(identity.get("model_id", "")),
                        "revision": str(identity.get("weights_sha256")
                                        or identity.get("revision", "")),
                        "decoding": json.dumps(decoding.as_dict(), sort_keys=True),
                        "seed": decoding.seed, "sample_index": sample_index,
                        "versions": versions, "shard": shard, "cost_usd": 0.0}
                summary.requests += 1
                hit = cache.get(key)
                if hit is not None:
                    summary.cache_hits += 1
                    rows.append({**base, **hit, "from_cache": True, "status": "ok",
                                 "error_class": None, "error": None})
                    progress.update()
                    continue
                summary.model_calls += 1
                t0 = time.perf_counter()
                try:
                    out = lazy.get().generate(prompt, decoding, sample_index)
                except BackendError as exc:
                    rows.append(_failed(base, exc.error_class, str(exc), t0))
                    summary.failed += 1
                    summary.failures_by_class[exc.error_class] = (
                        summary.failures_by_class.get(exc.error_class, 0) + 1)
                    progress.update()
                    continue
                record = {"text": out.text, "prompt_tokens": out.prompt_tokens,
                          "completion_tokens": out.completion_tokens,
                          "latency_s": time.perf_counter() - t0,
                          "created_at": dt.datetime.now(dt.timezone.utc).isoformat()}
                cache.put(key, record)
                rows.append({**base, **record, "from_cache": False, "status": "ok",
                             "error_class": None, "error": None})
                progress.update()
    finally:
        lazy.close()
        progress.close()
    df = pd.DataFrame(rows, columns=GENERATIONS.columns)
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
    return df, summary


def _failed(base: dict[str, Any], error_class: str, message: str, t0: float) -> dict[str, Any]:
    return {**base, "text": None, "status": "failed", "error_class": error_class,
            "error": message, "prompt_tokens": None, "completion_tokens": None,
            "latency_s": time.perf_counter() - t0,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(), "from_cache": False}
