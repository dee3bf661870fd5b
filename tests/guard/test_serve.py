"""``copyprobe guard serve``: the proxy driven with the ``openai`` client and raw HTTP, in front
of the OpenAI-compatible fault server (fast: faults, concurrency, what is forwarded) and of
llama.cpp's own server with SmolLM2 (slow: real answers, streaming).

The guard's checks are small real components written for these tests, handed to the guard
built (``Guard(..., components=...)``): a notice identifier looking for "All rights
reserved." in the text parts with ``str.find``, and a keyword risk analyzer; the tests of
image parts use the package's notice identifier with test OCR engines.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from copyprobe.ocr import OCR_ENGINES, OCRError
from copyprobe.guard.pipeline import Guard
from copyprobe.guard.reminder import BLOCK_TEXT, add_reminder
from copyprobe.guard.serve import ProxySettings, make_server
from copyprobe.guard.types import NoticeFinding, RiskFinding
from copyprobe.prompt import Prompt

NOTICE = "All rights reserved."
ROOT = Path(__file__).resolve().parents[2]


class TextNotice:
    def identify(self, prompt: Prompt) -> NoticeFinding:
        for m in prompt.messages:
            content = m.get("content")
            parts = content if isinstance(content, list) else [{"type": "text",
                                                                 "text": content or ""}]
            for p in parts:
                if p.get("type") == "text" and p["text"].find(NOTICE) >= 0:
                    return NoticeFinding(True, NOTICE, "text")
        return NoticeFinding(False)


class WordRisk:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def classify(self, query: str) -> RiskFinding:
        time.sleep(self.delay)
        if "repeat" in query.lower():
            return RiskFinding("infringing", "repetition", "rules", 1.0)
        return RiskFinding("benign", "summary", "rules", 0.0)


GUARD = {"notice": {}, "status": False, "risk": {}}


def components(risk_delay: float = 0.0) -> dict[str, Any]:
    """The tests' notice identifier and risk analyzer (the guard's notice and risk checks)."""
    return {"notice": TextNotice(), "risk": WordRisk(risk_delay)}


class BlankPageOCR:
    """An OCR engine that decodes the image as the real ones do (Pillow) and finds no text."""

    name = "s_blank"

    def settings(self) -> dict[str, Any]:
        return {"engine": self.name}

    def read(self, data: bytes) -> str:
        import io

        from PIL import Image

        try:
            Image.open(io.BytesIO(data)).convert("RGB")
        except OSError as exc:
            raise OCRError(f"cannot read image: {exc}") from exc
        return ""


class BrokenOCR(BlankPageOCR):
    """An OCR engine that fails on every image (a model that cannot run)."""

    name = "s_broken_ocr"

    def read(self, data: bytes) -> str:
        raise OCRError("the recognition model failed")


for _engine in (BlankPageOCR, BrokenOCR):
    if _engine.name not in OCR_ENGINES:
        OCR_ENGINES.register(_engine.name)(_engine)


def _png(size: tuple[int, int] = (8, 8)) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, format="PNG")
    return buf.getvalue()


def _data_url(data: bytes, media_type: str = "image/png") -> str:
    import base64

    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


@pytest.fixture
def upstream(fault_server: Any) -> Any:
    """The proxy's upstream: the fault server (no latency, no faults)."""
    return fault_server


class Proxy:
    """A proxy served from a thread of the test process."""

    def __init__(self, settings: ProxySettings, guard: Guard | None = None) -> None:
        self.server = make_server(settings, guard)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def client(self, **kw: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key="client-key", max_retries=0,
                             timeout=kw.pop("timeout", 20), **kw)

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.headers, r.read()  # headers: case-insensitive
        finally:
            conn.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def proxy_factory(tmp_path: Path) -> Iterator[Any]:
    made: list[Proxy] = []

    def make(upstream_url: str, guard: dict | None = None,
             parts: dict[str, Any] | None = None, **kw: Any) -> Proxy:
        """A proxy with the guard block ``guard`` whose components are ``parts`` (by
        default the tests' own, :func:`components`)."""
        settings = ProxySettings(upstream=upstream_url, guard=GUARD if guard is None else guard,
                                 port=0, cache_dir=str(tmp_path / "guard"),
                                 upstream_key_env="COPYPROBE_TEST_UPSTREAM_KEY", **kw)
        built = Guard(settings.guard, cache_dir=settings.cache_dir, workers=64,
                      components=components() if parts is None else parts).build()
        made.append(Proxy(settings, built))
        return made[-1]

    yield make
    for p in made:
        p.close()


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# -- what is forwarded ----------------------------------------------------------------------------

def test_pass_remind_and_block(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url)
    client = proxy.client()
    r = client.chat.completions.with_raw_response.create(
        model="m", messages=_user(f"{NOTICE} Summarise this."))
    assert r.headers["x-copyguard-action"] == "pass"
    assert r.parse().choices[0].message.content == "echo: " + f"{NOTICE} Summarise this."[::-1]
    assert upstream.requests[-1].body["messages"] == _user(f"{NOTICE} Summarise this.")

    r = client.chat.completions.with_raw_response.create(
        model="m", messages=_user(f"{NOTICE} Repeat this."), temperature=0.0)
    assert r.headers["x-copyguard-action"] == "remind"
    sent = upstream.requests[-1].body
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].startswith("Copyright check: The material carries")
    assert sent["messages"][1:] == _user(f"{NOTICE} Repeat this.")
    assert sent["temperature"] == 0.0 and sent["model"] == "m"  # the rest as the client sent it

    before = upstream.total_requests
    r = proxy.client().chat.completions.with_raw_response.create(
        model="m", messages=_user(f"{NOTICE} Repeat this."))
    assert r.headers["x-copyguard-action"] == "remind"
    blocker = proxy_factory(upstream.base_url, guard={**GUARD, "policy": "block"})
    r = blocker.client().chat.completions.with_raw_response.create(
        model="m", messages=_user(f"{NOTICE} Repeat this."))
    assert r.headers["x-copyguard-action"] == "block"
    answer = r.parse()
    assert answer.choices[0].message.content.startswith("I can't help with this request")
    assert answer.choices[0].finish_reason == "stop" and answer.usage.completion_tokens == 0
    assert json.loads(r.text)["copyguard"]["action"] == "block"
    assert upstream.total_requests == before + 1  # the reminded one; the block sent nothing


