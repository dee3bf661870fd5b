"""The runner against a real OpenAI-compatible HTTP server on 127.0.0.1 with scripted faults:
retries, permanent failures, no duplicated answers, SIGKILL resume, and no leaked key."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import GENERATIONS, to_table
from copyprobe.generation import GenerationCache, RunSettings, backend_identity, build_backend
from copyprobe.generation import run_generation
from copyprobe.generation.base import Decoding
from copyprobe.generation.limits import RetryPolicy, default_concurrency
from copyprobe.prompt import Prompt

KEY_ENV = "COPYPROBE_TEST_API_KEY"
PLANTED = "sk-planted-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def prompts_table(n: int, chat: bool = True) -> pd.DataFrame:
    rows = []
    for i in range(n):
        text = f"segment number {i} of the document about river valleys"
        p = (Prompt("chat", messages=({"role": "user", "content": text},)) if chat
             else Prompt("completion", text=text))
        rows.append({"request_id": f"req-{i:03d}", "model": "api", "source": "s",
                     "doc_id": f"d{i}", "split": "pre", "status": "ready", "reason": "",
                     "prompt_format": p.format, "prompt": p.to_json(),
                     "reference": "a b c d e f g h", "document": text, "n": 2,
                     "num_words": 1000})
    return pd.DataFrame(rows)


def _prompts_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "prompts.parquet"
    prompts_table(n).to_parquet(path)
    return path


@pytest.fixture()
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)
    return PLANTED


def spec_for(server) -> dict:
    return {"name": "api", "backend": "openai", "base_url": server.base_url,
            "api_key_env": KEY_ENV, "model_id": "test-model"}


def run(server, tmp_path, prompts, **settings):
    spec = spec_for(server)
    kw = {"retry": RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, jitter=0.0)}
    kw.update(settings)
    return run_generation(
        prompts, model="api", backend_name="openai",
        identity=backend_identity(spec, None), backend_factory=lambda: build_backend(spec, None),
        decoding=Decoding(max_tokens=16), cache=GenerationCache(tmp_path / "cache"),
        settings=RunSettings(**kw))


def test_transient_faults_are_retried_and_nothing_is_duplicated(fault_server, api_key, tmp_path):
    srv = fault_server
    srv.fail_when("number 1 ", "429", times=2, retry_after=0.05)
    srv.fail_when("number 2 ", "500")
    srv.fail_when("number 3 ", "malformed")
    srv.fail_when("number 4 ", "drop")
    srv.fail_when("number 5 ", "400_context")
    df, summary = run(srv, tmp_path, prompts_table(12), max_concurrency=4)
    to_table(df, GENERATIONS)
    by = df.set_index("request_id")
    assert summary.requests == 12 and summary.failed == 1
    assert summary.failures_by_class == {"ContextLengthError": 1}
    assert by.loc["req-005", "status"] == "failed" and pd.isna(by.loc["req-005", "text"])
    assert by.loc["req-005", "attempts"] == 1  # permanent: not retried
    ok = df[df["status"] == "ok"]
    assert len(ok) == 11 and ok["text"].str.startswith("echo: ").all()
    assert by.loc["req-001", "attempts"] == 3 and by.loc["req-002", "attempts"] == 2
    assert summary.retries == 2 + 1 + 1 + 1
    assert summary.model_calls == srv.total_requests == 12 + 5
    # every successful answer was served exactly once
    assert all(v == 1 for v in srv.served_by_hash.values())
    assert len(srv.served_by_hash) == 11
    # a rerun sends only the failed request again
    before = srv.total_requests
    df2, s2 = run(srv, tmp_path, prompts_table(12))
    assert s2.cache_hits == 11 and srv.total_requests - before == 1


def test_retries_give_up_after_max_attempts(fault_server, api_key, tmp_path):
    fault_server.fail_when("number 0 ", "503", times=10)
    df, summary = run(fault_server, tmp_path, prompts_table(2))
    row = df.set_index("request_id").loc["req-000"]
    assert row["status"] == "failed" and row["error_class"] == "ServerError"
    assert row["attempts"] == 4 and summary.failure_share == 0.5


def test_missing_key_fails_every_request_with_the_variable_named(fault_server, tmp_path,
                                                                 monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(Exception, match=KEY_ENV):
        run(fault_server, tmp_path, prompts_table(2))
    assert fault_server.total_requests == 0


def test_concurrency_reaches_the_ideal_rate(fault_server, api_key, tmp_path):
    fault_server.latency = 0.2
    t0 = time.perf_counter()
    _, summary = run(fault_server, tmp_path, prompts_table(32), max_concurrency=16)
    elapsed = time.perf_counter() - t0
    assert summary.model_calls == 32
    assert elapsed < 32 * 0.2 / 4  # far from sequential (ideal: 0.4 s)


def test_requests_in_flight_reach_but_never_exceed_max_concurrency(fault_server, api_key,
                                                                   tmp_path):
    fault_server.latency = 0.1
    fault_server.fail_when("number 3 ", "500")  # a retry re-enters the queue
    _, summary = run(fault_server, tmp_path, prompts_table(40), max_concurrency=6)
    assert summary.failed == 0 and summary.retries == 1
    assert fault_server.max_in_flight == 6
    assert fault_server.total_requests == 41


class _FailingCache(GenerationCache):
    """A cache whose disk fills up after ``ok`` answers (a failure a test cannot provoke on a
    real disk without root-proof quotas)."""

    def __init__(self, root, ok: int) -> None:
        super().__init__(root)
        self.ok = ok
        self._lock = threading.Lock()  # puts run in the runner's writer threads

    def put(self, key, record):
        with self._lock:
            if self.ok <= 0:
                raise OSError(28, "No space left on device")
            self.ok -= 1
            super().put(key, record)


def test_a_failing_cache_write_stops_the_run_and_keeps_what_was_stored(fault_server, api_key,
                                                                      tmp_path):
    spec = spec_for(fault_server)
    fault_server.latency = 0.05

    def go(cache):
        return run_generation(
            prompts_table(30), model="api", backend_name="openai",
            identity=backend_identity(spec, None),
            backend_factory=lambda: build_backend(spec, None), decoding=Decoding(max_tokens=16),
            cache=cache, settings=RunSettings(max_concurrency=4))

    with pytest.raises(OSError, match="No space left"):
        go(_FailingCache(tmp_path / "cache", ok=10))
    sent = fault_server.total_requests
    assert 11 <= sent < 30  # stopped soon after the failure, not after every request
    _, summary = go(GenerationCache(tmp_path / "cache"))
    assert summary.cache_hits == 10 and summary.failed == 0
    assert fault_server.total_requests - sent == 20  # only the unstored answers again


_STOPPABLE_RUN = """
import sys, time
import pandas as pd
from copyprobe.generation import (GenerationCache, RunSettings, backend_identity,
                                  build_backend, run_generation)
