"""Run a table of prompts through a backend with the call cache.

Reference: docs/backends.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import math
import platform
import signal
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe import __version__
from copyprobe.artifacts import GENERATIONS
from copyprobe.generation.base import (
    BACKEND_WRAPPERS,
    BACKENDS,
    Backend,
    BackendError,
    BatchItem,
    Completion,
    Decoding,
    backend_wrappers,
)
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.generation.limits import (
    AsyncRateLimiter,
    RateLimiter,
    RetryPolicy,
    default_concurrency,
    estimate_tokens,
)
from copyprobe.models import ModelFile
from copyprobe.progress import Progress
from copyprobe.prompt import Prompt, image_digests

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSettings:
    """How requests are sent (none of this changes an answer, so none of it is in the key)."""

    samples: int = 1
    #: requests in flight; None: :func:`~copyprobe.generation.limits.default_concurrency`
    max_concurrency: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: per request, max_tokens = min(decoding.max_tokens,
    #: max(min_max_tokens, ceil(ratio * words of the reference))); None keeps max_tokens.
    max_tokens_per_reference_word: float | None = None
    min_max_tokens: int = 32
    batch_poll_interval: float = 30.0
    batch_timeout: float | None = None
    #: USD per million prompt / completion tokens; None when no price is configured
    price: Mapping[str, float] | None = None

    @classmethod
    def from_config(cls, spec: Mapping[str, Any]) -> RunSettings:
        """Build from a model's config slice (``decoding`` and ``requests`` sections)."""
        dec = spec.get("decoding", {})
        req = spec.get("requests", {})
        retry = RetryPolicy(**{k: req[k] for k in ("max_attempts", "base_delay", "max_delay",
                                                    "jitter") if k in req})
        return cls(
            samples=dec.get("samples", 1),
            max_concurrency=req.get("max_concurrency"),
            requests_per_minute=req.get("requests_per_minute"),
            tokens_per_minute=req.get("tokens_per_minute"),
            retry=retry,
            max_tokens_per_reference_word=dec.get("max_tokens_per_reference_word"),
            min_max_tokens=dec.get("min_max_tokens", 32),
            batch_poll_interval=req.get("batch_poll_interval", 30.0),
            batch_timeout=req.get("batch_timeout"),
            price=spec.get("price"),
        )


class GenerationInterrupted(RuntimeError):
    """A run stopped by SIGTERM (a cluster's time limit, ``scancel``): the requests in flight
    were abandoned, every answer already received was stored, and a rerun sends only the
    rest."""


@dataclass
class GenerationSummary:
    requests: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failed: int = 0
    failures_by_class: dict[str, int] = field(default_factory=dict)
    #: the first failure's message of each error class (it names the endpoint and the cause)
    failure_examples: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def failure_share(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "failure_share": round(self.failure_share, 6)}

    def describe(self) -> str:
        s = (f"{self.requests} requests: {self.cache_hits} from cache, {self.model_calls} sent "
             f"({self.retries} retries), {self.failed} failed")
        if self.failures_by_class:
            s += " [" + ", ".join(f"{k}: {v}"
                                  for k, v in sorted(self.failures_by_class.items())) + "]"
        return s

    def failure_report(self, max_failure_share: float) -> str | None:
        """Why the job fails, when more than ``max_failure_share`` of its requests failed:
        the counts, each error class with its first message (which names the endpoint and
        the cause), and that a rerun sends only the failed requests. None otherwise."""
        if self.failure_share <= max_failure_share:
            return None
        lines = [f"{self.failed} of {self.requests} requests failed "
                 f"({self.failure_share:.1%} > max_failure_share {max_failure_share:.1%})"]
        for cls, n in sorted(self.failures_by_class.items()):
            lines.append(f"  {cls}: {n}, first: {self.failure_examples.get(cls, '?')}")
        lines.append("answers received are cached: a rerun sends only the failed requests")
        return "\n".join(lines)


def build_backend(spec: Mapping[str, Any], model_file: ModelFile | None) -> Backend:
    """Instantiate (load) the backend named in a model's config slice, inside the wrappers
    its slice switches on (:data:`~copyprobe.generation.base.BACKEND_WRAPPERS`)."""
    backend = BACKENDS.get(spec["backend"]).from_config(spec, model_file)
    for name in backend_wrappers(spec):
        backend = BACKEND_WRAPPERS.get(name).wrap(spec[name], spec, backend)
    return backend