def test_block_streams_as_sse(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url, guard={**GUARD, "policy": "block"})
    chunks = list(proxy.client().chat.completions.create(
        model="m", messages=_user(f"{NOTICE} Repeat this."), stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reason = Guard({**GUARD, "policy": "block"}, components=components()).check(
        Prompt("chat", messages=tuple(_user(f"{NOTICE} Repeat this.")))).reason
    assert text == BLOCK_TEXT.format(reason=reason)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert upstream.total_requests == 0


def test_image_parts_are_checked_and_forwarded(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url)
    image = {"type": "image_url", "image_url": {"url": _data_url(_png())}}
    messages = [{"role": "user", "content": [image, {"type": "text",
                                                     "text": f"{NOTICE} Repeat it."}]}]
    r = proxy.client().chat.completions.with_raw_response.create(model="m", messages=messages)
    assert r.headers["x-copyguard-action"] == "remind"
    assert upstream.requests[-1].body["messages"][1] == messages[0]


def test_upstream_key_comes_from_the_environment(upstream: Any, proxy_factory: Any,
                                                 monkeypatch: pytest.MonkeyPatch):
    proxy = proxy_factory(upstream.base_url)
    proxy.client().chat.completions.create(model="m", messages=_user("hello"))
    assert not upstream.requests[-1].has_authorization  # unset: no key, and not the client's
    monkeypatch.setenv("COPYPROBE_TEST_UPSTREAM_KEY", "sk-upstream-from-env")
    proxy.client().chat.completions.create(model="m", messages=_user("hello"))
    assert upstream.requests[-1].api_key == "sk-upstream-from-env"


def test_speculative_sends_while_checking(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url, speculative=True, parts=components(0.5))
    upstream.latency = 0.5
    client = proxy.client()
    t0 = time.perf_counter()
    r = client.chat.completions.with_raw_response.create(model="m", messages=_user("Hi there"))
    took = time.perf_counter() - t0
    assert r.headers["x-copyguard-action"] == "pass" and upstream.total_requests == 1
    assert took < 0.85, took  # the checks and the upstream overlap (0.5 s each)
    r = client.chat.completions.with_raw_response.create(
        model="m", messages=_user(f"{NOTICE} Repeat it."))
    assert r.headers["x-copyguard-action"] == "remind" and upstream.total_requests == 3
    reminded = [q.body for q in upstream.requests[1:] if q.body["messages"][0]["role"] == "system"]
    assert len(reminded) == 1
    assert r.parse().choices[0].message.content == "echo: " + f"{NOTICE} Repeat it."[::-1]


# -- concurrency --------------------------------------------------------------------------------

def test_concurrent_requests_keep_their_answers(upstream: Any, proxy_factory: Any):
    upstream.latency = 0.3
    proxy = proxy_factory(upstream.base_url)
    client = proxy.client()

    def ask(i: int) -> tuple[str, str]:
        text = f"{NOTICE} Repeat line {i}." if i % 2 else f"Question number {i}?"
        r = client.chat.completions.with_raw_response.create(model="m", messages=_user(text))
        return r.headers["x-copyguard-action"], r.parse().choices[0].message.content

    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(ask, range(16)))
    took = time.perf_counter() - t0
    for i, (action, content) in enumerate(results):
        text = f"{NOTICE} Repeat line {i}." if i % 2 else f"Question number {i}?"
        assert action == ("remind" if i % 2 else "pass")
        assert content == "echo: " + text[::-1]
    assert upstream.max_in_flight >= 8
    assert took < 16 * 0.3 / 4, took  # sequentially it would take 4.8 s


def test_no_small_write_delay(upstream: Any, proxy_factory: Any):
    """A proxied answer from an instant upstream takes well under a millisecond or two; with
    Nagle's algorithm on the proxy's socket the body waited for the client's delayed ACK
    (about 40 ms per response, measured)."""
    proxy = proxy_factory(upstream.base_url, guard={"notice": False, "status": False,
                                                     "risk": False})
    body = json.dumps({"model": "m", "messages": _user("hi")}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    took = []
    for _ in range(15):
        t0 = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        assert conn.getresponse().read()
        took.append(time.perf_counter() - t0)
    conn.close()
    assert sorted(took)[len(took) // 2] < 0.02, took


# -- failures -----------------------------------------------------------------------------------

def test_upstream_errors_pass_through(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url)
    upstream.fail_next("500")
    with pytest.raises(openai.InternalServerError) as err:
        proxy.client().chat.completions.create(model="m", messages=_user("hello"))
    assert err.value.status_code == 500
    upstream.fail_next("429", retry_after=1)
    with pytest.raises(openai.RateLimitError):
        proxy.client().chat.completions.create(model="m", messages=_user("hello"))
    # streaming: the upstream's error status, not a 200 stream
    upstream.fail_next("503")
    with pytest.raises(openai.APIStatusError) as err:
        list(proxy.client().chat.completions.create(model="m", messages=_user("hello"),
                                                    stream=True))
    assert err.value.status_code == 503
    # and the proxy goes on serving
    assert proxy.client().chat.completions.create(
        model="m", messages=_user("ok")).choices[0].message.content == "echo: ko"


def test_unreachable_and_slow_upstreams(upstream: Any, proxy_factory: Any):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = proxy_factory(f"http://127.0.0.1:{closed}/v1")
    with pytest.raises(openai.APIStatusError) as err:
        down.client().chat.completions.create(model="m", messages=_user("hello"))
    assert err.value.status_code == 502
    assert err.value.body["type"] == "upstream_error"
    slow = proxy_factory(upstream.base_url, upstream_timeout=0.3)
    upstream.fail_next("slow", slow_seconds=2)
    with pytest.raises(openai.APIStatusError) as err:
        slow.client().chat.completions.create(model="m", messages=_user("hello"))
    assert err.value.status_code == 504


def test_a_failing_check_is_a_503(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url, guard={**GUARD, "timeout_s": 0.1},
                          parts=components(1.0))
    with pytest.raises(openai.APIStatusError) as err:
        proxy.client().chat.completions.create(model="m", messages=_user("hello"))
    assert err.value.status_code == 503 and "risk" in err.value.message
    assert upstream.total_requests == 0


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b'{"model": "m"}', 400, "'messages' must be a non-empty array"),
    (b'{"messages": []}', 400, "'messages' must be a non-empty array"),
    (b'{"messages": ["hi"]}', 400, "messages[0] must be an object"),
    (b'{"messages": [{"role": "robot", "content": "x"}]}', 400, "messages[0].role"),
    (b'{"messages": [{"role": "user", "content": 5}]}', 400, "messages[0].content"),
    (b'{"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}', 400,
     "unsupported content part type 'input_audio'"),
    (b'{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": '
     b'{"url": "file:///etc/passwd"}}]}]}', 400, "only data: image URLs"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', 400, "'stream'"),
    (b"\xff\xfe", 400, "not valid JSON"),
])
def test_malformed_bodies_get_a_clear_400(upstream: Any, proxy_factory: Any, body: bytes,
                                          status: int, message: str):
    proxy = proxy_factory(upstream.base_url)
    code, headers, data = proxy.raw("POST", "/v1/chat/completions", body,
                                    {"Content-Type": "application/json"})
    assert code == status
    err = json.loads(data)["error"]
    assert message in err["message"] and err["type"] == "invalid_request_error"
    assert upstream.total_requests == 0


_PNG_B64 = _data_url(_png()).split(",", 1)[1]


@pytest.mark.parametrize("url, message", [
    ("data:image/png;base64,@@not*base64@@", "not valid base64"),
    ("data:image/png;base64," + _PNG_B64[:-2], "not valid base64"),   # padding lost
    ("data:image/png;base64", "no ',' before the data"),
    ("data:image/png;base64,", "no image data"),
    ("data:image/png," + _PNG_B64, "must be base64"),
    ("data:text/plain;base64,aGVsbG8=", "media type 'text/plain' is not an image"),
    ("data:image/png;base64,aGVsbG8=", "not a readable image"),              # "hello"
    ("data:image/png;base64,iVBORw0KGgo=", "not a readable image"),          # a PNG signature
    ("data:image/png;base64," + _PNG_B64[:len(_PNG_B64) // 2 // 4 * 4], "not a readable image"),
])
def test_a_malformed_image_data_url_is_a_400_naming_the_field(upstream: Any, proxy_factory: Any,
                                                              url: str, message: str):
    """The client's bad image is its error (400, naming the part), not the guard's (503); the
    guard (whose OCR would fail on it) is not consulted and the proxy goes on serving."""
    proxy = proxy_factory(upstream.base_url, guard={**GUARD, "notice": {"ocr": "s_blank"}},
                          parts={"risk": WordRisk()})
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "What is on this page?"},
                                             {"type": "image_url", "image_url": {"url": url}}]}]
    with pytest.raises(openai.BadRequestError) as err:
        proxy.client().chat.completions.create(model="m", messages=messages)
    assert err.value.status_code == 400
    assert err.value.body["param"] == "messages[1].content[1].image_url"
    assert err.value.body["type"] == "invalid_request_error"
    assert "messages[1].content[1].image_url" in err.value.message
    assert message in err.value.message
    assert upstream.total_requests == 0
    # the next request, with a well-formed image, is served
    messages[1]["content"][1]["image_url"]["url"] = _data_url(_png())
    r = proxy.client().chat.completions.with_raw_response.create(model="m", messages=messages)
    assert r.headers["x-copyguard-action"] == "pass" and upstream.total_requests == 1


