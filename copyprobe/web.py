"""Polite, resumable HTTP for the crawlers: one :class:`requests.Session` with rules.

Reference: docs/sources.md.
"""

from __future__ import annotations

import email.utils
import hashlib
import io
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from copyprobe.store import KeyedStore

log = logging.getLogger(__name__)

#: Statuses worth asking again: rate limited, or a server or gateway error.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
CACHE_HEADER = "X-Copyprobe-Cache"


#: Where crawlers cache raw answers unless a source sets ``cache_dir`` (null: no cache);
#: relative to the working directory, which in the workflow is the project folder.
DEFAULT_CACHE_DIR = ".cache/copyprobe/http"

#: The environment variable that gives every crawler of a study its User-Agent when a source's
#: config has no ``user_agent`` (a name and a contact address; not a secret, but not a setting
#: that changes any result, so it may live outside the config).
USER_AGENT_ENV = "COPYPROBE_USER_AGENT"


def user_agent(configured: Any) -> str | None:
    """The User-Agent a crawler sends: the source's ``user_agent`` param, else
    ``$COPYPROBE_USER_AGENT``, else None (the source decides whether it may go without)."""
    for value in (configured, os.environ.get(USER_AGENT_ENV)):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def user_agent_required(source_kind: str, why: str = "") -> str:
    """The message of a source that refuses to crawl without a User-Agent."""
    return (f"source {source_kind}: param 'user_agent' is required{why}: a name and a contact "
            f"address, e.g. 'my-study/1.0 (me@example.org)', in the source's config or in the "
            f"environment variable {USER_AGENT_ENV}")


