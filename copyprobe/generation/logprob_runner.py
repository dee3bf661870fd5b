"""Run scoring requests through a backend with the call cache.

Reference: docs/backends.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copyprobe.generation.base import Backend, BackendError
from copyprobe.generation.cache import GenerationCache
from copyprobe.generation.limits import RetryPolicy
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores
from copyprobe.progress import Progress
from copyprobe.store import content_key

log = logging.getLogger(__name__)

SCORE_KEY_VERSION = 1


def score_key(*, backend: str, identity: Mapping[str, Any], request: ScoreRequest,
              path: str) -> str:
    """sha256 over everything that changes a request's scores."""
    return content_key({"v": SCORE_KEY_VERSION, "kind": "score", "backend": backend,
                        "identity": dict(identity), "path": path,
                        "request": request.as_dict()})


@dataclass(frozen=True)
class ScoreResult:
    """One request's outcome: ``scores`` (None when it failed), where it came from, and for a
    failure its error class and message."""

    key: str
    scores: TokenScores | None
    from_cache: bool
    latency_s: float | None
    attempts: int
    error_class: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None


def _check_finite(out: TokenScores) -> TokenScores | BackendError:
    if out.finite:
        return out
    bad = [i for i, x in enumerate(out.logprobs) if x != x or x in (float("inf"), float("-inf"))]
    return BackendError(f"non-finite log-probability at target token(s) {bad[:5]}",
                        permanent=True, error_class="NonFiniteLogprob")


def run_scoring(requests: Sequence[ScoreRequest], *, backend_name: str,
                identity: Mapping[str, Any], backend_factory: Callable[[], Backend],
                cache: GenerationCache, path: str, retry: RetryPolicy | None = None,
                label: str = "score") -> list[ScoreResult]:
    """Score every request (one :class:`ScoreResult` each, in order). Identical requests are
    computed once. ``path`` is the scoring path (it enters the key)."""
    retry = retry or RetryPolicy()
    keys = [score_key(backend=backend_name, identity=identity, request=r, path=path)
            for r in requests]
    results: dict[str, ScoreResult] = {}
    pending: dict[str, ScoreRequest] = {}
    for key, req in zip(keys, requests, strict=True):
        if key in results or key in pending:
            continue
        hit = cache.get(key)
        if hit is not None:
            results[key] = ScoreResult(key, TokenScores.from_dict(hit["scores"]), True,
                                       hit.get("latency_s"), 0)
        else:
            pending[key] = req
    progress = Progress(total=len(pending), label=label)
    backend: Backend | None = None
    try:
        if pending:
            t0 = time.perf_counter()
            backend = backend_factory()
            log.info("loaded backend %s in %.1f s", backend_name, time.perf_counter() - t0)
            size = max(1, int(getattr(backend, "max_score_batch", 1)))
            todo = list(pending.items())
            for start in range(0, len(todo), size):
                _score_chunk(backend, todo[start:start + size], path, retry, cache, results)
                progress.update(min(size, len(todo) - start))
    finally:
        if backend is not None:
            backend.close()
    failed = sum(1 for r in results.values() if not r.ok)
    progress.close(f"{len(results)} scored, {failed} failed, "
                   f"{sum(1 for r in results.values() if r.from_cache)} from cache")
    return [results[k] for k in keys]


def _score_chunk(backend: Any, chunk: list[tuple[str, ScoreRequest]], path: str,
                 retry: RetryPolicy, cache: GenerationCache,
                 results: dict[str, ScoreResult]) -> None:
    attempts = {key: 0 for key, _ in chunk}
    todo = chunk
    while todo:
        for key, _ in todo:
            attempts[key] += 1
        t0 = time.perf_counter()
        try:
            outs = backend.score_batch([r for _, r in todo], path=path)
        except BackendError as exc:
            outs = [exc] * len(todo)
        except Exception as exc:  # the whole call failed: every item gets the error
            outs = [BackendError(f"{type(exc).__name__}: {exc}",
                                 error_class=type(exc).__name__)] * len(todo)
        latency = (time.perf_counter() - t0) / max(1, len(todo))
        again: list[tuple[str, ScoreRequest]] = []
        delay = 0.0
        for (key, req), out in zip(todo, outs, strict=True):
            if isinstance(out, TokenScores) and req.moments and not out.has_moments:
                out = BackendError(f"{type(backend).__name__} returned no next-token "
                                   "distribution moments (it does not see the full "
                                   "distribution)", permanent=True,
                                   error_class="MomentsUnavailable")
            if isinstance(out, TokenScores):
                out = _check_finite(out)
            if isinstance(out, TokenScores):
                cache.put(key, {"scores": out.as_dict(), "latency_s": latency})
                results[key] = ScoreResult(key, out, False, latency, attempts[key])
            elif not out.permanent and attempts[key] < retry.max_attempts:
                again.append((key, req))
                delay = max(delay, retry.delay(attempts[key], out.retry_after))
            else:
                results[key] = ScoreResult(key, None, False, latency, attempts[key],
                                           out.error_class, str(out))
        if again:
            log.info("retrying %d scoring request(s) in %.1f s", len(again), delay)
            time.sleep(delay)
        todo = again