def backend_identity(spec: Mapping[str, Any], model_file: ModelFile | None) -> dict[str, Any]:
    """The backend's cache identity (with its wrappers'), computed without loading the model."""
    identity = BACKENDS.get(spec["backend"]).identity_from_config(spec, model_file)
    for name in backend_wrappers(spec):
        identity = BACKEND_WRAPPERS.get(name).wrap_identity(spec[name], spec, identity)
    return identity


@dataclass
class _Item:
    request_id: str
    prompt: Prompt
    sample_index: int
    decoding: Decoding
    key: str


class _LazyBackend:
    def __init__(self, factory: Callable[[], Backend]) -> None:
        self._factory = factory
        self._backend: Backend | None = None

    def get(self) -> Backend:
        if self._backend is None:
            t0 = time.perf_counter()
            self._backend = self._factory()
            log.info("loaded backend %s in %.1f s", self._backend.name, time.perf_counter() - t0)
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


def request_decoding(decoding: Decoding, reference: str | None,
                     settings: RunSettings) -> Decoding:
    """The decoding of one request: ``max_tokens`` scaled to the reference when configured."""
    ratio = settings.max_tokens_per_reference_word
    if ratio is None or not isinstance(reference, str):
        return decoding
    want = max(settings.min_max_tokens, math.ceil(ratio * len(reference.split())))
    return dataclasses.replace(decoding, max_tokens=min(decoding.max_tokens, want))


def _versions(identity: Mapping[str, Any]) -> str:
    out = {"copyprobe": __version__, "python": platform.python_version()}
    out.update({k: str(v) for k, v in identity.items()
                if k in ("llama_cpp_python", "openai", "transformers", "torch", "vllm",
                         "rapidocr")})
    return json.dumps(out, sort_keys=True)


def _cost(price: Mapping[str, float] | None, pt: int | None, ct: int | None) -> float | None:
    if price is None:
        return None
    return ((pt or 0) * price.get("input_per_million", 0.0)
            + (ct or 0) * price.get("output_per_million", 0.0)) / 1e6


class _Recorder:
    """Turns outcomes into rows, stores successes in the cache, keeps the summary."""

    def __init__(self, *, model: str, backend_name: str, identity: Mapping[str, Any],
                 cache: GenerationCache, settings: RunSettings, shard: str,
                 progress: Progress) -> None:
        self.summary = GenerationSummary()
        self.rows: dict[str, dict[str, Any]] = {}
        self._decodings: dict[Decoding, str] = {}
        self.cache = cache
        self.settings = settings
        self.progress = progress
        self.base = {
            "backend": backend_name, "model": model,
            "model_id": str(identity.get("model_id", "")),
            "revision": str(identity.get("weights_sha256") or identity.get("revision") or ""),
            "dtype": str(identity.get("dtype", "")), "versions": _versions(identity),
            "shard": shard,
        }

    def _decoding_json(self, decoding: Decoding) -> str:
        text = self._decodings.get(decoding)
        if text is None:  # a run has few distinct decodings (per-request max_tokens)
            text = self._decodings[decoding] = json.dumps(decoding.as_dict(), sort_keys=True)
        return text

    def _row(self, item: _Item) -> dict[str, Any]:
        return {**self.base, "request_id": item.request_id, "cache_key": item.key,
                "decoding": self._decoding_json(item.decoding),
                "seed": item.decoding.seed, "sample_index": item.sample_index}

    def hit(self, item: _Item, record: Mapping[str, Any]) -> None:
        self.summary.requests += 1
        self.summary.cache_hits += 1
        self.rows[item.key] = {**self._row(item), **record, "from_cache": True, "status": "ok",
                               "error_class": None, "error": None, "attempts": 0,
                               "cost_usd": _cost(self.settings.price,
                                                 record.get("prompt_tokens"),
                                                 record.get("completion_tokens"))}
        self.progress.update()

    @staticmethod
    def record(outcome: Completion, latency: float) -> dict[str, Any]:
        """What the cache stores for an answer."""
        return {"text": outcome.text, "prompt_tokens": outcome.prompt_tokens,
                "completion_tokens": outcome.completion_tokens,
                "finish_reason": outcome.finish_reason, "latency_s": latency,
                "created_at": dt.datetime.now(dt.timezone.utc).isoformat()}

    def done(self, item: _Item, outcome: Completion | BackendError, latency: float,
             attempts: int, *, stored: Mapping[str, Any] | None = None) -> None:
        """Record an outcome; an answer is stored in the cache first, unless ``stored`` is the
        record the caller has already stored."""
        self.summary.requests += 1
        self.summary.model_calls += attempts
        self.summary.retries += max(0, attempts - 1)
        if isinstance(outcome, Completion):
            record = dict(stored) if stored is not None else self.record(outcome, latency)
            if stored is None:
                self.cache.put(item.key, record)
            cost = _cost(self.settings.price, outcome.prompt_tokens, outcome.completion_tokens)
            self.summary.prompt_tokens += outcome.prompt_tokens or 0
            self.summary.completion_tokens += outcome.completion_tokens or 0
            self.summary.cost_usd += cost or 0.0
            self.rows[item.key] = {**self._row(item), **record, "from_cache": False,
                                   "status": "ok", "error_class": None, "error": None,
                                   "attempts": attempts, "cost_usd": cost}
        else:
            self.summary.failed += 1
            cls = outcome.error_class
            self.summary.failures_by_class[cls] = self.summary.failures_by_class.get(cls, 0) + 1
            self.summary.failure_examples.setdefault(cls, str(outcome)[:500])
            self.rows[item.key] = {**self._row(item), "text": None, "prompt_tokens": None,
                                   "completion_tokens": None, "finish_reason": None,
                                   "latency_s": latency,
                                   "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                                   "from_cache": False, "status": "failed",
                                   "error_class": cls, "error": str(outcome)[:2000],
                                   "attempts": attempts, "cost_usd": None}
        self.progress.update(failed=int(not isinstance(outcome, Completion)))