def test_an_ocr_engine_failing_on_a_good_image_is_still_a_503(upstream: Any,
                                                              proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url, guard={**GUARD, "notice": {"ocr": "s_broken_ocr"}},
                          parts={"risk": WordRisk()})
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "Repeat this page."},
        {"type": "image_url", "image_url": {"url": _data_url(_png())}}]}]
    with pytest.raises(openai.APIStatusError) as err:
        proxy.client().chat.completions.create(model="m", messages=messages)
    assert err.value.status_code == 503
    assert "notice" in err.value.message and "the recognition model failed" in err.value.message
    assert upstream.total_requests == 0


def test_size_limit_and_framing(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url, max_body_bytes=1000)
    big = json.dumps({"messages": _user("x" * 2000)}).encode()
    code, headers, data = proxy.raw("POST", "/v1/chat/completions", big)
    assert code == 413 and "exceeds the limit of 1000 bytes" in json.loads(data)["error"]["message"]
    assert headers.get("Connection") == "close"
    # no Content-Length (a chunked body): 411
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.putrequest("POST", "/v1/chat/completions")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    conn.send(b"2\r\n{}\r\n0\r\n\r\n")
    r = conn.getresponse()
    assert r.status == 411
    conn.close()
    assert proxy.raw("GET", "/v1/chat/completions")[0] == 405
    code, headers, data = proxy.raw("DELETE", "/v1/chat/completions")
    assert code == 405 and headers["Allow"] == "POST" and json.loads(data)["error"]
    code, _, data = proxy.raw("POST", "/v1/embeddings", b"{}")
    assert code == 404 and "no route" in json.loads(data)["error"]["message"]
    # still serving, and a body just under the limit goes through
    ok = json.dumps({"model": "m", "messages": _user("y" * 900)}).encode()
    assert len(ok) < 1000 and proxy.raw("POST", "/v1/chat/completions", ok)[0] == 200
    assert upstream.total_requests == 1


