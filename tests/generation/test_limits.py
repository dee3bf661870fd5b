"""Retry timing, rate limiters (on a fake clock) and token estimates."""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time

import pytest

from copyprobe.generation.base import BackendError
from copyprobe.generation.limits import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    AsyncRateLimiter,
    RateLimiter,
    RetryPolicy,
    estimate_tokens,
)
from copyprobe.prompt import Prompt


# -- RetryPolicy -------------------------------------------------------------------------------
def test_retry_defaults() -> None:
    p = RetryPolicy()
    assert (p.max_attempts, p.base_delay, p.max_delay, p.jitter, p.max_retry_after) == (
        6, 1.0, 60.0, 0.25, 300.0)


def test_delay_without_jitter_is_exponential_and_capped() -> None:
    p = RetryPolicy(jitter=0.0)
    assert [p.delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert p.delay(10_000) == 60.0  # no overflow
    assert p.delay(0) == 1.0  # attempts are 1-based; 0 is treated as 1


def test_delay_jitter_bounds() -> None:
    p = RetryPolicy(rng=random.Random(1))
    for attempt in range(1, 12):
        base = min(60.0, 2.0 ** (attempt - 1))
        samples = [p.delay(attempt) for _ in range(300)]
        assert min(samples) >= base * 0.75 - 1e-9
        assert max(samples) <= min(60.0, base * 1.25) + 1e-9
        if base < 48:  # the spread is really used, both ways
            assert min(samples) < base * 0.85 and max(samples) > base * 1.15


def test_delay_honours_retry_after() -> None:
    p = RetryPolicy(rng=random.Random(2))
    for _ in range(200):
        d = p.delay(1, retry_after=10.0)
        assert 10.0 <= d <= 12.5
    # a retry_after shorter than the backoff does not shorten it
    assert all(p.delay(6, retry_after=1.0) >= 32 * 0.75 for _ in range(50))
    # retry_after is capped
    assert all(300.0 <= p.delay(1, retry_after=10_000) <= 375.0 for _ in range(50))
    assert all(300.0 <= p.delay(1, retry_after=math.inf) <= 375.0 for _ in range(5))
    # nonsense is ignored
    assert 0.75 <= p.delay(1, retry_after=math.nan) <= 1.25
    assert 0.75 <= p.delay(1, retry_after=-5) <= 1.25
    assert RetryPolicy(jitter=0).delay(1, retry_after=7) == 7.0


def test_should_retry() -> None:
    p = RetryPolicy(max_attempts=3)
    transient = BackendError("x", error_class="RateLimitError")
    permanent = BackendError("x", permanent=True, error_class="ContextLengthError")
    assert p.should_retry(transient, 1) and p.should_retry(transient, 2)
    assert not p.should_retry(transient, 3)
    assert not p.should_retry(permanent, 1)


def test_retry_from_config_and_validation() -> None:
    p = RetryPolicy.from_config({"max_attempts": 2, "base_delay": 0.5, "other": 1})
    assert (p.max_attempts, p.base_delay, p.max_delay) == (2, 0.5, 60.0)
    assert RetryPolicy.from_config(None) == RetryPolicy()
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=1.5)


# -- fake clock --------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def asleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def async_limiter(clock: FakeClock, rpm: float | None = None, tpm: float | None = None,
                  **kw: float) -> AsyncRateLimiter:
    return AsyncRateLimiter(rpm, tpm, clock=clock, sleep=clock.asleep, **kw)


# -- AsyncRateLimiter --------------------------------------------------------------------------
def test_rpm_burst_then_one_per_second() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=60)

    async def main() -> list[float]:
        for _ in range(60):  # one minute's budget is available at once
            assert await lim.acquire() == 0.0
        return [await lim.acquire() for _ in range(3)]

    waits = asyncio.run(main())
    assert waits == pytest.approx([1.0, 1.0, 1.0])
    assert clock.now == pytest.approx(1003.0)


def test_rpm_small_burst() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=60, burst_seconds=1)

    async def main() -> list[float]:
        return [await lim.acquire() for _ in range(4)]

    assert asyncio.run(main()) == pytest.approx([0.0, 1.0, 1.0, 1.0])


def test_continuous_refill() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=60, burst_seconds=1)

    async def main() -> list[float]:
        await lim.acquire()
        clock.now += 0.75  # three quarters of a request refilled
        return [await lim.acquire()]

    assert asyncio.run(main()) == pytest.approx([0.25])


def test_tpm_limits_by_tokens() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, tpm=600)  # 10 tokens/s, bucket of 600

    async def main() -> list[float]:
        return [await lim.acquire(600), await lim.acquire(100), await lim.acquire(50)]

    assert asyncio.run(main()) == pytest.approx([0.0, 10.0, 5.0])


def test_both_limits_the_stricter_wins() -> None:
    clock = FakeClock()
    # 1 req/s (bucket 10), 10 tok/s (bucket 100)
    lim = async_limiter(clock, rpm=60, tpm=600, burst_seconds=10)

    async def main() -> list[float]:
        return [await lim.acquire(100), await lim.acquire(40), await lim.acquire(1),
                await lim.acquire(1)]

    # tokens bind first (4 s for 40 tokens), then 1 token needs 0.1 s; requests still had 8
    assert asyncio.run(main()) == pytest.approx([0.0, 4.0, 0.1, 0.1])
    lim = async_limiter(clock, rpm=60, tpm=60_000, burst_seconds=1)

    async def main2() -> list[float]:
        return [await lim.acquire(10), await lim.acquire(10)]

    assert asyncio.run(main2()) == pytest.approx([0.0, 1.0])  # now requests bind