def _as_error(exc: Exception) -> BackendError:
    if isinstance(exc, BackendError):
        return exc
    return BackendError(f"{type(exc).__name__}: {exc}", permanent=False,
                        error_class=type(exc).__name__)


def _by_decoding(items: list[_Item]) -> dict[Decoding, list[_Item]]:
    """Items grouped by decoding (per-request max_tokens), so that one generate_batch call or
    one submitted batch shares it."""
    groups: dict[Decoding, list[_Item]] = {}
    for it in items:
        groups.setdefault(it.decoding, []).append(it)
    return groups


def _send_sync(lazy: _LazyBackend, items: list[_Item], rec: _Recorder,
               settings: RunSettings) -> None:
    limiter = RateLimiter(settings.requests_per_minute, settings.tokens_per_minute)
    backend = lazy.get()
    size = max(1, int(getattr(backend, "max_batch_size", 1)))
    for decoding, group in _by_decoding(items).items():
        for start in range(0, len(group), size):
            chunk = group[start:start + size]
            attempts = {it.key: 0 for it in chunk}
            todo = chunk
            t0 = time.perf_counter()
            while todo:
                for it in todo:
                    limiter.acquire(estimate_tokens(it.prompt, decoding.max_tokens))
                    attempts[it.key] += 1
                try:
                    outs = backend.generate_batch([it.prompt for it in todo], decoding,
                                                  [it.sample_index for it in todo])
                except Exception as exc:  # the whole call failed: every item gets the error
                    outs = [_as_error(exc)] * len(todo)
                retry: list[_Item] = []
                delay = 0.0
                for it, out in zip(todo, outs, strict=True):
                    if (isinstance(out, BackendError) and not out.permanent
                            and attempts[it.key] < settings.retry.max_attempts):
                        retry.append(it)
                        delay = max(delay, settings.retry.delay(attempts[it.key],
                                                                out.retry_after))
                    else:
                        rec.done(it, out, time.perf_counter() - t0, attempts[it.key])
                if retry:
                    log.info("retrying %d request(s) in %.1f s", len(retry), delay)
                    time.sleep(delay)
                todo = retry


async def _send_async(lazy: _LazyBackend, items: list[_Item], rec: _Recorder,
                      settings: RunSettings) -> None:
    """Send ``items`` concurrently (see :class:`_AsyncDispatcher`)."""
    if not items:
        return
    await _AsyncDispatcher(lazy.get(), items, rec, settings).run()


