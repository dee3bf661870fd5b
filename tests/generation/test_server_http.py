"""The one HTTP stack of model-server calls (copyprobe/generation/server_http.py): synchronous
calls from a running event loop and from several threads, clean closing, the Batch API's
retries; against the real servers of tests/servers."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from copyprobe.generation.base import BackendError, Decoding
from copyprobe.generation.openai_api import OpenAIBackend
from copyprobe.generation.server_http import ServerClient
from copyprobe.prompt import Prompt

from .test_openai_batch import (
    DEC,
    KEY,
    KEY_ENV,
    items,
    server,  # noqa: F401 - the Batch API emulator fixture
)
from .test_openai_batch import make_backend as make_batch_backend

PROMPT = Prompt("completion", text="Call me Ishmael.")


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "copyprobe-http" and t.is_alive()]


def _backend(srv: Any) -> OpenAIBackend:
    return OpenAIBackend(model_id="m", base_url=srv.base_url, api_key_optional=True,
                         api_key_env="COPYPROBE_TEST_NO_KEY", request_timeout=5)


def test_synchronous_calls_work_inside_a_running_event_loop(fault_server: Any) -> None:
    backend = _backend(fault_server)

    async def main() -> tuple[str, str]:
        sync = backend.generate(PROMPT, Decoding())  # blocks this loop, runs on its own
        concurrent = await backend.agenerate(PROMPT, Decoding())
        await backend.aclose()
        return sync.text, concurrent.text

    try:
        sync, concurrent = asyncio.run(main())
    finally:
        backend.close()
    assert sync == concurrent and sync.startswith("echo: ")
    assert fault_server.total_requests == 2


def test_synchronous_calls_from_several_threads_share_one_private_loop(
        fault_server: Any) -> None:
    before = set(_loop_threads())
    backend = _backend(fault_server)
    fault_server.latency = 0.05
    try:
        with ThreadPoolExecutor(8) as pool:
            texts = list(pool.map(
                lambda i: backend.generate(Prompt("completion", text=f"story {i}"),
                                           Decoding()).text, range(16)))
        assert texts == [backend.generate(Prompt("completion", text=f"story {i}"),
                                          Decoding()).text for i in range(16)]
        (thread,) = set(_loop_threads()) - before  # one private loop for all 8 threads
    finally:
        backend.close()
    assert not thread.is_alive()  # closed: its thread has ended
    assert fault_server.total_requests == 32


def test_closing_leaves_no_open_session_and_a_dropped_client_stops_its_thread(
        fault_server: Any) -> None:
    gc.collect()  # clients dropped by earlier tests stop their threads
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend = _backend(fault_server)
        backend.generate(PROMPT, Decoding())
        backend.close()
        backend.close()  # twice is harmless
        before = set(_loop_threads())
        dropped = ServerClient(fault_server.base_url, timeout=5)
        dropped.call("GET", fault_server.base_url + "/models", where="probe", check=False)
        (thread,) = set(_loop_threads()) - before  # the dropped client's own loop thread
        del dropped
        gc.collect()
        thread.join(timeout=5)
        assert not thread.is_alive()
        backend = _backend(fault_server)  # a closed client's backend can be used again
        assert backend.generate(PROMPT, Decoding()).text.startswith("echo: ")
        backend.close()
        gc.collect()
    assert not [w for w in caught if "nclosed" in str(w.message)], caught


def test_a_synchronous_call_from_its_own_loop_is_refused(fault_server: Any) -> None:
    client = ServerClient(fault_server.base_url, timeout=5)

    async def nested() -> None:
        client.call("GET", fault_server.base_url + "/models", where="probe")

    try:
        with pytest.raises(RuntimeError, match="its own event loop"):
            client.run(nested())
    finally:
        client.close()


def test_the_batch_api_retries_failures_as_the_sdk_did(server: Any, tmp_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    backend = make_batch_backend(server, tmp_path, max_retries=2)
    try:
        bid = backend.submit_batch(items(2), DEC)

        def polls() -> list[int]:
            return [status for method, path, status in server.http_log
                    if method == "GET" and path.endswith(f"/batches/{bid}")]

        server.fail_next_retrieves(2, status=500)
        assert backend.poll_batch(bid).status  # two 500s, then the answer
        assert polls() == [500, 500, 200]
        server.fail_next_retrieves(3, status=503)
        with pytest.raises(BackendError) as info:  # 1 + max_retries tries
            backend.poll_batch(bid)
        assert info.value.status_code == 503 and not info.value.permanent
        assert polls()[3:] == [503, 503, 503]
        with pytest.raises(BackendError) as info:  # a 404 is not retried
            backend.poll_batch("batch-gone")
        assert info.value.error_class == "NotFoundError" and info.value.permanent
        assert [s for m, p, s in server.http_log if p.endswith("batch-gone")] == [404]
    finally:
        backend.close()
