"""Retry timing and client-side rate limits for API backends.

Reference: docs/backends.md.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from copyprobe.generation.base import BackendError
from copyprobe.prompt import Prompt

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "AsyncRateLimiter",
    "RateLimiter",
    "RetryPolicy",
    "default_concurrency",
    "default_request_timeout",
    "estimate_tokens",
    "is_local_url",
]

log = logging.getLogger(__name__)

#: requests in flight to a remote API when the config does not say
REMOTE_CONCURRENCY = 8
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine (127.0.0.1, localhost, ::1)."""
    return bool(url) and (urlsplit(str(url)).hostname or "").lower() in LOCAL_HOSTS


#: vLLM's smallest default ``max_num_seqs`` (its scheduler's own default; CPU servers)
VLLM_MIN_MAX_NUM_SEQS = 128
_VLLM_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}\s", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def vllm_kv_capacity(metrics: str) -> int | None:
    """Tokens the KV cache of a vLLM server holds, summed over its engines: ``num_gpu_blocks``
    times ``block_size`` on each ``vllm:cache_config_info`` line of its ``/metrics``."""
    total = 0
    for match in _VLLM_INFO.finditer(metrics):
        labels = dict(_LABEL.findall(match["labels"]))
        try:
            total += int(labels["num_gpu_blocks"]) * int(labels["block_size"])
        except (KeyError, ValueError):
            return None
    return total or None


def default_concurrency(backend_name: str, base_url: str | None) -> int:
    """Requests in flight for a model whose ``requests.max_concurrency`` is not set: an
    ``openai`` model on this machine gets what the server reports (llama.cpp's slots, vLLM's
    KV cache) or 1, so a one-slot server is not sent requests that wait out their timeout in
    its queue (and are retried); anything else 8. Says what it chose in the log."""
    if backend_name != "openai" or not is_local_url(base_url):
        return REMOTE_CONCURRENCY
    from copyprobe.generation.base import BACKENDS

    # the probe is the openai backend's (its HTTP stack, loaded with it)
    reported, why = BACKENDS.get("openai").server_concurrency(str(base_url))
    n = reported or 1
    log.info("%s is a server on this machine: %d request(s) at a time (%s); set "
             "requests.max_concurrency to change it", base_url, n, why)
    return n


def default_request_timeout(max_tokens: int) -> float:
    """Seconds to wait for an answer when the config sets no ``request_timeout``: 120, or
    longer for long answers (30 s plus half a second per token of ``max_tokens``, i.e. a
    server decoding 2 tokens a second still answers in time)."""
    return max(120.0, 30.0 + 0.5 * max_tokens)

#: Rough token cost of one image (OpenAI, ``detail: high`` on a 512 px tile: 85 + 170 * 4).
IMAGE_TOKENS = 765
#: Tokens of chat framing per message (role and separators).
MESSAGE_OVERHEAD_TOKENS = 4


# -- retries -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """Retry timing for transient errors.

    ``max_attempts`` counts every attempt, the first included (6: one call and up to five
    retries). After failed attempt ``n`` (1-based) the wait is
    ``min(max_delay, base_delay * 2**(n-1))`` scaled by a random factor in
    ``[1 - jitter, 1 + jitter]`` (and again capped at ``max_delay``). When the service sent
    ``retry_after`` seconds (capped at ``max_retry_after``), the wait is at least that, plus a
    random ``0..jitter`` fraction of it, so clients told the same time do not return together.
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.25
    max_retry_after: float = 300.0
    rng: random.Random | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("delays must not be negative")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter must be in [0, 1)")

    @classmethod
    def from_config(cls, spec: Mapping[str, Any] | None) -> RetryPolicy:
        """Build from a config mapping with any of the field names (others are ignored)."""
        spec = spec or {}
        known = {k: spec[k] for k in ("max_attempts", "base_delay", "max_delay", "jitter",
                                      "max_retry_after") if k in spec}
        return cls(**known)

    def _uniform(self, a: float, b: float) -> float:
        return (self.rng or random).uniform(a, b)

    def backoff(self, attempt: int) -> float:
        """The un-jittered exponential wait after failed attempt ``attempt`` (1-based)."""
        attempt = max(1, int(attempt))
        # 2**1024 overflows a float; anything past 2**63 is capped anyway
        return min(self.max_delay, self.base_delay * 2.0 ** min(attempt - 1, 63))

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        base = self.backoff(attempt)
        wait = min(self.max_delay, base * (1.0 + self._uniform(-self.jitter, self.jitter)))
        if retry_after is not None and not math.isnan(retry_after):
            floor = min(max(0.0, float(retry_after)), self.max_retry_after)
            if floor > 0:
                wait = max(wait, floor * (1.0 + self._uniform(0.0, self.jitter)))
        return max(0.0, wait)

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """True when ``error`` (raised by attempt ``attempt``, 1-based) is transient and
        attempts remain."""
        if isinstance(error, BackendError) and error.permanent:
            return False
        return attempt < self.max_attempts