class _AsyncDispatcher:
    """``max_concurrency`` workers share one queue of requests.

    A worker that receives an answer records it and sends its next request in the same step
    of the event loop. (With one task per request behind a semaphore, the waiting task would
    only start after every answer that arrived alongside was processed, so the answers kept
    arriving in bursts and each cycle took the latency plus a burst's worth of processing.)
    A request to be retried goes back to the queue after its delay, freeing its worker
    meanwhile; a ``Retry-After`` also pauses the rate limiter, so every worker holds off.
    Answers are written to the cache by a small thread pool while the worker goes on with
    its next request, so that a slow file system (a cluster's shared one) holds up neither
    the event loop nor the requests in flight; the row is recorded once the answer is on disk.

    Stopping early: when the first ``workers`` first attempts all fail to connect and nothing
    has answered, the endpoint is wrong or down; retrying every request would only spend the
    retry ladder's minutes before saying the same thing, so every other request is recorded
    as failed with that error (``give_up``).

    Stopping: Ctrl-C (SIGINT, which ``asyncio.run`` turns into cancellation) and SIGTERM (what
    SLURM sends at a time limit or ``scancel``, before SIGKILL) cancel the requests in flight,
    but every answer already received is still written (the writes are shielded from the
    cancellation and the writer pool is drained), so the rerun pays for none of them again.
    SIGTERM then raises :class:`GenerationInterrupted`.

    One instance serves one :meth:`run`; its attributes are the whole state of that run.
    """

    def __init__(self, backend: Backend, items: list[_Item], rec: _Recorder,
                 settings: RunSettings) -> None:
        self.backend = backend
        self.items = items
        self.rec = rec
        self.settings = settings
        self.limiter = AsyncRateLimiter(settings.requests_per_minute, settings.tokens_per_minute)
        concurrency = settings.max_concurrency or default_concurrency(
            getattr(backend, "name", ""), getattr(backend, "base_url", None))
        self.workers = max(1, min(concurrency, len(items)))
        # per request: attempts made, when the first one started
        self.attempts: dict[str, int] = {}
        self.started: dict[str, float] = {}
        #: requests waiting out a retry delay, so that stopping early can take them back at once
        self.waiting: dict[str, tuple[asyncio.TimerHandle, _Item]] = {}
        #: requests not yet recorded; at 0 every worker is told to stop
        self.remaining = len(items)
        # stopping early (see the class text)
        self.first_wave = self.workers
        self.unreachable_first = 0
        self.reached = False
        self.give_up: BackendError | None = None
        #: error classes whose first retry was logged in full
        self.retry_logged: set[str] = set()
        #: answers written to the cache (counted by the writer threads)
        self.stored = 0
        self._stored_lock = threading.Lock()
        self.terminated = False
        # bound in run()
        self.queue: asyncio.Queue[_Item | None] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main_task: asyncio.Task[Any] | None = None
        self._writer: ThreadPoolExecutor | None = None

    # -- the run -----------------------------------------------------------------------------
    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main_task = asyncio.current_task()
        sigterm = self._install_sigterm()
        for it in self.items:
            self.queue.put_nowait(it)
        self._writer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="copyprobe-cache")
        try:
            try:
                async with asyncio.TaskGroup() as group:  # one failing task cancels the others
                    for _ in range(self.workers):
                        group.create_task(self._worker(group))
            except BaseExceptionGroup as group_error:
                # e.g. a full disk under the cache: raise the error itself, not a group of one
                first, *others = group_error.exceptions
                if others:
                    log.error("%d more error(s) in the same run: %s", len(others),
                              "; ".join(f"{type(e).__name__}: {e}" for e in others))
                raise first.with_traceback(first.__traceback__) from None
        except asyncio.CancelledError:
            if self.terminated:
                self._writer.shutdown(wait=True)
                n = len(self.items)
                raise GenerationInterrupted(
                    f"stopped by SIGTERM: {self.stored} new answer(s) stored, "
                    f"{n - self.stored} of {n} request(s) without one (failed ones included); "
                    "a rerun sends only those") from None
            raise
        finally:
            if sigterm:
                self._loop.remove_signal_handler(signal.SIGTERM)
            self._writer.shutdown(wait=True)
            aclose = getattr(self.backend, "aclose", None)
            if aclose is not None:
                await aclose()

    def _install_sigterm(self) -> bool:
        """Handle SIGTERM on this loop (main thread, Unix); whether it is handled."""
        assert self._loop is not None
        if threading.current_thread() is not threading.main_thread():
            return False
        try:
            self._loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        except (NotImplementedError, RuntimeError, ValueError):  # not Unix, or no main loop
            return False
        return True

    def _on_sigterm(self) -> None:
        self.terminated = True
        log.warning("SIGTERM: stopping; answers received so far are being stored")
        if self._main_task is not None:
            self._main_task.cancel()

    # -- one worker --------------------------------------------------------------------------
    async def _worker(self, group: asyncio.TaskGroup) -> None:
        while (it := await self.queue.get()) is not None:
            if self.give_up is not None:
                self.rec.done(it, self.give_up, 0.0, self.attempts.get(it.key, 0))
                self._finished()
                continue
            attempt = self.attempts[it.key] = self.attempts.get(it.key, 0) + 1
            t0 = self.started.setdefault(it.key, time.perf_counter())
            await self.limiter.acquire(estimate_tokens(it.prompt, it.decoding.max_tokens))
            try:
                out: Completion | BackendError = await self.backend.agenerate(
                    it.prompt, it.decoding, it.sample_index)
            except Exception as exc:
                out = _as_error(exc)
            self._note_reachability(out, attempt)
            if self._retry_later(it, out, attempt):
                continue
            latency = time.perf_counter() - t0
            if isinstance(out, Completion):
                group.create_task(self._store(it, out, latency, attempt))
            else:
                self.rec.done(it, out, latency, attempt)
                self._finished()

    def _note_reachability(self, out: Completion | BackendError, attempt: int) -> None:
        """Count first attempts that could not connect; give up when the first wave all did."""
        if not (isinstance(out, BackendError) and out.unreachable):
            self.reached = True
        elif attempt == 1 and not self.reached:
            self.unreachable_first += 1
            if self.unreachable_first >= self.first_wave and self.give_up is None:
                self.give_up = self._stop_sending(out)

    def _retry_later(self, it: _Item, out: Completion | BackendError, attempt: int) -> bool:
        """Put a transient failure back on the queue after its delay; whether it was."""
        if not (isinstance(out, BackendError) and not out.permanent and self.give_up is None
                and attempt < self.settings.retry.max_attempts):
            return False
        assert self._loop is not None
        delay = self.settings.retry.delay(attempt, out.retry_after)
        if out.retry_after:
            self.limiter.pause(out.retry_after)
        # the first retry of each kind is told in full, the rest count in the summary
        level = logging.DEBUG if out.error_class in self.retry_logged else logging.INFO
        self.retry_logged.add(out.error_class)
        log.log(level, "%s: %s; retry %d in %.1f s", it.request_id, out, attempt, delay)
        self.waiting[it.key] = (self._loop.call_later(delay, self._requeue, it), it)
        return True

    def _requeue(self, it: _Item) -> None:
        self.waiting.pop(it.key, None)
        self.queue.put_nowait(it)

    def _stop_sending(self, first: BackendError) -> BackendError:
        log.error("%s; stopping: the first %d request(s) could not connect, the other "
                  "requests are not sent", first, self.first_wave)
        for handle, waiting_item in list(self.waiting.values()):
            handle.cancel()
            self._requeue(waiting_item)
        return BackendError(f"stopped: the first {self.first_wave} request(s) could not "
                            f"connect ({first})", permanent=True, error_class=first.error_class,
                            unreachable=True)

    def _finished(self) -> None:
        self.remaining -= 1
        if self.remaining == 0:
            for _ in range(self.workers):
                self.queue.put_nowait(None)

    # -- storing answers ---------------------------------------------------------------------
    def _put(self, key: str, record: Mapping[str, Any]) -> None:  # in a writer thread
        self.rec.cache.put(key, record)
        with self._stored_lock:
            self.stored += 1

    async def _store(self, it: _Item, out: Completion, latency: float, attempt: int) -> None:
        assert self._loop is not None and self._writer is not None
        record = self.rec.record(out, latency)
        # shielded: a cancelled run still writes the answer (the pool is drained in run())
        await asyncio.shield(self._loop.run_in_executor(self._writer, self._put, it.key, record))
        self.rec.done(it, out, latency, attempt, stored=record)
        self._finished()