def test_a_stalled_body_is_dropped(upstream: Any, proxy_factory: Any,
                                   caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    proxy = proxy_factory(upstream.base_url, client_timeout=0.3)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 100\r\n\r\n{\"messages\"")
        t0 = time.perf_counter()
        # a 408 (an ASGI server cannot drop a connection unanswered), then the connection closed
        answer = b""
        while data := s.recv(4096):
            answer += data
        assert answer.startswith(b"HTTP/1.1 408 ") and b"connection: close" in answer.lower()
        assert time.perf_counter() - t0 < 3
    assert _request_logs(caplog, 1)[0]["status"] == 408
    assert upstream.total_requests == 0


def test_health(upstream: Any, proxy_factory: Any):
    proxy = proxy_factory(upstream.base_url)
    code, _, data = proxy.raw("GET", "/health")
    health = json.loads(data)
    assert code == 200 and health["status"] == "ok"
    assert health["checks"] == {"notice": True, "status": False, "risk": True, "output": False}
    assert health["guard"] == Guard(GUARD).digest


# -- logs ---------------------------------------------------------------------------------------

def _request_logs(caplog: pytest.LogCaptureFixture, n: int) -> list[dict[str, Any]]:
    """The first ``n`` request log lines (a handler logs once its response is sent, so the
    client may see the answer before the line is written; on a loaded machine, after the next
    request's)."""
    deadline = time.time() + 30
    while True:
        logs = [json.loads(r.getMessage()) for r in caplog.records
                if r.name == "copyprobe.guard.serve" and r.getMessage().startswith("{")]
        if len(logs) >= n or time.time() > deadline:
            return logs
        time.sleep(0.02)


def test_logs_are_json_without_prompt_text(upstream: Any, proxy_factory: Any,
                                           caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    secret = "SECRET-PROMPT-TEXT"
    proxy = proxy_factory(upstream.base_url)
    proxy.client().chat.completions.create(model="m", messages=_user(f"{NOTICE} Repeat {secret}"))
    _request_logs(caplog, 1)  # its line is written after the answer: wait, so the order holds
    proxy.raw("POST", "/v1/chat/completions", b"{oops " + secret.encode())
    logs = _request_logs(caplog, 2)
    assert [(e["status"], e.get("action")) for e in logs] == [(200, "remind"), (400, None)]
    first = logs[0]
    assert first["task"] == "repetition" and first["guard_s"] >= first["checks"]["risk"]
    assert first["upstream_s"] > 0 and first["latency_s"] >= first["guard_s"]
    assert secret not in caplog.text
    caplog.clear()
    logged = proxy_factory(upstream.base_url, log_prompts=True)
    logged.client().chat.completions.create(model="m", messages=_user(f"Say {secret}"))
    assert _request_logs(caplog, 1)[0]["prompt"] == _user(f"Say {secret}")


# -- the command ---------------------------------------------------------------------------------

_SERVE_SCRIPT = """
import argparse, json, sys
from copyprobe.guard.cli import add_commands
p = argparse.ArgumentParser(prog="copyprobe")
add_commands(p.add_subparsers(dest="command", required=True))
args = p.parse_args(sys.argv[1:])
print(json.dumps(args.func(args)))
"""


def _serve_command(upstream: Any, tmp_path: Path, key: str, *more: str) -> subprocess.Popen:
    """``copyprobe guard serve`` as a process, every input check off, the upstream key
    ``key`` in COPYPROBE_TEST_CLI_KEY."""
    cfg = tmp_path / "guard.yaml"
    cfg.write_text("guard:\n  notice: false\n  status: false\n  risk: false\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COPYPROBE_TEST_CLI_KEY": key}
    return subprocess.Popen(
        [sys.executable, "-c", _SERVE_SCRIPT, "guard", "serve", "--upstream", upstream.base_url,
         "--config", str(cfg), "--port", "0", "--cache-dir", str(tmp_path / "c"),
         "--upstream-key-env", "COPYPROBE_TEST_CLI_KEY", *more],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_guard_serve_command(upstream: Any, tmp_path: Path):
    """The command as a process: config file, JSON logs on stderr, SIGTERM stops it."""
    proc = _serve_command(upstream, tmp_path, "sk-cli")
    try:
        start = json.loads(proc.stderr.readline())
        assert start["event"] == "start" and start["upstream_key_set"] is True
        assert "sk-cli" not in json.dumps(start)
        client = openai.OpenAI(base_url=start["url"], api_key="x", max_retries=0)
        answer = client.chat.completions.create(model="m", messages=_user("Tell me a story"))
        assert answer.choices[0].message.content.startswith("echo: ")
        # every check off: every request is treated as infringing on protected material
        assert upstream.requests[-1].body["messages"][0]["role"] == "system"
        assert upstream.requests[-1].api_key == "sk-cli"
        # the handler logs after the answer is sent: wait for its line
        request_line = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"stopped": True, "requests": 1}
    request = json.loads(request_line)
    assert (request["event"], request["status"], request["action"]) == ("request", 200, "remind")
    assert [json.loads(line)["event"] for line in err.splitlines()] == ["stop"]
    assert "Tell me a story" not in request_line + err


def test_serve_help_shows_the_defaults():
    import argparse

    from copyprobe.guard.cli import add_commands

    parser = argparse.ArgumentParser(prog="copyprobe")
    add_commands(parser.add_subparsers(dest="command"))
    guard = parser._subparsers._group_actions[0].choices["guard"]
    serve = guard._subparsers._group_actions[0].choices["serve"]
    text = " ".join(serve.format_help().split())
    for default in ("(default: 8000)", "(default: 127.0.0.1)", "(default: OPENAI_API_KEY)"):
        assert default in text
    assert "(default: None)" not in text


def test_bad_config_file(tmp_path: Path):
    from copyprobe.guard.serve import load_guard_config

    bad = tmp_path / "g.yaml"
    bad.write_text("guard: [1, 2]\n")
    with pytest.raises(ValueError, match="g.yaml: 'guard' must be a mapping"):
        load_guard_config(bad)
    bad.write_text("guard: {policy: [\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_guard_config(bad)
    with pytest.raises(ValueError, match="http"):
        ProxySettings(upstream="127.0.0.1:8080")


def test_a_component_that_cannot_be_built_stops_the_server_at_start(tmp_path: Path):
    """The package's notice identifier with PaddleOCR and no model folders cannot be built:
    the server does not start (rather than failing every request)."""
    with pytest.raises(OCRError, match="OCR engine 'paddleocr' needs"):
        make_server(ProxySettings(upstream="http://127.0.0.1:9/v1", port=0,
                                  guard={**GUARD, "notice": {"ocr": "paddleocr"}},
                                  cache_dir=str(tmp_path)))


# -- the output check fails closed ---------------------------------------------------------------

def _pseudo_words(n: int, rng: Any) -> list[str]:
    return ["".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou")
                    for _ in range(rng.randint(2, 4))) for _ in range(n)]


def _corpus(prefix: str, seed: int, n: int = 3) -> list[Any]:
    """``n`` protected documents of 60 seeded pseudo-words (no window occurs by chance)."""
    import random

    from copyprobe.spans.types import CorpusDoc

    rng = random.Random(seed)
    return [CorpusDoc("songs", f"{prefix}-{i}", " ".join(_pseudo_words(60, rng)),
                      title=f"Song {prefix}{i}") for i in range(n)]


PROTECTED = _corpus("a", 29)
MIN_WORDS = 6


def _reciting(doc: Any) -> str:
    """An answer: chatter, 15 words of ``doc`` (words 10..25), chatter."""
    import random

    rng = random.Random(doc.doc_id)
    return ("Sure, here it is: " + " ".join(_pseudo_words(8, rng)) + ", "
            + " ".join(doc.text.split()[10:25]) + ". " + " ".join(_pseudo_words(10, rng)) + ".")


def _output_guard(on_mismatch: str = "error", on_error: str = "raise",
                  index: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """An output-only guard block and its components (the documents in a MemoryIndex)."""
    from copyprobe.guard.output import OutputGuard
    from copyprobe.spans.reference import MemoryIndex

    out = {"min_words": MIN_WORDS, "on_mismatch": on_mismatch, "on_error": on_error}
    block = {"input": False, "output": {k: v for k, v in out.items()  # defaults left out
                                        if v not in ("error", "raise")}}
    return block, {"output": OutputGuard(index or MemoryIndex(PROTECTED), min_words=MIN_WORDS)}


@pytest.fixture
def format_server(server_module: Any) -> Iterator[Any]:
    """``format_server(answer, reply)``: a started FormatServer (tests/servers/format_server.py)."""
    made = []

    def make(answer: str, reply: str, **kw: Any) -> Any:
        made.append(server_module("format_server").FormatServer(answer, reply, **kw).start())
        return made[-1]

    yield make
    for srv in made:
        srv.stop()


def _sse_text(raw: bytes) -> tuple[str, list[dict[str, Any]], bool]:
    """A stream's content, its content_filter chunks and whether it ended with [DONE]."""
    text, finals = "", []
    for event in raw.split(b"\n\n"):
        if event.startswith(b"data: {"):
            obj = json.loads(event[6:])
            for ch in obj.get("choices", []):
                text += ch["delta"].get("content") or ""
                if ch["finish_reason"] == "content_filter":
                    finals.append(obj)
    return text, finals, raw.endswith(b"data: [DONE]\n\n")


STREAM = json.dumps({"model": "m", "stream": True, "messages": _user("Sing song a-0.")}).encode()
PLAIN = json.dumps({"model": "m", "messages": _user("Sing song a-0.")}).encode()


@pytest.mark.parametrize("reply, body, what", [
    ("json", STREAM, "a plain JSON answer to a streamed request"),
    ("sse", PLAIN, "a stream (text/event-stream) answered a request that did not ask"),
    ("bad_event", STREAM, "an event of the upstream's stream is not JSON"),
    ("text", STREAM, "content type 'text/plain; charset=utf-8'"),
    ("text", PLAIN, "content type 'text/plain; charset=utf-8'"),
])
def test_an_answer_the_output_check_cannot_read_is_not_relayed(
        format_server: Any, proxy_factory: Any, caplog: pytest.LogCaptureFixture,
        reply: str, body: bytes, what: str):
    """A protected passage in the other format than the one asked for (or unreadable) is
    refused with a 502 naming why, never relayed; the log says refused_format."""
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    upstream = format_server(_reciting(PROTECTED[0]), reply)
    block, parts = _output_guard()
    proxy = proxy_factory(upstream.base_url, guard=block, parts=parts)
    code, headers, data = proxy.raw("POST", "/v1/chat/completions", body,
                                    {"Content-Type": "application/json"})
    assert code == 502, data
    err = json.loads(data)["error"]
    assert (err["type"], err["code"]) == ("upstream_error", "upstream_format")
    assert what in err["message"]
    assert PROTECTED[0].text.split()[12].encode() not in data
    line = _request_logs(caplog, 1)[0]
    assert (line["status"], line["output_action"]) == (502, "refused_format")


def test_on_mismatch_convert_checks_the_answer_in_its_own_format(format_server: Any,
                                                                 proxy_factory: Any,
                                                                 caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    block, parts = _output_guard("convert")
    # a plain answer to a streamed request: checked, and sent as the stream asked for
    json_up = format_server(_reciting(PROTECTED[1]), "json")
    chunks = list(proxy_factory(json_up.base_url, guard=block, parts=parts).client()
                  .chat.completions.create(model="m", messages=_user("Sing."), stream=True))
    assert chunks[-1].choices[0].finish_reason == "content_filter"
    assert chunks[-1].choices[0].delta.content.startswith("I can't provide this answer")
    assert chunks[-1].model_extra["copyguard"]["docs"][0]["doc_id"] == "a-1"
    # a stream answering a plain request: read whole, checked, sent as a completion
    sse_up = format_server(_reciting(PROTECTED[2]), "sse")
    r = proxy_factory(sse_up.base_url, guard=block, parts=parts).client() \
        .chat.completions.create(model="m", messages=_user("Sing."))
    assert r.choices[0].finish_reason == "content_filter"
    assert r.model_extra["copyguard"]["docs"][0]["doc_id"] == "a-2"
    # and a clean answer passes whole
    clean = format_server("Nothing protected here at all, only my own words.", "sse")
    r = proxy_factory(clean.base_url, guard=block, parts=parts).client() \
        .chat.completions.create(model="m", messages=_user("Sing."))
    assert r.choices[0].message.content == "Nothing protected here at all, only my own words."
    logs = _request_logs(caplog, 3)
    assert [(e["output_action"], e["output_format"]) for e in logs] == [
        ("block", "converted"), ("block", "converted"), ("pass", "converted")]


@pytest.mark.parametrize("checked", [False, True])
def test_a_compressed_upstream_answer_is_relayed_decoded(format_server: Any, proxy_factory: Any,
                                                         checked: bool):
    text = "Nothing protected here at all, only my own words."
    block, parts = _output_guard() if checked else ({"input": False}, {})
    for reply, body in (("sse", STREAM), ("json", PLAIN)):
        upstream = format_server(text, reply, gzip=True)
        proxy = proxy_factory(upstream.base_url, guard=block, parts=parts)
        code, headers, data = proxy.raw("POST", "/v1/chat/completions", body,
                                        {"Content-Type": "application/json"})
        assert code == 200 and headers.get("Content-Encoding") is None
        got = _sse_text(data)[0] if reply == "sse" else \
            json.loads(data)["choices"][0]["message"]["content"]
        assert got == text


class _VanishingIndex:
    """A MemoryIndex whose files are gone: every query fails (as a deleted span index's
    document table did)."""

    def __init__(self) -> None:
        from copyprobe.spans.reference import MemoryIndex

        self.inner = MemoryIndex(PROTECTED)
        self.gone = False
        self.docs = self.inner.docs

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in ("count", "find_spans") and callable(attr):
            def failing(*a: Any, **kw: Any) -> Any:
                if self.gone:
                    raise FileNotFoundError("docs.parquet")
                return attr(*a, **kw)
            return failing
        return attr


@pytest.mark.parametrize("per_read", [1, 3])
def test_a_stream_relayed_unchecked_after_a_failed_check_keeps_its_text(per_read: int):
    """Under ``on_error: pass`` the deltas after the check failed are relayed as they came,
    whether they arrive one a read or several together (a run of deltas shaped alike was
    relayed as the first one's content, repeated)."""
    from copyprobe.guard.relay import StreamRelay

    answer = _reciting(PROTECTED[0])
    index = _VanishingIndex()
    _, parts = _output_guard(on_error="pass", index=index)
    parts["output"].window_filter = None  # every word asks the index
    relay = StreamRelay(parts["output"], on_error="pass")
    words = answer.split(" ")
    events = [b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk",
                                      "choices": [{"index": 0, "delta": {"content": w + " "},
                                                   "finish_reason": None}]}).encode() + b"\n\n"
              for w in words]
    out = relay.feed(b"".join(events[:2]))
    index.gone = True
    for i in range(2, len(events), per_read):
        out += relay.feed(b"".join(events[i:i + per_read]))
    out += relay.finish()
    assert _sse_text(b"".join(out))[0] == "".join(w + " " for w in words)
    assert relay.errors


@pytest.mark.parametrize("stream", [False, True])
def test_output_on_error_raise_is_a_503_and_pass_relays_unchecked(
        format_server: Any, proxy_factory: Any, caplog: pytest.LogCaptureFixture, stream: bool):
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    answer = _reciting(PROTECTED[0])
    upstream = format_server(answer, "sse" if stream else "json")
    body = STREAM if stream else PLAIN
    for on_error in ("raise", "pass"):
        index = _VanishingIndex()
        block, parts = _output_guard(on_error=on_error, index=index)
        parts["output"].window_filter = None  # every word asks the index
        index.gone = True
        proxy = proxy_factory(upstream.base_url, guard=block, parts=parts)
        code, _, data = proxy.raw("POST", "/v1/chat/completions", body,
                                  {"Content-Type": "application/json"})
        if on_error == "raise":
            assert code == 503, data
            err = json.loads(data)["error"]
            assert err["code"] == "output_check_failed" and "docs.parquet" in err["message"]
            assert answer.split()[5].encode() not in data
        else:
            assert code == 200
            got = _sse_text(data)[0] if stream else \
                json.loads(data)["choices"][0]["message"]["content"]
            assert got == answer
    logs = sorted(_request_logs(caplog, 2), key=lambda e: e["status"])
    assert [(e["status"], e["output_action"]) for e in logs] == [(200, "unchecked"),
                                                                 (503, "error")]
    assert "docs.parquet" in json.dumps(logs[0]["output_errors"])


def test_a_client_leaving_cancels_the_upstream_request(format_server: Any, proxy_factory: Any,
                                                       caplog: pytest.LogCaptureFixture):
    """The output check holds text back (here a word that does not end: a long code), so
    nothing is written to the client for a while; its leaving still closes the upstream's
    connection at once (it stayed open until the upstream had sent everything)."""
    caplog.set_level(logging.INFO, logger="copyprobe.guard.serve")
    long_answer = "Here it comes: " + "ab" * 1000   # 102 events, 0.05 s apart: 5 s
    upstream = format_server(long_answer, "sse", chunk_chars=20, chunk_delay=0.05)
    block, parts = _output_guard()
    proxy = proxy_factory(upstream.base_url, guard=block, parts=parts)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: " + str(len(STREAM)).encode()
                  + b"\r\n\r\n" + STREAM)
        time.sleep(0.5)
        assert upstream.requests == 1 and upstream.closed_at is None
        left = time.monotonic()
    deadline = time.monotonic() + 3
    while upstream.closed_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert upstream.closed_at is not None, "the upstream was not closed"
    assert upstream.closed_at - left < 1.0
    assert _request_logs(caplog, 1)[0]["status"] == 499


# -- the span index under a running proxy ---------------------------------------------------------

def _build(docs: list[Any], out: Path, tmp: Path) -> str:
    """``copyprobe index build`` of ``docs`` into ``out`` (the command, as a user runs it);
    the new digest."""
    from copyprobe.spans.index import index_digest

    src = tmp / f"{docs[0].doc_id}.jsonl"
    src.write_text("".join(json.dumps({"source": d.source, "doc_id": d.doc_id, "title": d.title,
                                       "text": d.text}) + "\n" for d in docs), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "copyprobe", "index", "build", str(src), "--out",
                    str(out)], check=True, capture_output=True, env={**os.environ,
                                                                     "PYTHONPATH": str(ROOT)})
    return index_digest(out)


