"""The OpenAI Batch API backend: asynchronous, half-price calls for large studies.

Reference: docs/backends.md.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import random
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, ClassVar

import aiohttp

from copyprobe import __version__ as _copyprobe_version
from copyprobe.generation.base import (
    Backend,
    BackendError,
    BatchItem,
    BatchStatus,
    Completion,
    Decoding,
)
from copyprobe.generation.openai_api import OpenAIBackend
from copyprobe.generation.openai_protocol import (
    DEFAULT_BASE_URL,
    map_status_error,
    prepare_messages,
    read_choice,
    redact,
)
from copyprobe.generation.server_http import Answer, ServerClient
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt
from copyprobe.store import atomic_open, atomic_write, move

ENDPOINTS = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}
#: OpenAI limits for one batch input file.
MAX_REQUESTS_PER_BATCH = 50_000
MAX_BATCH_FILE_BYTES = 200 * 1024 * 1024

_PENDING = {"validating", "in_progress", "finalizing", "cancelling"}
_ENDED_FAILED = {"failed", "expired", "cancelled"}


class OpenAIBatchBackend(Backend):
    name = "openai_batch"
    supports_batch_api = True
    #: backend name under which answers are cached: shared with the synchronous OpenAI backend
    #: (see the module docstring).
    cache_namespace: ClassVar[str] = "openai"
    max_requests_per_batch: int = MAX_REQUESTS_PER_BATCH
    max_batch_file_bytes: int = MAX_BATCH_FILE_BYTES

    def __init__(self, *, model_id: str, base_url: str = DEFAULT_BASE_URL,
                 api_key_env: str = "OPENAI_API_KEY", completion_window: str = "24h",
                 request_timeout: float = 600.0, max_retries: int = 2,
                 batch_dir: str | os.PathLike[str] | None = None,
                 max_tokens_param: str = "max_tokens",
                 metadata: Mapping[str, str] | None = None) -> None:
        if not model_id:
            raise BackendError("openai_batch needs a model_id", permanent=True,
                               error_class="ConfigError")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise BackendError(f"max_tokens_param must be max_tokens or max_completion_tokens, "
                               f"got {max_tokens_param!r}", permanent=True,
                               error_class="ConfigError")
        self.model_id = model_id
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.completion_window = completion_window
        self.request_timeout = float(request_timeout)
        self.max_retries = int(max_retries)
        self.batch_dir = Path(batch_dir) if batch_dir else None
        self.max_tokens_param = max_tokens_param
        self.metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
        #: custom ids of the batches this instance submitted (lets fetch_batch name the missing)
        self._submitted: dict[str, list[str]] = {}
        self._http: ServerClient | None = None

    # -- config ------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, spec: Mapping[str, Any],
                    model_file: ModelFile | None) -> OpenAIBatchBackend:
        return cls(model_id=spec.get("model_id", ""),
                   base_url=spec.get("base_url", DEFAULT_BASE_URL),
                   api_key_env=spec.get("api_key_env", "OPENAI_API_KEY"),
                   completion_window=spec.get("completion_window", "24h"),
                   request_timeout=spec.get("request_timeout", 600.0),
                   max_retries=spec.get("max_retries", 2),
                   batch_dir=spec.get("batch_dir"),
                   max_tokens_param=spec.get("max_tokens_param", "max_tokens"),
                   metadata=spec.get("metadata"))

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        # Deliberately the synchronous OpenAI backend's identity, computed by it (no "api"
        # key): batch and sync answers of the same model, parameters and prompt share cache
        # entries (see the module docstring).
        return OpenAIBackend.identity_from_config(spec, model_file)

    # -- credentials and client --------------------------------------------------------------
    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise BackendError(f"environment variable {self.api_key_env} is not set (it should "
                               f"hold the API key)", permanent=True,
                               error_class="AuthError")
        return key

    def _scrub(self, message: str) -> str:
        return redact(message, os.environ.get(self.api_key_env) or None)

    def _key_or_none(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _auth(self) -> dict[str, str]:
        # read for every request: a rotated key is used at once
        return {"Authorization": f"Bearer {self._api_key()}"}

    def _client(self) -> ServerClient:
        self._api_key()  # fail early, with the variable's name, when it is unset
        if self._http is None:
            self._http = ServerClient(self.base_url, timeout=self.request_timeout,
                                      connect_timeout=self.request_timeout,
                                      headers={"User-Agent": f"copyprobe/{_copyprobe_version}"},
                                      auth=self._auth, key=self._key_or_none)
        return self._http

    async def _request(self, method: str, path: str, *, json_body: Any = None,
                       form: Callable[[], Any] | None = None,
                       sink: IO[bytes] | None = None) -> Answer:
        """One REST request of the Files and Batches API, retried ``max_retries`` times when it
        fails in transit or answers 408, 409, 429 or 5xx (as the openai SDK retried)."""
        client = self._client()
        for attempt in range(self.max_retries + 1):
            try:
                return await client.request(method, self.base_url + path, json=json_body,
                                            data=form() if form else None, sink=sink,
                                            where="batch API")
            except BackendError as exc:
                if attempt >= self.max_retries or not _retryable(exc):
                    raise
                delay = exc.retry_after
            if sink is not None:
                sink.seek(0)
                sink.truncate()
            await asyncio.sleep(delay if delay is not None and 0 < delay <= 60
                                else min(0.5 * 2 ** attempt, 8.0) * (1 - 0.25 * random.random()))
        raise AssertionError("unreachable")

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """The JSON object a REST request answers (synchronously)."""
        answer = self._client().run(self._request(method, path, **kwargs))
        try:
            obj = json.loads(answer.content)
        except (ValueError, UnicodeDecodeError):
            obj = None
        if not isinstance(obj, dict):
            raise BackendError(f"batch API: HTTP {answer.status} {method} {path} answer is not "
                               "a JSON object", error_class="MalformedResponse",
                               status_code=answer.status)
        return obj

    def __getstate__(self) -> dict[str, Any]:
        # a pickled backend (multiprocessing) carries no client, hence no key
        return {**self.__dict__, "_http": None}

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    # -- requests ----------------------------------------------------------------------------
    def endpoint_for(self, prompt: Prompt) -> str:
        try:
            return ENDPOINTS[prompt.format]
        except KeyError:
            raise BackendError(f"unknown prompt format {prompt.format!r}", permanent=True,
                               error_class="BadRequestError") from None

    def request_body(self, prompt: Prompt, decoding: Decoding,
                     sample_index: int = 0) -> dict[str, Any]:
        """The JSON body of one request (what the synchronous endpoint would receive)."""
        if decoding.top_k not in (0, None) or decoding.repeat_penalty != 1.0:
            raise BackendError("the OpenAI API has no top_k or repeat_penalty; set top_k: 0 and "
                               "repeat_penalty: 1.0 for this model", permanent=True,
                               error_class="UnsupportedDecoding")
        body: dict[str, Any] = {"model": self.model_id}
        if prompt.format == "chat":
            body["messages"] = prepare_messages(prompt)  # file:// images -> data: URLs
        else:
            body["prompt"] = prompt.text
        body["temperature"] = decoding.temperature
        body["top_p"] = decoding.top_p
        # as in the sync backend, max_tokens_param applies to chat; /completions has max_tokens
        body[self.max_tokens_param if prompt.format == "chat" else "max_tokens"] = \
            decoding.max_tokens
        body["seed"] = decoding.seed + sample_index
        return body

    def batch_line(self, item: BatchItem, decoding: Decoding) -> bytes:
        """One JSONL line (with its newline) of a batch input file."""
        line = {"custom_id": item.custom_id, "method": "POST",
                "url": self.endpoint_for(item.prompt),
                "body": self.request_body(item.prompt, decoding, item.sample_index)}
        return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        raise BackendError("openai_batch answers through the Batch API only (run_batch); use "
                           "the synchronous openai backend for single calls", permanent=True,
                           error_class="UnsupportedOperation")

    # -- batch interface ---------------------------------------------------------------------
    def submit_batch(self, items: Sequence[BatchItem], decoding: Decoding) -> str:
        if not items:
            raise ValueError("submit_batch needs at least one item")
        endpoints = {self.endpoint_for(it.prompt) for it in items}
        if len(endpoints) != 1:
            raise ValueError("one batch serves one endpoint; split chat and completion prompts")
        endpoint = endpoints.pop()
        ids = [it.custom_id for it in items]
        if len(set(ids)) != len(ids):
            raise ValueError("custom_ids must be unique within a batch")
        if len(items) > self.max_requests_per_batch:
            raise ValueError(f"{len(items)} requests exceed the batch limit of "
                             f"{self.max_requests_per_batch}")
        data = b"".join(self.batch_line(it, decoding) for it in items)
        if len(data) > self.max_batch_file_bytes:
            raise ValueError(f"batch file of {len(data)} bytes exceeds the limit of "
                             f"{self.max_batch_file_bytes}")
        digest = hashlib.sha256(data).hexdigest()[:16]
        copy: Path | None = None
        if self.batch_dir is not None:
            copy = self.batch_dir / f"pending-{digest}.input.jsonl"
            atomic_write(copy, data, durable=True)
        metadata = {"tool": "copyprobe", "model_id": self.model_id,
                    "requests": str(len(items)), "input_sha256_16": digest, **self.metadata}
        # the service takes at most 16 pairs, keys of 64 and values of 512 characters
        metadata = {k[:64]: v[:512] for k, v in list(metadata.items())[:16]}
        def upload() -> aiohttp.FormData:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", data, filename=f"copyprobe-{digest}.jsonl",
                           content_type="application/jsonl")
            return form

        uploaded = self._call("POST", "/files", form=upload)
        batch = self._call("POST", "/batches", json_body={
            "input_file_id": uploaded["id"], "endpoint": endpoint,
            "completion_window": self.completion_window, "metadata": metadata})
        batch_id = str(batch["id"])
        self._submitted[batch_id] = ids
        if copy is not None:
            move(copy, self.batch_dir / f"{_safe(batch_id)}.input.jsonl")
            atomic_write(self.batch_dir / f"{_safe(batch_id)}.json", json.dumps({
                "batch_id": batch_id, "input_file_id": uploaded["id"], "endpoint": endpoint,
                "model_id": self.model_id, "requests": len(items), "input_sha256_16": digest,
                "submitted_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            }, indent=1), durable=True)
        return batch_id

    def poll_batch(self, batch_id: str) -> BatchStatus:
        return _status(self._call("GET", f"/batches/{batch_id}"))

    def fetch_batch(self, batch_id: str, expected_ids: Iterable[str] | None = None,
                    ) -> dict[str, Completion | BackendError]:
        """Every answer and error of an ended batch by ``custom_id``. Requests named in
        ``expected_ids`` (default: those this instance submitted under ``batch_id``) that appear
        in neither file become transient ``MissingResult`` errors."""
        batch = self._call("GET", f"/batches/{batch_id}")
        status = _status(batch)
        if not status.done:
            raise BackendError(f"batch {batch_id} is {status.status}, not ended",
                               error_class="BatchNotDone")
        results: dict[str, Completion | BackendError] = {}
        for kind, file_id in (("output", batch.get("output_file_id")),
                              ("errors", batch.get("error_file_id"))):
            if not file_id:
                continue
            for raw in self._download_lines(file_id, batch_id, kind):
                parsed = self._parse_line(raw, batch_id)
                if parsed is None:
                    continue
                cid, result = parsed
                if isinstance(results.get(cid), Completion):
                    continue  # an answer wins over a later error line for the same id
                results[cid] = result
        expected = list(expected_ids) if expected_ids is not None else self._submitted.get(
            batch_id, [])
        for cid in expected:
            if cid not in results:
                results[cid] = missing_result(batch_id, status.status, status.message)
        return results

    def _stream(self, file_id: str, f: IO[bytes]) -> None:
        """The content of file ``file_id``, written to ``f`` as it arrives."""
        self._client().run(self._request("GET", f"/files/{file_id}/content", sink=f))

    def _download_lines(self, file_id: str, batch_id: str, kind: str) -> Iterator[bytes]:
        # Stream to disk (batch_dir copy, else a temporary file), then read line by line:
        # output files of 50,000 requests are too large to hold twice in memory.
        if self.batch_dir is not None:
            path = self.batch_dir / f"{_safe(batch_id)}.{kind}.jsonl"
            with atomic_open(path) as f:
                self._stream(file_id, f)
            yield from _lines(path)
            return
        with tempfile.TemporaryDirectory(prefix="copyprobe-batch-") as tmp:
            path = Path(tmp) / f"{kind}.jsonl"
            with path.open("wb") as f:
                self._stream(file_id, f)
            yield from _lines(path)

    def _parse_line(self, raw: bytes,
                    batch_id: str) -> tuple[str, Completion | BackendError] | None:
        try:
            line = json.loads(raw)
            cid = line["custom_id"]
        except (ValueError, KeyError, TypeError):
            return None  # not a request line; the request then counts as missing
        response = line.get("response") or None
        error = line.get("error") or None
        if response is not None and response.get("status_code") == 200 and not error:
            try:
                return cid, _completion(response.get("body"))
            except BackendError as exc:
                return cid, exc
        if response is not None and response.get("status_code") not in (None, 200):
            body = response.get("body") or {}
            return cid, map_status_error(int(response["status_code"]), body,
                                         key=os.environ.get(self.api_key_env) or None)
        if isinstance(error, Mapping):
            return cid, map_error_code(error)
        return cid, BackendError(f"batch {batch_id} gave neither a response nor an error for "
                                 f"{cid}", error_class="MissingResult")


# -- helpers ---------------------------------------------------------------------------------
def _retryable(exc: BackendError) -> bool:
    """Whether the openai SDK retried such a failure: no answer, or HTTP 408, 409, 429, 5xx."""
    if exc.status_code is None:
        return exc.error_class in ("ConnectionError", "Timeout")
    return exc.status_code in (408, 409, 429) or exc.status_code >= 500


def _status(batch: Mapping[str, Any]) -> BatchStatus:
    """A batch object of the API (JSON) as a BatchStatus."""
    counts = batch.get("request_counts") or {}
    completed = int(counts.get("completed") or 0)
    failed_n = int(counts.get("failed") or 0)
    total = int(counts.get("total") or 0)
    message = ""
    errors = (batch.get("errors") or {}).get("data") or []
    if errors:
        message = "; ".join(f"{e.get('code') or 'error'}: {e.get('message') or ''}".strip()
                            for e in errors[:5])
    bid, status = str(batch.get("id")), str(batch.get("status"))
    if status in _PENDING:
        return BatchStatus(bid, status, done=False, completed=completed, total=total,
                           message=message)
    if status == "completed":
        return BatchStatus(bid, status, done=True, completed=completed, total=total,
                           message=message or (f"{failed_n} request(s) failed" if failed_n
                                               else ""))
    if status in _ENDED_FAILED:
        return BatchStatus(bid, status, done=True, failed=True, completed=completed,
                           total=total, message=message or f"batch {status}")
    # an unknown future status: keep waiting rather than fetch too early
    return BatchStatus(bid, status, done=False, completed=completed, total=total,
                       message=message)


def _completion(body: Any) -> Completion:
    """A status-200 response body as a Completion, read as the synchronous backend reads it
    (:func:`~copyprobe.generation.openai_protocol.read_choice`)."""

    def malformed(why: str) -> BackendError:
        return BackendError(f"HTTP 200 answer {why}", error_class="MalformedResponse",
                            status_code=200)

    if not isinstance(body, Mapping):
        raise malformed("is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise malformed("has no choices")
    return read_choice(body, chat="message" in choices[0], where="batch answer")


def map_error_code(error: Mapping[str, Any]) -> BackendError:
    """An error-file line without an HTTP response (``{"code", "message"}``)."""
    code = str(error.get("code") or "")
    message = str(error.get("message") or code or "error")
    text = redact(f"{code or 'error'}: {message}")
    if code == "batch_expired":
        return BackendError(text, error_class="BatchExpired")
    if code == "batch_cancelled":
        return BackendError(text, error_class="BatchCancelled")
    if "rate_limit" in code or code == "token_limit_exceeded":
        return BackendError(text, error_class="RateLimitError")
    if code in ("server_error", "internal_error") or "server" in code:
        return BackendError(text, error_class="ServerError")
    if code == "timeout":
        return BackendError(text, error_class="Timeout")
    # everything else (invalid request, context length, content filter, ...) is classed as an
    # HTTP 400 with that code would be (all permanent)
    mapped = map_status_error(400, {"error": {"code": code or None, "message": message}})
    return BackendError(text, permanent=mapped.permanent, error_class=mapped.error_class)


def missing_result(batch_id: str, status: str, detail: str = "") -> BackendError:
    """The transient error of a request that an ended batch did not answer."""
    extra = f" ({detail})" if detail else ""
    return BackendError(f"batch {batch_id} ended {status} without an answer for this "
                        f"request{extra}; it will be resubmitted", error_class="MissingResult")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                yield raw


__all__: list[str] = ["OpenAIBatchBackend", "map_error_code", "missing_result"]
