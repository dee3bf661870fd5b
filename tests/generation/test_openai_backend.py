"""The OpenAI backend against a real HTTP server (tests/servers/fault_server.py; no mocks)."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import ssl
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
import trustme

from copyprobe.generation.base import BACKENDS, BackendError, Decoding, backend_facts
from copyprobe.generation.openai_api import OpenAIBackend
from copyprobe.generation.openai_protocol import (
    DEFAULT_BASE_URL,
    map_status_error,
    normalize_base_url,
    parse_retry_after,
    prepare_messages,
    redact,
)
from copyprobe.prompt import Prompt

KEY_ENV = "COPYPROBE_TEST_OPENAI_KEY"
KEY = "sk-test-Zq8yLm3Pw7Rt2Vx9Nb4Kc6Hd1Fg5Js0Ae"

CHAT = Prompt("chat", messages=(
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "It was the best of times,"},
    {"role": "assistant", "content": "it was the worst of times,"},
    {"role": "user", "content": "it was the age of wisdom,"},
))
COMPLETION = Prompt("completion", text="Call me Ishmael. Some years ago")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make_backend(srv: Any, **spec: Any) -> OpenAIBackend:
    base = {"backend": "openai", "model_id": "fault-model", "base_url": srv.base_url,
            "api_key_env": KEY_ENV, "request_timeout": 5}
    return OpenAIBackend.from_config({**base, **spec}, None)


@pytest.fixture
def backend(fault_server: Any):
    b = make_backend(fault_server)
    yield b
    b.close()


def run_async(backend: OpenAIBackend, prompt: Prompt, decoding: Decoding, idx: int = 0):
    async def main():
        try:
            return await backend.agenerate(prompt, decoding, idx)
        finally:
            await backend.aclose()

    return asyncio.run(main())


def call(mode: str, backend: OpenAIBackend, prompt: Prompt, decoding: Decoding, idx: int = 0):
    if mode == "sync":
        return backend.generate(prompt, decoding, idx)
    return run_async(backend, prompt, decoding, idx)


def assert_no_key(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    assert KEY not in text
    assert exc.__cause__ is None
    assert exc.__context__ is None


# -- registry, identity ------------------------------------------------------------------------
def test_registered() -> None:
    assert BACKENDS.get("openai") is OpenAIBackend
    assert OpenAIBackend.supports_async is True
    assert backend_facts("openai") == {"remote": True, "needs_model_file": False, "gpu": False,
                                       "api_key_env": "OPENAI_API_KEY", "key_optional": True,
                                       "price_factor": 1.0}
    assert backend_facts("openai_batch")["price_factor"] == 0.5  # the Batch API bills half


def test_identity_has_no_key_and_strips_url() -> None:
    spec = {"model_id": "gpt-4o-mini-2024-07-18", "api_key_env": KEY_ENV,
            "base_url": f"https://user:{KEY}@Example.COM:8443/v1/?key={KEY}#frag",
            "revision": "snap-1"}
    ident = OpenAIBackend.identity_from_config(spec, None)
    assert ident == {"model_id": "gpt-4o-mini-2024-07-18",
                     "base_url": "https://example.com:8443/v1",
                     "revision": "snap-1", "openai": "3.63.0"}
    assert KEY not in json.dumps(ident)
    default = OpenAIBackend.identity_from_config({"model_id": "m"}, None)
    assert default["base_url"] == DEFAULT_BASE_URL and default["revision"] == ""
    assert normalize_base_url("https://api.openai.com/v1/") == DEFAULT_BASE_URL
    with pytest.raises(BackendError) as ei:
        OpenAIBackend.identity_from_config({}, None)
    assert ei.value.permanent


def test_official_url_is_explicit_even_with_openai_base_url_env(
        monkeypatch: pytest.MonkeyPatch, fault_server: Any) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.base_url)
    b = OpenAIBackend.from_config({"model_id": "m", "api_key_env": KEY_ENV}, None)
    try:
        assert str(b._sync_client().base_url).rstrip("/") == DEFAULT_BASE_URL
    finally:
        b.close()


def test_missing_key_is_permanent_and_names_the_variable(
        monkeypatch: pytest.MonkeyPatch, fault_server: Any) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BackendError) as ei:
        make_backend(fault_server)
    assert ei.value.permanent and ei.value.error_class == "AuthError"
    assert KEY_ENV in str(ei.value)
    assert fault_server.total_requests == 0


def test_optional_key_sends_placeholder(monkeypatch: pytest.MonkeyPatch,
                                        fault_server: Any) -> None:
    monkeypatch.delenv(KEY_ENV)
    b = make_backend(fault_server, api_key_optional=True)
    try:
        assert b.generate(COMPLETION, Decoding()).text.startswith("echo: ")
    finally:
        b.close()
    assert fault_server.last.api_key == "not-needed"


def test_config_errors(fault_server: Any) -> None:
    for bad in ({"model_id": ""}, {"endpoint": "responses"}, {"request_timeout": 0},
                {"max_tokens_param": "n"}):
        with pytest.raises(BackendError) as ei:
            make_backend(fault_server, **bad)
        assert ei.value.permanent and ei.value.error_class == "ConfigError"


def test_credentials_in_base_url_are_refused(fault_server: Any) -> None:
    url = fault_server.base_url.replace("http://", "http://user:hunter2@")
    with pytest.raises(BackendError) as ei:
        make_backend(fault_server, base_url=url)
    assert ei.value.permanent and ei.value.error_class == "ConfigError"
    assert "hunter2" not in str(ei.value) and "api_key_env" in str(ei.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_proxy_from_the_environment(mode: str, monkeypatch: pytest.MonkeyPatch,
                                    fault_server: Any, fault_server_module: Any) -> None:
    # the target has nothing listening: only a request through the proxy gets an answer
    dead = fault_server_module.FaultServer().start()
    target = dead.base_url
    dead.stop()
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fault_server.url)
    b = make_backend(fault_server, base_url=target)
    try:
        assert call(mode, b, CHAT, Decoding()).text.startswith("echo: ")
    finally:
        b.close()
    assert fault_server.last.target == target + "/chat/completions"
    assert fault_server.last.api_key == KEY  # the key still travels to the API, as a header

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: straight to the dead port
    b = make_backend(fault_server, base_url=target)
    try:
        with pytest.raises(BackendError) as ei:
            call(mode, b, CHAT, Decoding())
    finally:
        b.close()
    assert ei.value.error_class == "ConnectionError" and not ei.value.permanent
    assert fault_server.total_requests == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_tls_is_verified_against_the_same_trust_store_on_both_paths(
        mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        fault_server_module: Any) -> None:
    ca = trustme.CA()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with fault_server_module.FaultServer(tls=server_ctx) as srv:
        assert srv.base_url.startswith("https://")
        # a private CA the client does not know: a permanent TLSError naming the fix
        b = make_backend(srv)
        try:
            with pytest.raises(BackendError) as ei:
                call(mode, b, CHAT, Decoding())
        finally:
            b.close()
        assert ei.value.error_class == "TLSError" and ei.value.permanent
        assert "SSL_CERT_FILE" in str(ei.value) and "certificate" in str(ei.value)
        assert_no_key(ei.value)
        assert srv.total_requests == 0  # nothing was sent over an unverified connection
        # trusted through SSL_CERT_FILE, which the SDK's transport reads too
        bundle = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(bundle))
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        b = make_backend(srv)
        try:
            assert call(mode, b, CHAT, Decoding()).text.startswith("echo: ")
        finally:
            b.close()
        assert srv.last.api_key == KEY


# -- normal answers ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_chat_mapping(mode: str, fault_server: Any, fault_server_module: Any,
                      backend: OpenAIBackend) -> None:
    dec = Decoding(temperature=0.7, top_p=0.9, max_tokens=50, seed=11)
    out = call(mode, backend, CHAT, dec, 2)
    assert out.text == "echo: " + "it was the age of wisdom,"[::-1]
    rec = fault_server.last
    assert out.text == fault_server_module.answer_text(rec.path, rec.body)
    assert out.finish_reason == "stop"
    chars = sum(len(m["content"]) for m in CHAT.messages)
    assert out.prompt_tokens == -(-chars // 4)
    assert out.completion_tokens == len(out.text.split())
    assert rec.path == "/v1/chat/completions"
    body = rec.body
    assert body["model"] == "fault-model"
    assert body["messages"] == [dict(m) for m in CHAT.messages]
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.7, 0.9, 50)
    assert body["seed"] == 13  # seed + sample_index
    assert "top_k" not in body and "repeat_penalty" not in body
    assert "max_completion_tokens" not in body
    assert fault_server.total_requests == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_completion_mapping(mode: str, fault_server: Any, backend: OpenAIBackend) -> None:
    out = call(mode, backend, COMPLETION, Decoding(max_tokens=20))
    assert out.text == "echo: " + COMPLETION.text[::-1]
    assert out.finish_reason == "stop"
    assert out.prompt_tokens == -(-len(COMPLETION.text) // 4)
    rec = fault_server.last
    assert rec.path == "/v1/completions"
    assert rec.body["prompt"] == COMPLETION.text and rec.body["max_tokens"] == 20
    assert "messages" not in rec.body


def test_non_openai_params_go_in_extra_body_only_when_set(fault_server: Any,
                                                           backend: OpenAIBackend) -> None:
    backend.generate(CHAT, Decoding(top_k=40, repeat_penalty=1.1))
    assert fault_server.last.body["top_k"] == 40
    assert fault_server.last.body["repeat_penalty"] == 1.1
    backend.generate(CHAT, Decoding(top_k=0, repeat_penalty=1.0))
    assert "top_k" not in fault_server.last.body
    assert "repeat_penalty" not in fault_server.last.body


def test_max_completion_tokens_param(fault_server: Any) -> None:
    b = make_backend(fault_server, max_tokens_param="max_completion_tokens")
    try:
        b.generate(CHAT, Decoding(max_tokens=33))
        assert fault_server.last.body["max_completion_tokens"] == 33
        assert "max_tokens" not in fault_server.last.body
        b.generate(COMPLETION, Decoding(max_tokens=33))  # legacy endpoint: max_tokens
        assert fault_server.last.body["max_tokens"] == 33
    finally:
        b.close()


def test_pinned_endpoint_rejects_other_format(fault_server: Any) -> None:
    b = make_backend(fault_server, endpoint="chat")
    try:
        with pytest.raises(BackendError) as ei:
            b.generate(COMPLETION, Decoding())
        assert ei.value.permanent and ei.value.error_class == "ConfigError"
        assert fault_server.total_requests == 0
        assert b.generate(CHAT, Decoding()).text
    finally:
        b.close()


def test_key_is_sent_as_bearer_and_never_shown(fault_server: Any,
                                               backend: OpenAIBackend) -> None:
    backend.generate(CHAT, Decoding())
    rec = fault_server.last
    assert rec.has_authorization and rec.api_key == KEY
    assert all(k.lower() != "authorization" for k in rec.headers)
    assert KEY not in repr(backend)
    assert KEY not in json.dumps(OpenAIBackend.identity_from_config(
        {"model_id": "m", "api_key_env": KEY_ENV}, None))


# -- faults ------------------------------------------------------------------------------------
FAULTS: list[tuple[str, dict[str, Any], str, bool, int | None]] = [
    # kind, fault options, error_class, permanent, status_code
    ("429", {"retry_after": 7}, "RateLimitError", False, 429),
    ("quota", {}, "InsufficientQuota", True, 429),
    ("500", {}, "ServerError", False, 500),
    ("503", {"retry_after": 4}, "ServerError", False, 503),
    ("status", {"status": 502}, "ServerError", False, 502),
    ("status", {"status": 408}, "Timeout", False, 408),
    ("status", {"status": 422}, "BadRequestError", True, 422),
    ("malformed", {}, "MalformedResponse", False, 200),
    ("no_choices", {}, "MalformedResponse", False, 200),
    ("drop", {}, "ConnectionError", False, None),
    ("truncated", {}, "ConnectionError", False, None),
    ("400_context", {}, "ContextLengthError", True, 400),
    ("content_filter", {}, "ContentFilterError", True, 400),
    ("content_filter_finish", {}, "ContentFilterError", True, 200),
    ("400", {}, "BadRequestError", True, 400),
    ("401", {}, "AuthError", True, 401),
    ("403", {}, "AuthError", True, 403),
    ("404", {}, "NotFoundError", True, 404),
    ("401_echo_key", {}, "AuthError", True, 401),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("kind", "opts", "error_class", "permanent", "status"), FAULTS,
                         ids=[f"{f[0]}-{f[1].get('status', '')}" for f in FAULTS])
def test_fault_mapping(mode: str, kind: str, opts: dict[str, Any], error_class: str,
                       permanent: bool, status: int | None, fault_server: Any,
                       backend: OpenAIBackend) -> None:
    fault_server.fail_next(kind, **opts)
    with pytest.raises(BackendError) as ei:
        call(mode, backend, CHAT, Decoding())
    exc = ei.value
    assert (exc.error_class, exc.permanent, exc.status_code) == (error_class, permanent, status)
    if kind in ("429", "503"):
        assert exc.retry_after == pytest.approx(opts["retry_after"])
    elif kind not in ("status",):
        assert exc.retry_after is None
    assert_no_key(exc)
    # max_retries=0: the SDK never retries on its own; the runner owns retries
    assert fault_server.total_requests == 1
    # and the next request is fine again
    assert call(mode, backend, CHAT, Decoding()).text.startswith("echo: ")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_timeout(mode: str, fault_server: Any) -> None:
    b = make_backend(fault_server, request_timeout=0.5)
    fault_server.fail_next("slow", slow_seconds=5)
    t0 = time.perf_counter()
    with pytest.raises(BackendError) as ei:
        call(mode, b, CHAT, Decoding())
    b.close()
    assert time.perf_counter() - t0 < 3
    assert ei.value.error_class == "Timeout" and not ei.value.permanent
    assert_no_key(ei.value)
    assert fault_server.total_requests == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_connection_refused(mode: str, fault_server_module: Any) -> None:
    srv = fault_server_module.FaultServer().start()
    url = srv.base_url
    srv.stop()  # nothing listens on that port now
    b = OpenAIBackend.from_config({"model_id": "m", "base_url": url, "api_key_env": KEY_ENV,
                                   "request_timeout": 2}, None)
    with pytest.raises(BackendError) as ei:
        call(mode, b, CHAT, Decoding())
    b.close()
    assert ei.value.error_class == "ConnectionError" and not ei.value.permanent
    # the message names the endpoint and the cause, and says no connection was made
    assert str(ei.value).startswith(f"m at {url}/chat/completions: cannot connect: "
                                    "connection refused (")
    assert ei.value.unreachable
    assert_no_key(ei.value)


def test_rate_limit_retry_after_variants(fault_server: Any, backend: OpenAIBackend) -> None:
    fault_server.fail_next("429", retry_after_ms=1500)
    with pytest.raises(BackendError) as ei:
        backend.generate(CHAT, Decoding())
    assert ei.value.retry_after == pytest.approx(1.5)
    fault_server.fail_next("429", retry_after=30, retry_after_date=True)
    with pytest.raises(BackendError) as ei:
        backend.generate(CHAT, Decoding())
    assert 27 <= ei.value.retry_after <= 31
    fault_server.fail_next("429", retry_after=None)
    with pytest.raises(BackendError) as ei:
        backend.generate(CHAT, Decoding())
    assert ei.value.error_class == "RateLimitError" and ei.value.retry_after is None


def test_echoed_key_is_redacted(fault_server: Any, backend: OpenAIBackend) -> None:
    fault_server.fail_next("401_echo_key")
    with pytest.raises(BackendError) as ei:
        backend.generate(CHAT, Decoding())
    assert "***" in str(ei.value)
    assert_no_key(ei.value)


# -- images ------------------------------------------------------------------------------------
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
    "rkJggg==")


def image_prompt(url: str) -> Prompt:
    return Prompt("chat", messages=(
        {"role": "user", "content": [
            {"type": "text", "text": "Transcribe this page."},
            {"type": "image_url", "image_url": {"url": url, "detail": "high"}},
        ]},
    ))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_file_images_become_data_urls(mode: str, tmp_path: Path, fault_server: Any,
                                      backend: OpenAIBackend) -> None:
    png = tmp_path / "page 1.png"
    png.write_bytes(PNG)
    jpg = tmp_path / "page2.jpg"
    jpg.write_bytes(b"\xff\xd8\xff\xe0fake-jpeg")
    noext = tmp_path / "page3"
    noext.write_bytes(PNG)
    prompt = Prompt("chat", messages=(
        {"role": "user", "content": [
            {"type": "text", "text": "Transcribe these pages."},
            {"type": "image_url", "image_url": {"url": png.as_uri(), "detail": "high"}},
            {"type": "image_url", "image_url": {"url": jpg.as_uri()}},
            {"type": "image_url", "image_url": {"url": noext.as_uri()}},
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGODlh"}},
        ]},
    ))
    before = json.dumps([dict(m) for m in prompt.messages])
    out = call(mode, backend, prompt, Decoding())
    assert out.text == "echo: " + "Transcribe these pages."[::-1]
    parts = fault_server.last.body["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "Transcribe these pages."}
    url1 = parts[1]["image_url"]["url"]
    assert url1.startswith("data:image/png;base64,")
    assert base64.b64decode(url1.split(",", 1)[1]) == PNG
    assert parts[1]["image_url"]["detail"] == "high"
    assert parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert parts[3]["image_url"]["url"].startswith("data:image/png;base64,")  # sniffed
    assert parts[4]["image_url"]["url"] == "data:image/gif;base64,R0lGODlh"
    assert json.dumps([dict(m) for m in prompt.messages]) == before  # prompt untouched


def test_missing_image_is_permanent_and_sends_nothing(tmp_path: Path, fault_server: Any,
                                                      backend: OpenAIBackend) -> None:
    with pytest.raises(BackendError) as ei:
        backend.generate(image_prompt((tmp_path / "nope.png").as_uri()), Decoding())
    assert ei.value.permanent and ei.value.error_class == "ImageError"
    assert fault_server.total_requests == 0


def test_prepare_messages_keeps_plain_strings() -> None:
    assert prepare_messages(CHAT) == [dict(m) for m in CHAT.messages]


# -- async -------------------------------------------------------------------------------------
def test_async_requests_run_concurrently(fault_server: Any, backend: OpenAIBackend) -> None:
    fault_server.latency = 0.2
    prompts = [Prompt("chat", messages=({"role": "user", "content": f"prompt number {i}"},))
               for i in range(20)]

    async def main():
        try:
            return await asyncio.gather(*(backend.agenerate(p, Decoding()) for p in prompts))
        finally:
            await backend.aclose()

    t0 = time.perf_counter()
    outs = asyncio.run(main())
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0, elapsed  # serial would be >= 4 s
    assert [o.text for o in outs] == ["echo: " + f"prompt number {i}"[::-1] for i in range(20)]
    assert fault_server.total_requests == 20
    assert fault_server.duplicates() == {}
    assert sum(fault_server.served_by_hash.values()) == 20


def test_async_client_survives_a_new_event_loop(fault_server: Any,
                                                backend: OpenAIBackend) -> None:
    a = asyncio.run(backend.agenerate(CHAT, Decoding()))  # no aclose: loop ends
    b = run_async(backend, CHAT, Decoding())
    assert a.text == b.text
    assert fault_server.total_requests == 2


# -- pure helpers ------------------------------------------------------------------------------
def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 20, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(20)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 50, usegmt=True)},
                             now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_map_status_error_wording() -> None:
    vllm = {"object": "error", "message": "This model's maximum context length is 2048 tokens. "
            "However, you requested 2100 tokens.", "type": "BadRequestError", "code": 400}
    assert map_status_error(400, vllm).error_class == "ContextLengthError"
    llama = {"error": {"code": 400, "message": "the request exceeds the available context size, "
                       "try increasing it", "type": "exceed_context_size_error"}}
    assert map_status_error(400, llama).error_class == "ContextLengthError"
    tpm = {"message": "Request too large for gpt-4 in organization org-x on tokens per min "
           "(TPM): Limit 10000, Requested 15000.", "type": "tokens", "code": "rate_limit_exceeded"}
    assert map_status_error(429, tpm).error_class == "RequestTooLarge"
    assert map_status_error(429, tpm).permanent
    assert map_status_error(502, "<html>Bad gateway</html>").error_class == "ServerError"
    assert map_status_error(400, {"message": "bad"}).error_class == "BadRequestError"


def test_redact() -> None:
    assert redact(f"key {KEY} here", KEY) == "key *** here"
    assert "sk-other123456" not in redact("Incorrect API key provided: sk-other123456")
    assert "abc.def" not in redact("Authorization: Bearer abc.def")


def test_parse_edge_cases(backend: OpenAIBackend) -> None:
    def body(message: dict[str, Any], finish: str | None = "stop", usage: Any = None) -> bytes:
        obj: dict[str, Any] = {"choices": [{"index": 0, "message": message,
                                            "finish_reason": finish}]}
        if usage is not None:
            obj["usage"] = usage
        return json.dumps(obj).encode()

    out = backend._parse("chat", 200, body({"role": "assistant", "content": None,
                                             "refusal": "I can't help with that."}))
    assert out.text == "I can't help with that." and out.prompt_tokens is None
    out = backend._parse("chat", 200, body({"role": "assistant", "content": None}, "length"))
    assert out.text == "" and out.finish_reason == "length"
    with pytest.raises(BackendError) as ei:
        backend._parse("chat", 200, body({"role": "assistant", "content": None}, None))
    assert ei.value.error_class == "MalformedResponse"
    with pytest.raises(BackendError) as ei:
        backend._parse("chat", 200, b'{"choices": []}')
    assert ei.value.error_class == "MalformedResponse" and not ei.value.permanent
    err = json.dumps({"error": {"message": "maximum context length exceeded",
                                "code": "context_length_exceeded"}}).encode()
    with pytest.raises(BackendError) as ei:
        backend._parse("chat", 200, err)
    assert ei.value.error_class == "ContextLengthError" and ei.value.permanent
    out = backend._parse("completions", 200, json.dumps(
        {"choices": [{"text": "abc", "finish_reason": "length"}],
         "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode())
    assert (out.text, out.prompt_tokens, out.completion_tokens, out.finish_reason) == (
        "abc", 3, 1, "length")


# -- cache keys --------------------------------------------------------------------------------
#: The key of one openai request, computed before the synchronous path left the openai SDK for
#: httpx2, with openai 3.63.0 in the identity.
OPENAI_KEY_BEFORE = "f0a39e55b7f31dda1cb24128cfe003b9850a0ccba538cb496e8b402d15bffbb1"


def test_an_answer_cached_before_the_http_stack_changed_is_still_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from copyprobe.generation.cache import GenerationCache, cache_key
    from copyprobe.generation.limits import RetryPolicy
    from copyprobe.generation.runner import (
        RunSettings,
        backend_identity,
        build_backend,
        run_generation,
    )

    spec = {"name": "api", "backend": "openai", "model_id": "m", "revision": "r1",
            "base_url": "http://127.0.0.1:9/v1", "api_key_optional": True}  # nothing listens
    identity = backend_identity(spec, None)
    assert identity == {"model_id": "m", "base_url": "http://127.0.0.1:9/v1", "revision": "r1",
                        "openai": "3.63.0"}
    prompt = Prompt("chat", messages=({"role": "user", "content": "It was the best of times,"},))
    decoding = Decoding(max_tokens=32, seed=7)
    pinned = {**identity, "openai": "3.63.0"}
    assert cache_key(backend="openai", identity=pinned, decoding=decoding, prompt=prompt,
                     sample_index=1) == OPENAI_KEY_BEFORE
    # an answer stored under the key main wrote is served without asking the server
    key = cache_key(backend="openai", identity=identity, decoding=decoding, prompt=prompt,
                    sample_index=1)
    cache = GenerationCache(tmp_path / "cache")
    cache.put(key, {"text": "it was the worst of times", "prompt_tokens": 7,
                    "completion_tokens": 6, "finish_reason": "stop", "latency_s": 0.5,
                    "created_at": "2026-12-01T00:00:00+00:00"})
    prompts = pd.DataFrame([{"request_id": "r0", "status": "ready", "prompt": prompt.to_json()}])
    out, summary = run_generation(
        prompts, model="api", backend_name="openai", identity=identity,
        backend_factory=lambda: build_backend(spec, None), decoding=decoding, cache=cache,
        settings=RunSettings(samples=2, retry=RetryPolicy(max_attempts=1)))
    served = out[out["sample_index"] == 1].iloc[0]
    assert served["from_cache"] and served["text"] == "it was the worst of times"
    assert summary.cache_hits == 1
    assert out[out["sample_index"] == 0].iloc[0]["status"] == "failed"  # not cached: sent


#: Keys computed by the code before every model-server call moved to one aiohttp stack (the
#: openai SDK 3.63.0 installed; ``backend_identity`` and ``cache_key`` of that code), for the
#: spec, decoding and prompts of the test below: (format, sample_index) -> key.
KEYS_BEFORE_ONE_STACK = {
    ("chat", 0): "229cd106676285fd2b74767fa0923bdb1467e710aa97d82529b1c4fcd4c109b3",
    ("chat", 1): "48a24e93fd7132bacdddc048e37e64cdedd1c794dfa0e5e46d226d5d714b2d45",
    ("completion", 0): "208639e9ef0a19c0207bf58271a7cb4331db91115d0199928487b0468e5cdf90",
    ("completion", 1): "62ef4298e4d92e9cadf2ebd1c9151b6c01184ed32fc2689c647441a1ba35cb25",
}


@pytest.mark.parametrize("max_concurrency", [1, 4])
def test_answers_cached_before_the_one_http_stack_are_served_without_a_request(
        tmp_path: Path, fault_server: Any, max_concurrency: int) -> None:
    """Entries stored under the keys the earlier code wrote are served, and the server (live,
    so a request would be answered) receives nothing; the identity of openai_batch is the
    same, so its answers stay shared."""
    import pandas as pd

    from copyprobe.generation.cache import GenerationCache, cache_key
    from copyprobe.generation.runner import (
        RunSettings,
        backend_identity,
        build_backend,
        run_generation,
    )

    spec = {"name": "api", "backend": "openai", "model_id": "fault-model", "revision": "2026-12",
            "base_url": "http://127.0.0.1:8123/v1", "api_key_optional": True,
            "echo_logprobs": True}
    identity = backend_identity(spec, None)
    assert identity == backend_identity({**spec, "backend": "openai_batch"}, None)
    decoding = Decoding(max_tokens=24, seed=3, temperature=0.7, top_p=0.9)
    prompts = {"chat": Prompt("chat", messages=({"role": "system", "content": "Continue."},
                                                {"role": "user", "content": "Call me Ishmael."})),
               "completion": Prompt("completion", text="It was a bright cold day in April,")}
    cache = GenerationCache(tmp_path / "cache")
    for (fmt, i), key in KEYS_BEFORE_ONE_STACK.items():
        assert cache_key(backend="openai", identity=identity, decoding=decoding,
                         prompt=prompts[fmt], sample_index=i) == key
        cache.put(key, {"text": f"cached {fmt} {i}", "prompt_tokens": 5,
                        "completion_tokens": 3, "finish_reason": "stop", "latency_s": 0.1,
                        "created_at": "2026-12-01T00:00:00+00:00"})
    table = pd.DataFrame([{"request_id": fmt, "status": "ready", "prompt": p.to_json()}
                          for fmt, p in prompts.items()])
    live = {**spec, "base_url": fault_server.base_url}  # same identity as cached, live server
    out, summary = run_generation(
        table, model="api", backend_name="openai", identity=identity,
        backend_factory=lambda: build_backend(live, None), decoding=decoding, cache=cache,
        settings=RunSettings(samples=2, max_concurrency=max_concurrency))
    assert summary.cache_hits == 4 and fault_server.total_requests == 0
    got = {(r.request_id, r.sample_index): (r.text, bool(r.from_cache)) for r in out.itertuples()}
    assert got == {k: (f"cached {k[0]} {k[1]}", True) for k in KEYS_BEFORE_ONE_STACK}