# -- rate limits -------------------------------------------------------------------------------
class _Buckets:
    """Two continuously refilled token buckets (requests, tokens) plus a pause.

    A bucket holds at most ``burst_seconds`` of its budget (one minute by default) and starts
    full. A request needs one request-token and ``tokens`` tokens; one larger than the whole
    bucket waits until the bucket is full and then drives it negative, so the long-run rate
    still holds.
    """

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None,
                 burst_seconds: float) -> None:
        for name, value in (("requests_per_minute", requests_per_minute),
                            ("tokens_per_minute", tokens_per_minute)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive or None, got {value!r}")
        if not burst_seconds > 0:
            raise ValueError("burst_seconds must be positive")
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self.req_rate = requests_per_minute / 60.0 if requests_per_minute else None
        self.tok_rate = tokens_per_minute / 60.0 if tokens_per_minute else None
        self.req_capacity = max(1.0, self.req_rate * burst_seconds) if self.req_rate else 0.0
        self.tok_capacity = max(1.0, self.tok_rate * burst_seconds) if self.tok_rate else 0.0
        self.req_level = self.req_capacity
        self.tok_level = self.tok_capacity
        self.paused_until = -math.inf
        self.last: float | None = None

    @property
    def unlimited(self) -> bool:
        return self.req_rate is None and self.tok_rate is None

    def refill(self, now: float) -> None:
        if self.last is None:
            self.last = now
            return
        elapsed = max(0.0, now - self.last)
        self.last = max(self.last, now)
        if self.req_rate:
            self.req_level = min(self.req_capacity, self.req_level + elapsed * self.req_rate)
        if self.tok_rate:
            self.tok_level = min(self.tok_capacity, self.tok_level + elapsed * self.tok_rate)

    def wait_time(self, tokens: int, now: float) -> float:
        """Seconds until a request of ``tokens`` may go (0: now)."""
        self.refill(now)
        wait = max(0.0, self.paused_until - now)
        if self.req_rate:
            wait = max(wait, (1.0 - self.req_level) / self.req_rate)
        if self.tok_rate:
            need = min(float(tokens), self.tok_capacity)
            wait = max(wait, (need - self.tok_level) / self.tok_rate)
        return wait if wait > 1e-9 else 0.0

    def take(self, tokens: int) -> None:
        if self.req_rate:
            self.req_level -= 1.0
        if self.tok_rate:
            self.tok_level -= float(tokens)

    def pause(self, seconds: float, now: float) -> None:
        self.paused_until = max(self.paused_until, now + max(0.0, seconds))


class _Limiter:
    """What both limiters share: the buckets, the injectable clock and sleep."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None,
                 burst_seconds: float, clock: Callable[[], float], sleep: Any) -> None:
        self._buckets = _Buckets(requests_per_minute, tokens_per_minute, burst_seconds)
        self._clock = clock
        self._sleep = sleep

    @property
    def requests_per_minute(self) -> float | None:
        return self._buckets.rpm

    @property
    def tokens_per_minute(self) -> float | None:
        return self._buckets.tpm


class AsyncRateLimiter(_Limiter):
    """Requests-per-minute and tokens-per-minute limits for concurrent asyncio tasks.

    ``await limiter.acquire(tokens)`` returns (the seconds it waited) once one request of
    ``tokens`` estimated tokens fits both budgets, and charges it. Waiters are served strictly
    in arrival order (an :class:`asyncio.Lock` queue): a large request at the head is not
    overtaken by small ones. ``None`` for a limit means unlimited. ``burst_seconds`` is how much
    budget may accumulate (default one minute's worth, as quotas are stated per minute; lower it
    for services that enforce quotas over shorter windows). ``clock`` and ``sleep`` are
    injectable for tests.
    """

    def __init__(self, requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, *, burst_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        super().__init__(requests_per_minute, tokens_per_minute, burst_seconds, clock, sleep)
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    async def acquire(self, tokens: int = 0) -> float:
        """Wait for room for one request of ``tokens`` tokens; return the seconds waited."""
        if self._buckets.unlimited:
            return 0.0
        waited = 0.0
        async with self._get_lock():
            while True:
                wait = self._buckets.wait_time(tokens, self._clock())
                if wait <= 0:
                    self._buckets.take(tokens)
                    return waited
                await self._sleep(wait)
                waited += wait

    def pause(self, seconds: float) -> None:
        """Let no request start for ``seconds`` (e.g. after a 429 with ``Retry-After``)."""
        self._buckets.pause(seconds, self._clock())


class RateLimiter(_Limiter):
    """The synchronous twin of :class:`AsyncRateLimiter` (``time.sleep``; threads are served
    in lock order, which is close to but not strictly arrival order)."""

    def __init__(self, requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, *, burst_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        super().__init__(requests_per_minute, tokens_per_minute, burst_seconds, clock, sleep)
        self._lock = threading.Lock()  # the queue: held while a request waits its turn
        self._state = threading.Lock()  # the buckets: held only briefly

    def acquire(self, tokens: int = 0) -> float:
        """Block until one request of ``tokens`` tokens fits; return the seconds waited."""
        if self._buckets.unlimited:
            return 0.0
        waited = 0.0
        with self._lock:
            while True:
                with self._state:
                    wait = self._buckets.wait_time(tokens, self._clock())
                    if wait <= 0:
                        self._buckets.take(tokens)
                        return waited
                self._sleep(wait)
                waited += wait

    def pause(self, seconds: float) -> None:
        """Let no request start for ``seconds`` (callable from any thread)."""
        with self._state:
            self._buckets.pause(seconds, self._clock())


# -- token estimate ----------------------------------------------------------------------------
def content_parts(content: Any) -> tuple[list[str], int]:
    """(the text parts, the number of images) of a message content: a string, or a list of
    OpenAI-style parts (other values and parts hold neither)."""
    if isinstance(content, str):
        return [content], 0
    texts: list[str] = []
    images = 0
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "image_url":
                images += 1
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts, images


def estimate_tokens(prompt: Prompt, max_tokens: int) -> int:
    """What a request counts against a tokens-per-minute limit: ``ceil(chars / 4)`` of the
    prompt text, plus :data:`MESSAGE_OVERHEAD_TOKENS` per chat message and
    :data:`IMAGE_TOKENS` per image, plus ``max_tokens`` (OpenAI charges the limit, not the
    tokens eventually generated)."""
    if prompt.format == "chat":
        chars = images = 0
        for message in prompt.messages:
            texts, i = content_parts(message.get("content"))
            chars += sum(map(len, texts))
            images += i
        overhead = MESSAGE_OVERHEAD_TOKENS * len(prompt.messages) + IMAGE_TOKENS * images
    else:
        chars, overhead = len(prompt.text), 0
    return math.ceil(chars / 4) + overhead + max(0, int(max_tokens))