def _ask(proxy: Any, answer_doc: Any, upstream: Any) -> tuple[int, dict[str, Any]]:
    upstream.answer = _reciting(answer_doc)
    code, _, data = proxy.raw("POST", "/v1/chat/completions", PLAIN,
                              {"Content-Type": "application/json"})
    return code, json.loads(data)


def test_an_index_rebuilt_or_deleted_under_a_running_proxy(format_server: Any, tmp_path: Path):
    import shutil

    # corpus B is larger than A (a rebuild in place must not shrink a file A's maps read)
    other = _corpus("b", 31, n=5)
    folder = tmp_path / "index"
    first = _build(PROTECTED, folder, tmp_path)
    upstream = format_server(_reciting(PROTECTED[0]), "json")
    block = {"input": False, "output": {"min_words": MIN_WORDS}}
    proxies = {mode: Proxy(ProxySettings(upstream=upstream.base_url, guard=block, port=0,
                                         cache_dir=str(tmp_path / "g"), span_index=str(folder),
                                         index_reload=mode)) for mode in ("reload", "keep")}
    try:
        for proxy in proxies.values():
            code, obj = _ask(proxy, PROTECTED[0], upstream)
            assert code == 200 and obj["copyguard"]["docs"][0]["doc_id"] == "a-0"
            health = json.loads(proxy.raw("GET", "/health")[2])
            assert health["status"] == "ok" and health["index"]["digest"] == first

        second = _build(other, folder, tmp_path)
        assert second != first
        # reload: the new build from the next request on
        reload = proxies["reload"]
        code, _, data = reload.raw("GET", "/health")
        assert code == 200 and json.loads(data)["index"]["digest"] == second
        code, obj = _ask(reload, other[3], upstream)
        assert code == 200 and obj["copyguard"]["docs"][0]["doc_id"] == "b-3"
        code, obj = _ask(reload, PROTECTED[1], upstream)  # no longer protected
        assert code == 200 and "copyguard" not in obj
        # keep: the snapshot opened at start, and /health says it is not the folder's
        keep = proxies["keep"]
        code, _, data = keep.raw("GET", "/health")
        health = json.loads(data)
        assert code == 503 and health["status"] == "degraded"
        assert health["index"]["digest"] == first and second[:16] in health["index"]["problem"]
        code, obj = _ask(keep, PROTECTED[2], upstream)
        assert (code == 200 and obj["copyguard"]["docs"][0]["doc_id"] == "a-2") or (
            code == 503 and obj["error"]["code"] == "output_check_failed"), obj

        shutil.rmtree(folder)
        for proxy in proxies.values():
            code, _, data = proxy.raw("GET", "/health")
            health = json.loads(data)
            assert code == 503 and health["status"] == "degraded"
            assert "is gone" in health["index"]["problem"]
        code, obj = _ask(reload, other[4], upstream)
        assert (code == 200 and obj["copyguard"]["docs"][0]["doc_id"] == "b-4") or (
            code == 503 and obj["error"]["code"] == "output_check_failed"), obj
    finally:
        for proxy in proxies.values():
            proxy.close()