class FetchError(RuntimeError):
    """A request failed for good (retries spent, an error status, or an unreadable answer)."""

    def __init__(self, message: str, *, url: str, status: int | None = None,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class WebSettings:
    """How a crawler talks to a server (all from config; see the module docstring)."""

    user_agent: str
    cache_dir: str | os.PathLike[str] | None = None
    max_requests_per_second: float | None = 1.0
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    timeout: float = 30.0
    #: A Retry-After longer than this (seconds) is not waited for: the request fails at once.
    max_retry_after: float = 600.0

    def __post_init__(self) -> None:
        if not self.user_agent or not self.user_agent.strip():
            raise ValueError("user_agent must not be empty")
        if self.max_requests_per_second is not None and self.max_requests_per_second <= 0:
            raise ValueError("max_requests_per_second must be positive (or None: no limit)")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")


class RateLimiter:
    """At most ``rate`` acquisitions per second, shared by threads (None: no limit)."""

    def __init__(self, rate: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = 0.0 if rate is None else 1.0 / rate
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    def acquire(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            wait = self._next - now
            self._next = max(now, self._next) + self.interval
        if wait > 0:
            self._sleep(wait)


def canonical_url(url: str) -> str:
    """The URL with its query parameters sorted (same request, same key)."""
    parts = urlsplit(url)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((parts.scheme, parts.netloc.lower(), parts.path or "/", query, ""))


def cache_key(method: str, url: str, body: bytes | str | None) -> str:
    if isinstance(body, str):
        body = body.encode("utf-8")
    h = hashlib.sha256()
    for part in (method.upper().encode(), canonical_url(url).encode(), body or b""):
        h.update(part)
        h.update(b"\x1f")
    return h.hexdigest()


class ResponseCache:
    """Raw answers on disk, one entry per request key (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        # <dir>/<key[:2]>/<key>.json (status, headers) beside <key>.body (the decoded body)
        self._store = KeyedStore(self.dir, suffix=".json", shard=2)

    def get(self, key: str, request: requests.PreparedRequest) -> requests.Response | None:
        meta = self._store.get_json(key)
        body = self._store.get_bytes(key, ".body") if isinstance(meta, dict) else None
        if meta is None or body is None:
            return None
        resp = requests.Response()
        resp.status_code = meta["status"]
        resp.reason = meta.get("reason", "")
        resp.url = meta["url"]
        resp.headers = CaseInsensitiveDict(meta["headers"])
        resp.headers[CACHE_HEADER] = "hit"
        resp.encoding = get_encoding_from_headers(resp.headers)
        resp._content = body
        resp.raw = io.BytesIO(body)
        resp.request = request
        return resp

    def put(self, key: str, resp: requests.Response) -> None:
        # Only what describes the content is kept (no cookies, no server-set secrets).
        keep = ("content-type", "content-encoding", "last-modified", "etag", "location", "date")
        headers = {k: v for k, v in resp.headers.items() if k.lower() in keep}
        headers.pop("content-encoding", None)  # the body is stored decoded
        meta = {"status": resp.status_code, "reason": resp.reason, "url": resp.url,
                "headers": headers, "stored_at": time.time()}
        self._store.put_bytes(key, resp.content, ".body")  # the body first: meta marks a hit
        self._store.put_json(key, meta, ensure_ascii=True)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class PoliteAdapter(HTTPAdapter):
    """The transport adapter that applies the rate limit, the retries and the cache."""

    def __init__(self, settings: WebSettings, *,
                 retry_on: Callable[[requests.Response], float | None] | None = None,
                 cacheable: Callable[[requests.Response], bool] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None) -> None:
        super().__init__(max_retries=0)
        self.settings = settings
        self.retry_on = retry_on
        self.cacheable = cacheable
        self.cache = ResponseCache(settings.cache_dir) if settings.cache_dir else None
        self.limiter = RateLimiter(settings.max_requests_per_second, sleep=sleep)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.stats = {"requests": 0, "cache_hits": 0, "retries": 0}
        self._stats_lock = threading.Lock()

    def _count(self, name: str) -> None:
        with self._stats_lock:
            self.stats[name] += 1

    def backoff(self, attempt: int) -> float:
        step = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** attempt)
        return step / 2 + self._rng.uniform(0, step / 2)

    def send(self, request: requests.PreparedRequest, stream: bool = False,  # type: ignore[override]
             timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Mapping[str, str] | None = None) -> requests.Response:
        url = request.url or ""
        key = cache_key(request.method or "GET", url, request.body) if self.cache else None
        if key is not None and self.cache is not None:
            hit = self.cache.get(key, request)
            if hit is not None:
                self._count("cache_hits")
                return hit
        timeout = self.settings.timeout if timeout is None else timeout
        attempts = 0
        while True:
            self.limiter.acquire()
            attempts += 1
            self._count("requests")
            try:
                resp = super().send(request, stream=False, timeout=timeout, verify=verify,
                                    cert=cert, proxies=proxies)
                _ = resp.content  # read the body now: a connection dropped mid-body is retried
            except (requests.ConnectionError, requests.Timeout) as exc:
                problem, status, delay = f"{type(exc).__name__}: {exc}", None, None
            else:
                status = resp.status_code
                if status in RETRY_STATUSES:
                    problem = f"HTTP {status}"
                    delay = retry_after_seconds(resp.headers.get("Retry-After"))
                else:
                    delay = self.retry_on(resp) if (self.retry_on and status < 400) else None
                    if delay is None:
                        if (key is not None and self.cache is not None and status < 400
                                and (self.cacheable is None or self.cacheable(resp))):
                            self.cache.put(key, resp)
                        return resp
                    problem = "the server asked to retry"
            if attempts > self.settings.max_retries:
                raise FetchError(f"{request.method} {url}: {problem} after {attempts} "
                                 f"attempt(s)", url=url, status=status, attempts=attempts)
            if delay is not None and delay > self.settings.max_retry_after:
                raise FetchError(f"{request.method} {url}: {problem}; the server asks to wait "
                                 f"{delay:.0f} s, more than max_retry_after="
                                 f"{self.settings.max_retry_after:.0f} s", url=url,
                                 status=status, attempts=attempts)
            wait = self.backoff(attempts - 1) if delay is None else delay + self._rng.uniform(
                0, min(1.0, 0.1 * delay))
            log.warning("%s %s: %s; retry %d/%d in %.1f s", request.method, url, problem,
                        attempts, self.settings.max_retries, wait)
            self._count("retries")
            self._sleep(wait)


class PoliteSession(requests.Session):
    """A ``requests.Session`` whose every http(s) request goes through a :class:`PoliteAdapter`."""

    def __init__(self, adapter: PoliteAdapter) -> None:
        super().__init__()
        self.adapter = adapter
        self.mount("http://", adapter)
        self.mount("https://", adapter)
        self.headers["User-Agent"] = adapter.settings.user_agent

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.adapter.stats)

    def get_json(self, url: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET ``url`` and decode its JSON; :class:`FetchError` names the URL otherwise."""
        resp = self.get(url, params=params)
        if resp.status_code >= 400:
            raise FetchError(f"GET {resp.url}: HTTP {resp.status_code}", url=resp.url,
                             status=resp.status_code, attempts=1)
        try:
            return resp.json()
        except ValueError as exc:
            raise FetchError(f"GET {resp.url}: the answer is not JSON ({exc})", url=resp.url,
                             status=resp.status_code) from None


def polite_session(settings: WebSettings, *,
                   retry_on: Callable[[requests.Response], float | None] | None = None,
                   cacheable: Callable[[requests.Response], bool] | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> PoliteSession:
    """A session applying ``settings`` (see the module docstring for what it does)."""
    return PoliteSession(PoliteAdapter(settings, retry_on=retry_on, cacheable=cacheable,
                                       sleep=sleep))