def test_oversized_request_waits_for_full_bucket_then_owes() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, tpm=60)  # 1 token/s, bucket of 60

    async def main() -> list[float]:
        return [await lim.acquire(120), await lim.acquire(1)]

    # the first goes with a full bucket and leaves it at -60; the next waits 61 s
    assert asyncio.run(main()) == pytest.approx([0.0, 61.0])


def test_fifo_large_request_not_overtaken() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, tpm=60)
    order: list[str] = []

    async def req(name: str, tokens: int) -> None:
        await lim.acquire(tokens)
        order.append(name)

    async def main() -> None:
        await lim.acquire(60)  # empty the bucket
        tasks = [asyncio.create_task(req("big", 30))]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(req(f"small{i}", 1)) for i in range(3)]
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert order == ["big", "small0", "small1", "small2"]
    assert clock.now == pytest.approx(1000 + 33)


def test_fifo_many_waiters_in_arrival_order() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=60, burst_seconds=1)
    order: list[int] = []

    async def req(i: int) -> None:
        await lim.acquire()
        order.append(i)

    async def main() -> None:
        await asyncio.gather(*(req(i) for i in range(10)))

    asyncio.run(main())
    assert order == list(range(10))
    assert clock.now == pytest.approx(1009.0)


def test_pause() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=6000)

    async def main() -> list[float]:
        await lim.acquire()
        lim.pause(5)
        return [await lim.acquire(), await lim.acquire()]

    assert asyncio.run(main()) == pytest.approx([5.0, 0.0])


def test_unlimited_and_validation() -> None:
    lim = AsyncRateLimiter(None, None)
    assert asyncio.run(lim.acquire(10**9)) == 0.0
    for bad in ((0, None), (None, -1)):
        with pytest.raises(ValueError):
            AsyncRateLimiter(*bad)
    with pytest.raises(ValueError):
        RateLimiter(60, None, burst_seconds=0)


def test_async_limiter_across_event_loops() -> None:
    clock = FakeClock()
    lim = async_limiter(clock, rpm=60, burst_seconds=1)
    assert asyncio.run(lim.acquire()) == 0.0
    assert asyncio.run(lim.acquire()) == pytest.approx(1.0)  # state carries over


def test_async_limiter_real_clock_spacing() -> None:
    lim = AsyncRateLimiter(requests_per_minute=1200, burst_seconds=0.05)  # 20/s, burst 1

    async def main() -> float:
        t0 = time.monotonic()
        await asyncio.gather(*(lim.acquire() for _ in range(6)))
        return time.monotonic() - t0

    elapsed = asyncio.run(main())
    assert 0.2 <= elapsed < 1.0  # five waits of 0.05 s


# -- RateLimiter (sync) ------------------------------------------------------------------------
def test_sync_limiter_rpm_and_tpm() -> None:
    clock = FakeClock()
    lim = RateLimiter(60, 600, burst_seconds=10, clock=clock, sleep=clock.sleep)
    assert [lim.acquire(100), lim.acquire(40), lim.acquire(1)] == pytest.approx([0, 4, 0.1])
    lim.pause(2)
    assert lim.acquire(0) == pytest.approx(2)
    assert clock.sleeps == pytest.approx([4, 0.1, 2])


def test_sync_limiter_threads_respect_rate() -> None:
    lim = RateLimiter(requests_per_minute=1200, burst_seconds=0.05)  # 20/s
    t0 = time.monotonic()
    threads = [threading.Thread(target=lim.acquire) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 0.2 <= time.monotonic() - t0 < 1.0


# -- estimate_tokens ---------------------------------------------------------------------------
def test_estimate_tokens_completion() -> None:
    assert estimate_tokens(Prompt("completion", text="x" * 400), 100) == 200
    assert estimate_tokens(Prompt("completion", text="x" * 401), 0) == 101


def test_estimate_tokens_chat_with_image() -> None:
    prompt = Prompt("chat", messages=(
        {"role": "system", "content": "a" * 40},
        {"role": "user", "content": [{"type": "text", "text": "b" * 40},
                                     {"type": "image_url", "image_url": {"url": "file:///x"}}]},
    ))
    assert estimate_tokens(prompt, 50) == 20 + 2 * MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS + 50


def test_the_default_timeout_grows_with_max_tokens():
    """Without request_timeout an openai model waits 120 s, or 30 s plus half a second a
    token of decoding.max_tokens (a server decoding 2 tokens a second still answers); a set
    request_timeout wins."""
    from copyprobe.generation.limits import default_request_timeout
    from copyprobe.generation.openai_api import OpenAIBackend

    assert default_request_timeout(8) == 120.0 and default_request_timeout(180) == 120.0
    assert default_request_timeout(400) == 230.0
    spec = {"model_id": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_optional": True,
            "api_key_env": "COPYPROBE_UNSET_KEY", "decoding": {"max_tokens": 1000}}
    assert OpenAIBackend.from_config(spec, None).request_timeout == 530.0
    assert OpenAIBackend.from_config({**spec, "request_timeout": 7}, None).request_timeout == 7