# -- several workers -------------------------------------------------------------------------------

def test_guard_serve_with_two_workers(upstream: Any, tmp_path: Path):
    """``--workers 2``: two processes serve the port, each with its guard (the settings
    reach them through the environment, the key only as its variable's name)."""
    proc = _serve_command(upstream, tmp_path, "sk-workers", "--workers", "2")
    try:
        start = json.loads(proc.stderr.readline())
        assert start["event"] == "start" and start["workers"] == 2
        port = int(start["url"].rsplit(":", 1)[1].split("/")[0])

        def health(_: int) -> int:
            deadline = time.time() + 60
            while True:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    conn.request("GET", "/health")
                    return json.loads(conn.getresponse().read())["worker"]
                except (ConnectionError, OSError):
                    if time.time() > deadline:
                        raise
                    time.sleep(0.2)
                finally:
                    conn.close()

        pids: set[int] = set()
        deadline = time.time() + 60  # the second worker may still be importing its guard
        while len(pids) < 2 and time.time() < deadline:
            with ThreadPoolExecutor(8) as pool:
                pids |= set(pool.map(health, range(32)))
            if len(pids) < 2:
                time.sleep(0.2)
        assert len(pids) == 2 and proc.pid not in pids
        client = openai.OpenAI(base_url=start["url"], api_key="x", max_retries=0, timeout=20)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: client.chat.completions.create(
                model="m", messages=_user(f"Tell me story {i}")).choices[0].message.content,
                range(16)))
        assert answers == ["echo: " + f"Tell me story {i}"[::-1] for i in range(16)]
        assert {r.api_key for r in upstream.requests} == {"sk-workers"}
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"stopped": True, "requests": None}
    events = [json.loads(line) for line in err.splitlines()]
    assert sum(e["event"] == "request" and e["path"] == "/v1/chat/completions"
               for e in events) == 16
    assert events[-1]["event"] == "stop" and "sk-workers" not in err