from copyprobe.generation.base import Decoding

class SlowCache(GenerationCache):  # a slow shared file system: writes queue up
    def put(self, key, record):
        time.sleep(0.3)
        super().put(key, record)

spec = {"name": "api", "backend": "openai", "base_url": sys.argv[1],
        "api_key_env": sys.argv[2], "model_id": "test-model"}
run_generation(pd.read_parquet(sys.argv[3]), model="api", backend_name="openai",
               identity=backend_identity(spec, None),
               backend_factory=lambda: build_backend(spec, None),
               decoding=Decoding(max_tokens=16), cache=SlowCache(sys.argv[4]),
               settings=RunSettings(max_concurrency=8))
"""


@pytest.mark.parametrize(("sig", "expected"), [
    (signal.SIGTERM, "GenerationInterrupted: stopped by SIGTERM: 8 new answer(s) stored"),
    (signal.SIGINT, "KeyboardInterrupt"),
], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_run_stores_every_answer_received(sig, expected, fault_server, api_key,
                                                   tmp_path):
    # SLURM sends SIGTERM at a time limit or scancel; Ctrl-C sends SIGINT. With slow cache
    # writes (0.3 s each, 2 writer threads), 8 answers arrive together: 2 are being written and
    # 6 wait when the signal comes. All 8 must reach the cache; the 8 requests in flight are
    # abandoned.
    srv = fault_server
    srv.latency = 0.4
    n = 24
    prompts_path = _prompts_file(tmp_path, n)
    cache = tmp_path / "cache"
    # SIGINT as a terminal delivers it: a suite started in the background by a non-interactive
    # shell runs with SIGINT ignored, which the child would inherit (and then never stop)
    proc = subprocess.Popen(
        [sys.executable, "-c", _STOPPABLE_RUN, srv.base_url, KEY_ENV, str(prompts_path),
         str(cache)], env={**os.environ, KEY_ENV: PLANTED}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # A worker sends its next request only once it has handled its answer, so when the
    # second wave has reached the server, all 8 answers of the first are in the client; the
    # second wave is then 0.4 s from being answered.
    deadline = time.time() + 60
    while srv.total_requests < 16 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    assert sum(srv.served_by_hash.values()) == 8 and proc.poll() is None
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert expected in err, err[-2000:]
    assert len(list((cache).glob("*/*.json"))) == 8
    assert srv.total_requests == 16  # the second wave was sent, then abandoned

    sent = srv.total_requests
    _, summary = run(srv, tmp_path, prompts_table(n), max_concurrency=8)  # same cache
    assert summary.cache_hits == 8 and summary.failed == 0
    assert srv.total_requests - sent == n - 8


def _write_config(path: Path, server, cache: Path) -> None:
    cfg = {
        "cache_dir": str(cache),
        "sources": {"s": {"kind": "local", "path": str(path.parent)}},
        "datasets": {"d": ["s"]},
        "models": {"api": {"backend": "openai", "base_url": server.base_url,
                           "api_key_env": KEY_ENV, "model_id": "test-model",
                           "cutoff": "2024-01-01", "requests": {"max_concurrency": 4}}},
    }
    path.write_text(yaml.safe_dump(cfg))


def test_sigkill_mid_run_resends_only_unanswered_requests(fault_server, tmp_path):
    srv = fault_server
    srv.latency = 0.25
    n = 40
    prompts_path = _prompts_file(tmp_path, n)
    cfg = tmp_path / "config.yaml"
    cache = tmp_path / "cache"
    _write_config(cfg, srv, cache)
    out = tmp_path / "gen.parquet"
    cmd = [sys.executable, "-m", "copyprobe.cli", "generate", str(prompts_path), "--config",
           str(cfg), "--model", "api", "--out", str(out)]
    env = {**os.environ, KEY_ENV: PLANTED}

    def stored() -> int:
        root = cache / "generations"
        return sum(1 for _ in root.glob("*/*.json")) if root.exists() else 0

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while stored() < 12 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    sent_before, kept = srv.total_requests, stored()
    assert 12 <= kept < n
    assert sent_before - kept <= 4  # at most the in-flight requests were lost

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["cache_hits"] == kept and summary["model_calls"] == n - kept
    assert srv.total_requests - sent_before == n - kept  # only unanswered requests re-sent
    df = pd.read_parquet(out)
    assert len(df) == n and (df["status"] == "ok").all()
    assert df["request_id"].is_unique

    # the planted key reached the server, and nothing on disk or in the output
    assert srv.last.api_key == PLANTED
    for f in [out, *cache.rglob("*")]:
        if f.is_file():
            assert PLANTED.encode() not in f.read_bytes(), f
    assert PLANTED not in done.stdout + done.stderr


def test_identical_requests_are_sent_once_and_share_the_answer(fault_server, api_key,
                                                               tmp_path):
    prompts = prompts_table(3)
    prompts.loc[2, "prompt"] = prompts.loc[0, "prompt"]  # two documents, one prompt
    df, summary = run(fault_server, tmp_path, prompts)
    assert fault_server.total_requests == 2 and summary.requests == 2
    assert list(df["request_id"]) == ["req-000", "req-001", "req-002"]
    assert df.loc[0, "text"] == df.loc[2, "text"] and df.loc[0, "cache_key"] == df.loc[2, "cache_key"]


@pytest.fixture()
def closed_port():
    """A port on 127.0.0.1 with nothing listening (bound, never listening: connections are
    refused, and no other process can take the port during the test)."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def test_an_unreachable_endpoint_stops_after_the_first_wave(closed_port, api_key, tmp_path):
    """A wrong port: the first attempts (one per worker) are refused, so the run stops at once
    instead of walking every request up the retry ladder, and every failure says where and
    why."""
    url = f"http://127.0.0.1:{closed_port}/v1"
    spec = {"name": "api", "backend": "openai", "base_url": url, "api_key_env": KEY_ENV,
            "model_id": "test-model"}
    t0 = time.perf_counter()
    df, summary = run_generation(
        prompts_table(20), model="api", backend_name="openai",
        identity=backend_identity(spec, None), backend_factory=lambda: build_backend(spec, None),
        decoding=Decoding(max_tokens=16), cache=GenerationCache(tmp_path / "cache"),
        settings=RunSettings(max_concurrency=4, retry=RetryPolicy(max_attempts=3, base_delay=2.0,
                                                                  jitter=0.0)))
    assert time.perf_counter() - t0 < 1.5  # the retry ladder alone would take 6 s
    assert summary.failed == 20 and summary.failures_by_class == {"ConnectionError": 20}
    # 4 refused first attempts stop it; a worker refused at once may have sent its next one
    # while the others were still connecting, but no request is tried twice
    assert 4 <= summary.model_calls < 8
    where = f"test-model at {url}/chat/completions: cannot connect: connection refused"
    assert summary.failure_examples["ConnectionError"].startswith(where)
    assert df["error"].str.contains(where, regex=False).all()
    assert set(df["attempts"]) == {0, 1} and df["attempts"].sum() == summary.model_calls
    report = summary.failure_report(0.05)
    assert report.startswith("20 of 20 requests failed (100.0% > max_failure_share 5.0%)")
    assert where in report
    assert summary.failure_report(1.0) is None


@pytest.mark.parametrize("props, expected", [(None, 1), ({"total_slots": 3}, 3)])
def test_a_local_server_gets_the_concurrency_it_reports_or_one(fault_server, api_key, tmp_path,
                                                               caplog, props, expected):
    """No max_concurrency set: a server on 127.0.0.1 is sent as many requests at once as it
    has slots (llama.cpp's /props), else one, and the log says so."""
    fault_server.latency = 0.05
    fault_server.props = props
    with caplog.at_level(logging.INFO, logger="copyprobe.generation.limits"):
        _, summary = run(fault_server, tmp_path, prompts_table(12))
    assert summary.failed == 0 and summary.retries == 0
    assert fault_server.max_in_flight == expected
    assert f"{expected} request(s) at a time" in caplog.text
    assert default_concurrency("openai", "https://api.openai.com/v1") == 8  # remote: no probe