def _send_batch_api(lazy: _LazyBackend, items: list[_Item], rec: _Recorder,
                    settings: RunSettings, state_dir: Path | None) -> None:
    from copyprobe.generation.batch_runner import run_batch

    if state_dir is None:
        raise ValueError("batch backends need a state directory to record batch ids")
    backend = lazy.get()
    for decoding, group in _by_decoding(items).items():
        by_key = {it.key: it for it in group}
        # The state file is named by the requests it covers: they stay pending (uncached) until
        # the batch is fetched, so a rerun finds the same file and resumes polling.
        name = hashlib.sha256("\n".join(sorted(by_key)).encode()).hexdigest()[:24]
        t0 = time.perf_counter()
        results = run_batch(
            [BatchItem(custom_id=it.key, prompt=it.prompt, sample_index=it.sample_index)
             for it in group],
            backend=backend, decoding=decoding,
            state_path=Path(state_dir) / f"{name}.json",
            poll_interval=settings.batch_poll_interval, timeout=settings.batch_timeout)
        for key, it in by_key.items():
            out = results.get(key) or BackendError("no result returned by the batch",
                                                   error_class="MissingResult")
            rec.done(it, out, time.perf_counter() - t0, 1)


def run_generation(
    prompts: pd.DataFrame,
    *,
    model: str,
    backend_name: str,
    identity: Mapping[str, Any],
    backend_factory: Callable[[], Backend],
    decoding: Decoding,
    cache: GenerationCache,
    settings: RunSettings | None = None,
    samples: int | None = None,
    shard: str = "all",
    state_dir: Path | None = None,
) -> tuple[pd.DataFrame, GenerationSummary]:
    """Generate for every ``status == 'ready'`` row of a PROMPTS table.

    ``identity`` is the backend identity used in cache keys; it must be computable without
    loading the model (see :func:`backend_identity`), so that a fully cached run loads nothing.
    Returns the GENERATIONS table (in prompt order) and a summary.
    """
    settings = settings or RunSettings()
    if samples is not None:
        settings = dataclasses.replace(settings, samples=samples)
    ready = prompts[prompts["status"] == "ready"]
    refs = ready["reference"] if "reference" in ready else [None] * len(ready)
    # Backends that answer from the same model as another (the Batch API and the synchronous
    # API) share its cache entries; the row's backend column still says which one answered.
    namespace = getattr(BACKENDS.get(backend_name), "cache_namespace", backend_name)
    items: list[_Item] = []
    for rid, raw, ref in zip(ready["request_id"], ready["prompt"], refs, strict=True):
        prompt = Prompt.from_json(raw)
        images = image_digests(prompt)
        dec = request_decoding(decoding, ref, settings)
        for s in range(settings.samples):
            key = cache_key(backend=namespace, identity=identity, decoding=dec,
                            prompt=prompt, sample_index=s, images=images)
            items.append(_Item(rid, prompt, s, dec, key))
    # Identical requests (two documents whose prompts coincide after truncation) are sent once
    # and share the answer.
    unique: dict[str, _Item] = {}
    for it in items:
        unique.setdefault(it.key, it)
    progress = Progress(total=len(unique), label=f"generate {model} [{shard}]")
    rec = _Recorder(model=model, backend_name=backend_name, identity=identity, cache=cache,
                    settings=settings, shard=shard, progress=progress)
    pending: list[_Item] = []
    for it in unique.values():
        hit = cache.get(it.key)
        if hit is not None:
            rec.hit(it, hit)
        else:
            pending.append(it)
    if pending:
        cls = BACKENDS.get(backend_name)
        lazy = _LazyBackend(backend_factory)
        try:
            if cls.supports_batch_api:
                _send_batch_api(lazy, pending, rec, settings, state_dir)
            elif cls.supports_async:
                asyncio.run(_send_async(lazy, pending, rec, settings))
            else:
                _send_sync(lazy, pending, rec, settings)
        finally:
            lazy.close()
    progress.close(rec.summary.describe())
    rows = [{**rec.rows[it.key], "request_id": it.request_id} for it in items]
    df = pd.DataFrame(rows, columns=GENERATIONS.columns)
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
    return df, rec.summary


class SharedBackend:
    """One backend for many runs (the rounds of a Monte Carlo run, the turns of a
    conversation): :func:`run_generation` closes the backend it was given after each call, so
    it gets a view whose ``close`` does nothing, and the model is loaded once (when the first
    uncached request needs it) and closed at the end."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._backend: Any = None

    def get(self) -> Any:
        if self._backend is None:
            self._backend = self._factory()
        return _Unclosable(self._backend)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None


class _Unclosable:
    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def close(self) -> None:
        """The owner (:class:`SharedBackend`) closes the backend."""