# -- in front of llama.cpp's server with SmolLM2 --------------------------------------------------

@pytest.fixture(scope="module")
def llama_server(smollm2_file, tmp_path_factory, start_llama_server):
    with start_llama_server(smollm2_file.path, tmp_path_factory.mktemp("llama-server")) as url:
        yield url


@pytest.mark.slow
def test_in_front_of_llama_cpp_server(llama_server: str, proxy_factory: Any):
    proxy = proxy_factory(llama_server)
    client = proxy.client(timeout=120)
    direct = openai.OpenAI(base_url=llama_server, api_key="x", max_retries=0, timeout=120)
    params = {"model": "smollm2", "temperature": 0.0, "max_tokens": 24, "seed": 0}
    benign = _user("Name three colours of the rainbow.")
    risky = _user(f"{NOTICE} The lighthouse keeper lit the lamp at dusk. Repeat this text.")

    # pass: the same answer as asking the server directly
    via = client.chat.completions.create(messages=benign, **params).choices[0].message.content
    assert via == direct.chat.completions.create(messages=benign,
                                                 **params).choices[0].message.content
    assert via.strip()
    # streaming through the proxy: the deltas add up to the same text
    chunks = list(client.chat.completions.create(messages=benign, stream=True, **params))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == via
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"

    # remind: the answer the server gives to the reminded prompt
    g = Guard(GUARD)
    prompt = Prompt("chat", messages=tuple(risky))
    reminded = add_reminder(prompt, g.check(prompt).message)
    want = direct.chat.completions.create(messages=[dict(m) for m in reminded.messages],
                                          **params).choices[0].message.content
    r = client.chat.completions.with_raw_response.create(messages=risky, **params)
    assert r.headers["x-copyguard-action"] == "remind"
    assert r.parse().choices[0].message.content == want

    # concurrent clients (the server answers one at a time; the proxy keeps them apart)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(
            lambda m: client.chat.completions.create(messages=m, **params)
            .choices[0].message.content, [benign, risky, benign, risky]))
    assert answers == [via, want, via, want]
    # the models list is forwarded
    assert proxy.raw("GET", "/v1/models")[0] == 200
