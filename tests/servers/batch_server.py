"""An emulation of the OpenAI Files and Batches APIs for tests (stdlib only).

Endpoints (documented formats)
    ``POST /v1/files`` (multipart/form-data: ``purpose``, ``file``) -> file object
    ``{id, object: "file", bytes, created_at, filename, purpose, status}``;
    ``GET /v1/files/{id}`` -> file object; ``GET /v1/files/{id}/content`` -> the raw bytes;
    ``POST /v1/batches`` ``{input_file_id, endpoint, completion_window, metadata}`` -> batch
    object ``{id, object: "batch", endpoint, errors, input_file_id, completion_window, status,
    output_file_id, error_file_id, created_at, in_progress_at, ..., request_counts: {total,
    completed, failed}, metadata}``; ``GET /v1/batches/{id}``; ``POST /v1/batches/{id}/cancel``.

Life of a batch
    ``validating`` when created; the k-th ``GET /v1/batches/{id}`` moves it to
    ``progression[k-1]`` (default ``("in_progress",)``), and the retrieve after the last one
    ends it (``completed`` unless scripted otherwise), writing the output file (status-200
    lines) and the error file (failed requests), both in the documented line format
    ``{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null,
    "error": {"code", "message"} | null}``. Input files are validated as OpenAI does (JSONL,
    unique ``custom_id``, ``method`` POST, ``url`` equal to the batch endpoint, a ``body`` with a
    ``model``); an invalid file makes the batch end ``failed`` with ``errors``.

Answers (deterministic, the same as ``fault_server.py``)
    chat: ``"echo: " + <text of the last user message, reversed>``; completions:
    ``"echo: " + <prompt reversed>``; ``usage.prompt_tokens`` = ``ceil(chars/4)`` of the prompt
    text, ``completion_tokens`` = words of the answer; ``model`` echoes the request's model.

Scripting
    ``fail(custom_id, kind)``: that request is answered in the error file with kind ``"429"``
    (rate_limit_exceeded), ``"500"`` (server_error), ``"context"`` (400
    context_length_exceeded), ``"400"`` (invalid_request_error), ``"content_filter"`` (400),
    ``"expired_line"`` (no response, ``error.code = batch_expired``), ``"malformed"`` (status 200
    without ``choices``, in the output file) or ``"drop"`` (in neither file). A fault applies
    to every batch containing the id unless ``times`` is given.
    ``script_batches(*outcomes)``: the next batches created end with these outcomes in order:
    ``Outcome("completed")``, ``Outcome("failed")``, ``Outcome("expired", answered=2)``
    (the first ``answered`` requests processed, the rest written to the error file as
    ``batch_expired`` unless ``error_lines=False``), ``Outcome("cancelled", answered=...)``;
    ``Outcome(progression=(...))`` gives that batch its own statuses before it ends.
    ``fail_next_retrieves(n, status=500)``: the next ``n`` batch retrievals answer HTTP errors.
    ``reverse_output=True`` writes result lines in reverse order (OpenAI does not promise the
    input order: clients must map answers by ``custom_id``).

Counters
    ``batches_created``, ``files_uploaded``, ``retrieves``, ``auth_failures``,
    ``requests_per_custom_id`` (a Counter over all batches created: assert nothing was sent
    twice), ``bodies`` (custom_id -> request bodies received), ``uploads`` (raw input files).

Use::

    with BatchServer(api_key="sk-test") as srv:
        client = OpenAI(base_url=srv.base_url, api_key="sk-test")  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import math
import sys
import threading
import time
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# the shared start/stop plumbing next to this file (the tests folder is not a package, so the
# servers are loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

ENDPOINTS = ("/v1/chat/completions", "/v1/completions")
TERMINAL = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class Outcome:
    """How a scripted batch ends."""

    status: str = "completed"
    #: for expired/cancelled: how many requests (in file order) were processed before the end
    answered: int = 0
    #: for expired/cancelled: write the unprocessed requests to the error file
    #: (``batch_expired``/``batch_cancelled``), as OpenAI does; False leaves them out entirely
    error_lines: bool = True
    #: for failed: the batch-level error
    error_code: str = "invalid_request"
    error_message: str = "The batch failed (scripted)."
    #: this batch's statuses before it ends (default: the server's ``progression``)
    progression: tuple[str, ...] | None = None


# -- answers ---------------------------------------------------------------------------------
def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content
                        if isinstance(p, dict) and p.get("type") == "text")
    return ""


def prompt_text(url: str, body: dict[str, Any]) -> str:
    if url.endswith("/chat/completions"):
        users = [m for m in body.get("messages") or [] if isinstance(m, dict)
                 and m.get("role") == "user"]
        return _content_text(users[-1].get("content")) if users else ""
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):
        prompt = " ".join(str(p) for p in prompt)
    return str(prompt)


def answer_text(url: str, body: dict[str, Any]) -> str:
    return "echo: " + prompt_text(url, body)[::-1]


def _prompt_chars(url: str, body: dict[str, Any]) -> int:
    if url.endswith("/chat/completions"):
        return sum(len(_content_text(m.get("content"))) for m in body.get("messages") or []
                   if isinstance(m, dict))
    return len(prompt_text(url, body))


def response_body(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """The documented-format answer of the synchronous endpoint to ``body``."""
    text = answer_text(url, body)
    model = body.get("model", "batch-model")
    prompt_tokens = math.ceil(_prompt_chars(url, body) / 4)
    completion_tokens = len(text.split())
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    rid = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    created = int(time.time())
    if url.endswith("/chat/completions"):
        return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": created,
                "model": model, "system_fingerprint": "fp_batch",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                                     "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": usage}
    return {"id": f"cmpl-{rid}", "object": "text_completion", "created": created,
            "model": model, "system_fingerprint": "fp_batch",
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "stop"}],
            "usage": usage}


def _error_obj(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


# -- the server ------------------------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: BatchServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type_, self.code = status, message, type_, code


class BatchServer(ServerThread):
    """See the module docstring."""

    def __init__(self, *, api_key: str | None = None,
                 progression: tuple[str, ...] = ("in_progress",), reverse_output: bool = False,
                 verbose: bool = False) -> None:
        self.api_key = api_key
        self.reverse_output = reverse_output
        self.progression = tuple(progression)
        self.verbose = verbose
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self.files: dict[str, dict[str, Any]] = {}
        self.file_data: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, dict[str, Any]] = {}
        self._outcomes: collections.deque[Outcome] = collections.deque()
        self._faults: dict[str, list[Any]] = {}
        self._retrieve_faults: collections.deque[int] = collections.deque()
        # counters
        self.batches_created = 0
        self.files_uploaded = 0
        self.retrieves = 0
        self.auth_failures = 0
        self.requests_per_custom_id: collections.Counter[str] = collections.Counter()
        self.bodies: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        self.uploads: list[bytes] = []
        self.http_log: list[tuple[str, str, int]] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def _make_server(self) -> _Server:
        return _Server(self)

    @property
    def port(self) -> int:
        return self.server_port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def fail(self, custom_id: str, kind: str, times: int | None = None) -> None:
        with self._lock:
            self._faults[custom_id] = [kind, times]

    def script_batches(self, *outcomes: Outcome) -> None:
        with self._lock:
            self._outcomes.extend(outcomes)

    def fail_next_retrieves(self, n: int = 1, status: int = 500) -> None:
        with self._lock:
            self._retrieve_faults.extend([status] * n)

    def duplicates(self) -> dict[str, int]:
        """custom_ids submitted in more than one batch (or twice in one)."""
        return {k: v for k, v in self.requests_per_custom_id.items() if v > 1}

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    # -- files -------------------------------------------------------------------------------
    def _store_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        fid = self._new_id("file")
        obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed",
               "status_details": None, "expires_at": None}
        self.files[fid] = obj
        self.file_data[fid] = data
        return obj

    def upload(self, fields: dict[str, Any], file: tuple[str, bytes] | None) -> dict[str, Any]:
        purpose = fields.get("purpose")
        if file is None:
            raise _HTTPError(400, "Missing required parameter: 'file'.", code="missing_required")
        if purpose != "batch":
            raise _HTTPError(400, f"Invalid purpose {purpose!r} (this emulator takes 'batch').",
                             code="invalid_purpose")
        with self._lock:
            self.files_uploaded += 1
            self.uploads.append(file[1])
            return self._store_file(file[1], file[0], "batch")

    # -- batches -----------------------------------------------------------------------------
    def create_batch(self, req: dict[str, Any]) -> dict[str, Any]:
        for key in ("input_file_id", "endpoint", "completion_window"):
            if not req.get(key):
                raise _HTTPError(400, f"Missing required parameter: '{key}'.", code=None)
        if req["endpoint"] not in ENDPOINTS:
            raise _HTTPError(400, f"Invalid endpoint {req['endpoint']!r}.", code="invalid_value")
        if req["completion_window"] != "24h":
            raise _HTTPError(400, "completion_window must be '24h'.", code="invalid_value")
        meta = req.get("metadata") or {}
        if len(meta) > 16 or any(not isinstance(v, str) or len(v) > 512 or len(k) > 64
                                 for k, v in meta.items()):
            raise _HTTPError(400, "Invalid metadata.", code="invalid_value")
        with self._lock:
            fobj = self.files.get(req["input_file_id"])
            if fobj is None:
                raise _HTTPError(404, f"No such File object: {req['input_file_id']}",
                                 code="not_found")
            if fobj["purpose"] != "batch":
                raise _HTTPError(400, "The input file must have purpose 'batch'.")
            lines, errors = self._validate(self.file_data[fobj["id"]], req["endpoint"])
            bid = self._new_id("batch")
            now = int(time.time())
            batch = {"id": bid, "object": "batch", "endpoint": req["endpoint"],
                     "errors": None, "input_file_id": fobj["id"],
                     "completion_window": "24h", "status": "validating",
                     "output_file_id": None, "error_file_id": None, "created_at": now,
                     "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
                     "completed_at": None, "failed_at": None, "expired_at": None,
                     "cancelling_at": None, "cancelled_at": None,
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                     "metadata": dict(meta)}
            self.batches[bid] = batch
            self.batches_created += 1
            outcome = self._outcomes.popleft() if self._outcomes else Outcome()
            if errors:
                outcome = Outcome("failed", error_code="invalid_input_file",
                                  error_message="; ".join(errors[:5]))
                batch["request_counts"]["total"] = 0
            else:
                for line in lines:
                    self.requests_per_custom_id[line["custom_id"]] += 1
                    self.bodies[line["custom_id"]].append(line["body"])
            self._plans[bid] = {"lines": lines, "outcome": outcome, "polls": 0}
            return dict(batch)

    @staticmethod
    def _validate(data: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[str]]:
        lines: list[dict[str, Any]] = []
        errors: list[str] = []
        seen: set[str] = set()
        for n, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                errors.append(f"line {n}: not valid JSON")
                continue
            cid = obj.get("custom_id") if isinstance(obj, dict) else None
            if not isinstance(cid, str) or not cid:
                errors.append(f"line {n}: missing custom_id")
            elif cid in seen:
                errors.append(f"line {n}: duplicate custom_id {cid}")
            elif obj.get("method") != "POST":
                errors.append(f"line {n}: method must be POST")
            elif obj.get("url") != endpoint:
                errors.append(f"line {n}: url {obj.get('url')!r} differs from the batch "
                              f"endpoint {endpoint!r}")
            elif not isinstance(obj.get("body"), dict) or not obj["body"].get("model"):
                errors.append(f"line {n}: body must be an object with a model")
            else:
                seen.add(cid)
                lines.append(obj)
        if not lines and not errors:
            errors.append("the input file has no requests")
        return lines, errors

    def retrieve_batch(self, bid: str) -> dict[str, Any]:
        with self._lock:
            if self._retrieve_faults:
                status = self._retrieve_faults.popleft()
                raise _HTTPError(status, "The server had an error (scripted).",
                                 type_="server_error" if status >= 500 else "requests",
                                 code="rate_limit_exceeded" if status == 429 else None)
            batch = self.batches.get(bid)
            if batch is None:
                raise _HTTPError(404, f"No batch found with id '{bid}'.", code="not_found")
            self.retrieves += 1
            plan = self._plans[bid]
            if batch["status"] not in TERMINAL:
                plan["polls"] += 1
                k = plan["polls"]
                progression = plan["outcome"].progression
                if progression is None:
                    progression = self.progression
                if plan["outcome"].status == "failed" or batch["status"] == "cancelling" \
                        or k > len(progression):
                    self._end(bid)  # a failed batch fails at validation, like OpenAI's
                else:
                    status = progression[k - 1]
                    batch["status"] = status
                    batch[f"{status}_at"] = batch.get(f"{status}_at") or int(time.time())
            return dict(batch)

    def cancel_batch(self, bid: str) -> dict[str, Any]:
        with self._lock:
            batch = self.batches.get(bid)
            if batch is None:
                raise _HTTPError(404, f"No batch found with id '{bid}'.", code="not_found")
            if batch["status"] not in TERMINAL:
                plan = self._plans[bid]
                plan["outcome"] = Outcome("cancelled", answered=0)
                batch["status"] = "cancelling"
                batch["cancelling_at"] = int(time.time())
            return dict(batch)

    def _fault_for(self, cid: str) -> str | None:
        entry = self._faults.get(cid)
        if entry is None:
            return None
        kind, times = entry
        if times is not None:
            if times <= 0:
                return None
            entry[1] = times - 1
        return kind

    def _end(self, bid: str) -> None:
        """Process a batch's requests as scripted and end it."""
        batch = self.batches[bid]
        plan = self._plans[bid]
        outcome: Outcome = plan["outcome"]
        lines: list[dict[str, Any]] = plan["lines"]
        now = int(time.time())
        if outcome.status == "failed":
            batch.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                {"code": outcome.error_code, "message": outcome.error_message, "param": None,
                 "line": None}]})
            return
        n = len(lines) if outcome.status == "completed" else min(outcome.answered, len(lines))
        out_lines: list[dict[str, Any]] = []
        err_lines: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            cid, body = line["custom_id"], line["body"]
            rid = f"batch_req_{bid}_{i}"
            if i >= n:
                if outcome.error_lines:
                    code = "batch_expired" if outcome.status == "expired" else "batch_cancelled"
                    err_lines.append({"id": rid, "custom_id": cid, "response": None,
                                      "error": {"code": code, "message": (
                                          "This request could not be executed before the "
                                          "completion window expired." if code ==
                                          "batch_expired" else "The batch was cancelled.")}})
                continue
            kind = self._fault_for(cid)
            if kind == "drop":
                continue
            if kind == "expired_line":
                err_lines.append({"id": rid, "custom_id": cid, "response": None,
                                  "error": {"code": "batch_expired",
                                            "message": "This request could not be executed "
                                                       "before the completion window expired."}})
                continue
            if kind is None or kind == "malformed":
                rbody = response_body(line["url"], body)
                if kind == "malformed":
                    rbody.pop("choices")
                out_lines.append({"id": rid, "custom_id": cid, "response": {
                    "status_code": 200, "request_id": f"req_{i}", "body": rbody}, "error": None})
                continue
            status, err = {
                "429": (429, _error_obj("Rate limit reached for requests (scripted).",
                                        "requests", "rate_limit_exceeded")),
                "500": (500, _error_obj("The server had an error while processing your "
                                        "request (scripted).", "server_error", None)),
                "context": (400, _error_obj(
                    "This model's maximum context length is 128 tokens. However, your "
                    "messages resulted in 4096 tokens. Please reduce the length of the "
                    "messages.", "invalid_request_error", "context_length_exceeded",
                    "messages")),
                "content_filter": (400, _error_obj("The response was filtered due to the "
                                                   "prompt triggering content management "
                                                   "policy.", "invalid_request_error",
                                                   "content_filter", "prompt")),
                "400": (400, _error_obj("Invalid value for 'temperature' (scripted).",
                                        "invalid_request_error", "invalid_value",
                                        "temperature")),
            }[kind]
            err_lines.append({"id": rid, "custom_id": cid, "response": {
                "status_code": status, "request_id": f"req_{i}", "body": err}, "error": None})
        if self.reverse_output:  # the service does not promise input order
            out_lines.reverse()
            err_lines.reverse()
        if out_lines:
            data = "".join(json.dumps(x) + "\n" for x in out_lines).encode()
            batch["output_file_id"] = self._store_file(data, "batch_output.jsonl",
                                                       "batch_output")["id"]
        if err_lines:
            data = "".join(json.dumps(x) + "\n" for x in err_lines).encode()
            batch["error_file_id"] = self._store_file(data, "batch_errors.jsonl",
                                                      "batch_output")["id"]
        ok = sum(1 for x in out_lines if "choices" in x["response"]["body"])
        batch["request_counts"] = {"total": len(lines), "completed": ok,
                                   "failed": len(err_lines) + len(out_lines) - ok}
        batch["status"] = outcome.status
        batch["finalizing_at"] = batch.get("finalizing_at") or now
        batch[f"{outcome.status}_at"] = now


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # no Nagle / delayed-ACK stalls
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.owner.verbose:
            super().log_message(format, *args)

    # -- plumbing ----------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        # logged before the answer leaves: a client that has read it finds it in the log
        self.server.owner.http_log.append((self.command, self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def _authorized(self) -> bool:
        owner = self.server.owner
        if owner.api_key is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {owner.api_key}":
            return True
        with owner._lock:
            owner.auth_failures += 1
        # like OpenAI, the message does not repeat the key
        self._json(401, _error_obj("Incorrect API key provided.", "invalid_request_error",
                                   "invalid_api_key"))
        return False

    def _dispatch(self, method: str) -> None:
        body = self._read_body()
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        parts = path.strip("/").split("/")
        owner = self.server.owner
        try:
            if parts[:1] != ["v1"]:
                raise _HTTPError(404, f"Unknown path {path}", code="unknown_url")
            rest = parts[1:]
            if method == "POST" and rest == ["files"]:
                fields, file = parse_multipart(self.headers.get("Content-Type") or "", body)
                self._json(200, owner.upload(fields, file))
            elif method == "GET" and len(rest) == 2 and rest[0] == "files":
                with owner._lock:
                    obj = owner.files.get(rest[1])
                if obj is None:
                    raise _HTTPError(404, f"No such File object: {rest[1]}", code="not_found")
                self._json(200, obj)
            elif method == "GET" and len(rest) == 3 and rest[0] == "files" and \
                    rest[2] == "content":
                with owner._lock:
                    data = owner.file_data.get(rest[1])
                if data is None:
                    raise _HTTPError(404, f"No such File object: {rest[1]}", code="not_found")
                self._send(200, data, "application/octet-stream")
            elif method == "POST" and rest == ["batches"]:
                try:
                    req = json.loads(body or b"{}")
                except ValueError:
                    raise _HTTPError(400, "The body is not valid JSON.") from None
                self._json(200, owner.create_batch(req))
            elif method == "GET" and len(rest) == 2 and rest[0] == "batches":
                self._json(200, owner.retrieve_batch(rest[1]))
            elif method == "POST" and len(rest) == 3 and rest[0] == "batches" and \
                    rest[2] == "cancel":
                self._json(200, owner.cancel_batch(rest[1]))
            else:
                raise _HTTPError(404, f"Unknown request {method} {path}", code="unknown_url")
        except _HTTPError as exc:
            self._json(exc.status, _error_obj(exc.message, exc.type_, exc.code))
        except Exception as exc:  # an emulator bug: answer it rather than drop the connection
            self._json(500, _error_obj(f"emulator error: {type(exc).__name__}: {exc}",
                                       "server_error", None))

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


def parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str],
                                                            tuple[str, bytes] | None]:
    """(form fields, (filename, bytes) of the ``file`` part) of a multipart/form-data body,
    parsed with the stdlib email parser (binary-safe)."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in \
            content_type:
        raise _HTTPError(400, "Expected a multipart/form-data body.")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    msg = BytesParser(policy=policy.HTTP).parsebytes(head + body)
    if not msg.is_multipart():
        raise _HTTPError(400, "Could not parse the multipart body.")
    fields: dict[str, str] = {}
    file: tuple[str, bytes] | None = None
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if name == "file" and filename is not None:
            file = (filename, payload)
        elif name:
            fields[str(name)] = payload.decode("utf-8")
    return fields, file


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--api-key")
    args = ap.parse_args()
    with BatchServer(api_key=args.api_key, verbose=True) as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
