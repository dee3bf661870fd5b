"""The OpenAI Batch API backend and the batch runner, over real HTTP (the official ``openai``
client) against the Files + Batches emulator in tests/servers/batch_server.py."""

from __future__ import annotations

import base64
import importlib.util
import json
import pickle
import sys
from pathlib import Path

import pytest

from copyprobe.generation.base import BACKENDS, BackendError, BatchItem, Completion, Decoding
from copyprobe.generation.batch_runner import (
    BatchStateError,
    load_state,
    run_batch,
    split_batches,
    write_state,
)
from copyprobe.generation.openai_api import OpenAIBackend
from copyprobe.generation.openai_batch import OpenAIBatchBackend
from copyprobe.prompt import Prompt


def _load_server_module():
    name = "copyprobe_test_batch_server"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "servers" / "batch_server.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


bs = _load_server_module()
BatchServer, Outcome = bs.BatchServer, bs.Outcome

KEY = "sk-test-PLANTED-7f3a9c01d2e4b5a6"
KEY_ENV = "COPYPROBE_TEST_BATCH_KEY"
DEC = Decoding(temperature=0.0, top_p=1.0, max_tokens=64, seed=11)


@pytest.fixture
def server():
    with BatchServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture(autouse=True)
def planted_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def make_backend(server, tmp_path, **extra) -> OpenAIBatchBackend:
    spec = {"backend": "openai_batch", "model_id": "gpt-test-2025-01-01",
            "base_url": server.base_url, "api_key_env": KEY_ENV,
            "batch_dir": str(tmp_path / "batches"), "max_retries": 0, "request_timeout": 10,
            **extra}
    return OpenAIBatchBackend.from_config(spec, None)


def chat(i: int) -> Prompt:
    return Prompt("chat", messages=(
        {"role": "system", "content": "Continue the text."},
        {"role": "user", "content": f"the river number {i} rises in the hills"},
        {"role": "assistant", "content": "and flows"},
        {"role": "user", "content": f"south past town {i} to the sea"},
    ))


def completion(i: int) -> Prompt:
    return Prompt("completion", text=f"Once upon a time, story {i} began")


def items(n: int, fmt: str = "chat", prefix: str = "k") -> list[BatchItem]:
    make = chat if fmt == "chat" else completion
    tag = "c" if fmt == "chat" else "p"
    return [BatchItem(custom_id=f"{prefix}{tag}{i:03d}", prompt=make(i)) for i in range(n)]


def expected_text(prompt: Prompt) -> str:
    if prompt.format == "chat":
        return "echo: " + prompt.messages[-1]["content"][::-1]
    return "echo: " + prompt.text[::-1]


def run(pending, backend, state_path, **kw):
    kw.setdefault("poll_interval", 0.0)
    kw.setdefault("sleep", lambda s: None)
    return run_batch(pending, backend=backend, decoding=DEC, state_path=state_path, **kw)


def all_text_under(path: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in sorted(path.rglob("*")) if p.is_file())


# -- the full flow ---------------------------------------------------------------------------
def test_full_flow_maps_every_answer_by_custom_id(tmp_path):
    with BatchServer(api_key=KEY, reverse_output=True,
                     progression=("in_progress", "finalizing")) as server:
        backend = make_backend(server, tmp_path)
        pending = items(4, "chat") + items(3, "completion")
        seen = []
        out = run(pending, backend, tmp_path / "state.json", on_progress=seen.append)
        assert set(out) == {it.custom_id for it in pending}
        for it in pending:
            res = out[it.custom_id]
            assert isinstance(res, Completion), res
            assert res.text == expected_text(it.prompt)  # mapped by id despite reversed output
            assert res.finish_reason == "stop"
            assert res.completion_tokens == len(res.text.split())
            assert res.prompt_tokens and res.prompt_tokens > 0
        # chat and completion prompts need different endpoints: two batches, nothing twice
        assert server.batches_created == 2 and server.files_uploaded == 2
        assert not server.duplicates()
        assert {b["endpoint"] for b in server.batches.values()} == {"/v1/chat/completions",
                                                                    "/v1/completions"}
        assert [s.status for s in seen if s.done] == ["completed", "completed"]
        assert {"in_progress", "finalizing"} <= {s.status for s in seen}

        body = server.bodies["kc000"][0]
        assert body["model"] == "gpt-test-2025-01-01"
        assert body["messages"] == [dict(m) for m in chat(0).messages]
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
            0.0, 1.0, 64, 11)
        assert server.bodies["kp000"][0]["prompt"] == completion(0).text
        assert "messages" not in server.bodies["kp000"][0]

        # the state file: both batches recorded, finished, with their status history
        state = load_state(tmp_path / "state.json")
        assert state["backend"] == "openai_batch" and state["model_id"] == "gpt-test-2025-01-01"
        assert len(state["batches"]) == 2
        for entry in state["batches"]:
            assert entry["finished"] and entry["status"] == "completed"
            assert entry["outcome"]["answered"] == entry["requests"]
            assert [h["status"] for h in entry["history"]] == ["in_progress", "finalizing",
                                                                "completed"]
        assert sorted(c for e in state["batches"] for c in e["custom_ids"]) == sorted(out)

        # the JSONL copy on disk is exactly what was uploaded; raw outputs are kept too
        batch_dir = tmp_path / "batches"
        for bid, batch in server.batches.items():
            copy = batch_dir / f"{bid}.input.jsonl"
            assert copy.read_bytes() == server.file_data[batch["input_file_id"]]
            assert (batch_dir / f"{bid}.output.jsonl").is_file()
            meta = json.loads((batch_dir / f"{bid}.json").read_text())
            assert meta["batch_id"] == bid and meta["input_file_id"] == batch["input_file_id"]
        lines = [json.loads(x) for x in (batch_dir / f"{state['batches'][0]['batch_id']}"
                                         ".input.jsonl").read_text().splitlines()]
        assert {tuple(sorted(x)) for x in lines} == {("body", "custom_id", "method", "url")}
        assert all(x["method"] == "POST" for x in lines)
        assert server.batches[state["batches"][0]["batch_id"]]["metadata"]["tool"] == "copyprobe"


def test_sample_index_moves_the_seed(server, tmp_path):
    backend = make_backend(server, tmp_path)
    pending = [BatchItem("s0", chat(1), 0), BatchItem("s1", chat(1), 1),
               BatchItem("s2", chat(1), 2)]
    out = run(pending, backend, tmp_path / "state.json")
    assert all(isinstance(r, Completion) for r in out.values())
    assert [server.bodies[c][0]["seed"] for c in ("s0", "s1", "s2")] == [11, 12, 13]


def test_duplicate_pending_ids_are_sent_once(server, tmp_path):
    backend = make_backend(server, tmp_path)
    pending = items(3) + items(3)
    out = run(pending, backend, tmp_path / "state.json")
    assert len(out) == 3 and not server.duplicates()


def test_max_completion_tokens_param(server, tmp_path):
    backend = make_backend(server, tmp_path, max_tokens_param="max_completion_tokens")
    run(items(1) + items(1, "completion"), backend, tmp_path / "state.json")
    body = server.bodies["kc000"][0]
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body
    assert server.bodies["kp000"][0]["max_tokens"] == 64  # /completions has only max_tokens


def test_file_images_are_inlined_as_data_urls(server, tmp_path):
    png = tmp_path / "page.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake image bytes \x00\xff")
    prompt = Prompt("chat", messages=({"role": "user", "content": [
        {"type": "text", "text": "Transcribe the page."},
        {"type": "image_url", "image_url": {"url": png.as_uri()}}]},))
    backend = make_backend(server, tmp_path)
    out = run([BatchItem("img", prompt)], backend, tmp_path / "state.json")
    assert out["img"].text == "echo: " + "Transcribe the page."[::-1]
    url = server.bodies["img"][0]["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png.read_bytes()


# -- per-request errors ----------------------------------------------------------------------
def test_per_request_errors_are_mapped(server, tmp_path):
    pending = items(8)
    ids = [it.custom_id for it in pending]
    for cid, kind in zip(ids, ["429", "500", "context", "400", "content_filter",
                               "expired_line", "malformed", "drop"], strict=True):
        server.fail(cid, kind)
    extra = items(2, prefix="ok")
    out = run(pending + extra, make_backend(server, tmp_path), tmp_path / "state.json")

    def check(cid, cls, permanent, status=None):
        err = out[cid]
        assert isinstance(err, BackendError), (cid, err)
        assert (err.error_class, err.permanent) == (cls, permanent), (cid, str(err))
        assert err.status_code == status

    check(ids[0], "RateLimitError", False, 429)
    check(ids[1], "ServerError", False, 500)
    check(ids[2], "ContextLengthError", True, 400)
    check(ids[3], "BadRequestError", True, 400)
    check(ids[4], "ContentFilterError", True, 400)
    check(ids[5], "BatchExpired", False)
    check(ids[6], "MalformedResponse", False, 200)
    check(ids[7], "MissingResult", False)
    assert "maximum context length" in str(out[ids[2]])
    assert all(isinstance(out[it.custom_id], Completion) for it in extra)
    entry = load_state(tmp_path / "state.json")["batches"][0]
    assert entry["finished"] and entry["outcome"]["answered"] == 2
    assert entry["outcome"]["missing"] == 1 and entry["outcome"]["errors"] == 7


# -- kill and resume -------------------------------------------------------------------------
def test_kill_after_submit_resumes_polling_without_resubmitting(tmp_path):
    state_path = tmp_path / "state.json"
    with BatchServer(api_key=KEY, progression=("in_progress",) * 4) as server:
        pending = items(5)
        with pytest.raises(TimeoutError) as info:
            run(pending, make_backend(server, tmp_path), state_path, timeout=0)
        batch_id = next(iter(server.batches))
        assert batch_id in str(info.value) and str(state_path) in str(info.value)
        assert server.batches_created == 1
        state = load_state(state_path)
        assert [e["batch_id"] for e in state["batches"]] == [batch_id]
        assert not state["batches"][0]["finished"]
        assert sorted(state["batches"][0]["custom_ids"]) == sorted(i.custom_id for i in pending)

        # a new process: a fresh backend object with no memory of the submission
        out = run(pending, make_backend(server, tmp_path), state_path)
        assert server.batches_created == 1 and server.files_uploaded == 1
        assert not server.duplicates()
        assert all(isinstance(out[i.custom_id], Completion) for i in pending)
        assert load_state(state_path)["batches"][0]["finished"]


def test_killed_while_sleeping_resumes(tmp_path):
    """A kill (here KeyboardInterrupt) at any point after the submission never resubmits."""
    state_path = tmp_path / "state.json"
    with BatchServer(api_key=KEY, progression=("in_progress",) * 3) as server:
        pending = items(3) + items(2, "completion")

        def killed(_seconds):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run(pending, make_backend(server, tmp_path), state_path, sleep=killed)
        assert server.batches_created == 2
        out = run(pending, make_backend(server, tmp_path), state_path)
        assert server.batches_created == 2 and not server.duplicates()
        assert all(isinstance(r, Completion) for r in out.values()) and len(out) == 5


def test_resume_submits_only_requests_the_recorded_batch_lacks(tmp_path):
    state_path = tmp_path / "state.json"
    with BatchServer(api_key=KEY, progression=("in_progress",) * 3) as server:
        first = items(3)
        with pytest.raises(TimeoutError):
            run(first, make_backend(server, tmp_path), state_path, timeout=0)
        more = first + items(2, prefix="new")
        out = run(more, make_backend(server, tmp_path), state_path)
        assert server.batches_created == 2 and not server.duplicates()
        second = list(server.batches)[1]
        assert sorted(json.loads(x)["custom_id"] for x in server.file_data[
            server.batches[second]["input_file_id"]].decode().splitlines()) == ["newc000",
                                                                                "newc001"]
        assert all(isinstance(out[i.custom_id], Completion) for i in more)
        assert len(load_state(state_path)["batches"]) == 2


def test_timeout_after_some_batches_ended_loses_no_paid_answer(tmp_path):
    """Batch 1 ends and is fetched, batch 2 is still running when the timeout hits: the rerun
    fetches batch 1's answers again instead of resubmitting them."""
    state_path = tmp_path / "state.json"
    with BatchServer(api_key=KEY) as server:
        server.script_batches(Outcome(progression=()),
                              Outcome(progression=("in_progress",) * 3))
        pending = items(3) + items(2, "completion")
        with pytest.raises(TimeoutError) as info:
            run(pending, make_backend(server, tmp_path), state_path, timeout=0)
        first, second = list(server.batches)
        assert second in str(info.value) and first not in str(info.value)
        state = load_state(state_path)
        assert [e["finished"] for e in state["batches"]] == [True, False]
        assert state["batches"][0]["retry_ids"] == []

        out = run(pending, make_backend(server, tmp_path), state_path)
        assert server.batches_created == 2 and not server.duplicates()
        assert all(isinstance(out[i.custom_id], Completion) for i in pending)
        assert out["kc001"].text == expected_text(chat(1))

        # and once more (a caller that lost everything): fetched again, nothing resubmitted
        out = run(pending, make_backend(server, tmp_path), state_path)
        assert server.batches_created == 2
        assert all(isinstance(r, Completion) for r in out.values())


def test_finished_batch_whose_files_are_gone_is_resubmitted(server, tmp_path):
    state_path = tmp_path / "state.json"
    pending = items(2)
    run(pending, make_backend(server, tmp_path), state_path)
    batch = server.batches[next(iter(server.batches))]
    del server.files[batch["output_file_id"]], server.file_data[batch["output_file_id"]]
    out = run(pending, make_backend(server, tmp_path), state_path)
    assert server.batches_created == 2
    assert all(isinstance(r, Completion) for r in out.values())
    state = load_state(state_path)
    assert state["batches"][0]["results_gone"] and state["batches"][1]["finished"]


def test_timeout_is_measured_on_the_clock(server, tmp_path):
    server.progression = ("in_progress",) * 100
    now = [0.0]

    def sleep(s):
        now[0] += s

    with pytest.raises(TimeoutError):
        run(items(2), make_backend(server, tmp_path), tmp_path / "state.json",
            poll_interval=30.0, timeout=95.0, sleep=sleep, clock=lambda: now[0])
    assert now[0] == pytest.approx(95.0)
    assert server.retrieves == 5  # at 0, 30, 60, 90 and 95 s


# -- failed and expired batches --------------------------------------------------------------
def test_expired_batch_keeps_partial_answers_and_resubmits_only_the_rest(server, tmp_path):
    state_path = tmp_path / "state.json"
    server.script_batches(Outcome("expired", answered=2))
    pending = items(5)
    out = run(pending, make_backend(server, tmp_path), state_path)
    answered = [c for c, r in out.items() if isinstance(r, Completion)]
    unanswered = [c for c, r in out.items() if not isinstance(r, Completion)]
    assert len(answered) == 2 and len(unanswered) == 3
    for cid in unanswered:
        assert not out[cid].permanent and out[cid].error_class == "BatchExpired"
    entry = load_state(state_path)["batches"][0]
    assert entry["finished"] and entry["status"] == "expired"
    assert entry["outcome"]["answered"] == 2 and entry["outcome"]["failed"]

    # the caller caches the answers and runs again with what is still pending
    rest = [it for it in pending if it.custom_id in unanswered]
    out2 = run(rest, make_backend(server, tmp_path), state_path)
    assert server.batches_created == 2
    second = server.batches[list(server.batches)[1]]
    sent = [json.loads(x)["custom_id"] for x in
            server.file_data[second["input_file_id"]].decode().splitlines()]
    assert sorted(sent) == sorted(unanswered)
    assert all(isinstance(out2[c], Completion) for c in unanswered)
    assert all(server.requests_per_custom_id[c] == 1 for c in answered)
    assert len(load_state(state_path)["batches"]) == 2


def test_expired_batch_without_error_lines_gives_missing_results(server, tmp_path):
    server.script_batches(Outcome("expired", answered=1, error_lines=False))
    out = run(items(3), make_backend(server, tmp_path), tmp_path / "state.json")
    errs = [r for r in out.values() if isinstance(r, BackendError)]
    assert len(errs) == 2
    assert all(e.error_class == "MissingResult" and not e.permanent for e in errs)
    assert all("expired" in str(e) for e in errs)


def test_cancelled_batch_gives_transient_errors(server, tmp_path):
    server.script_batches(Outcome("cancelled", answered=1))
    out = run(items(3), make_backend(server, tmp_path), tmp_path / "state.json")
    errs = [r for r in out.values() if isinstance(r, BackendError)]
    assert len(errs) == 2 and all(e.error_class == "BatchCancelled" for e in errs)
    assert not any(e.permanent for e in errs)


def test_failed_batch_returns_transient_errors_and_is_finished(server, tmp_path):
    state_path = tmp_path / "state.json"
    server.script_batches(Outcome("failed", error_message="Scripted validation failure"))
    pending = items(3)
    out = run(pending, make_backend(server, tmp_path), state_path)
    for res in out.values():
        assert isinstance(res, BackendError) and not res.permanent
        assert res.error_class == "MissingResult"
        assert "Scripted validation failure" in str(res)
    entry = load_state(state_path)["batches"][0]
    assert entry["finished"] and entry["status"] == "failed"
    assert entry["history"][-1]["message"].endswith("Scripted validation failure")
    out2 = run(pending, make_backend(server, tmp_path), state_path)
    assert server.batches_created == 2
    assert all(isinstance(r, Completion) for r in out2.values())


def test_transient_poll_errors_are_tolerated(server, tmp_path):
    server.fail_next_retrieves(3, status=500)
    out = run(items(2), make_backend(server, tmp_path), tmp_path / "state.json")
    assert all(isinstance(r, Completion) for r in out.values())
    assert server.batches_created == 1


def test_unknown_recorded_batch_is_a_permanent_error(server, tmp_path):
    state_path = tmp_path / "state.json"
    pending = items(2)
    write_state(state_path, {"version": 1, "backend": "openai_batch",
                             "model_id": "gpt-test-2025-01-01", "batches": [
                                 {"batch_id": "batch-gone", "custom_ids": ["kc000", "kc001"],
                                  "requests": 2, "status": "in_progress", "finished": False,
                                  "history": []}]})
    with pytest.raises(BackendError) as info:
        run(pending, make_backend(server, tmp_path), state_path)
    assert info.value.permanent and info.value.error_class == "NotFoundError"
    assert "batch-gone" in str(info.value)
    assert server.batches_created == 0  # never resubmitted behind the user's back


def test_state_of_another_model_or_damaged_is_refused(server, tmp_path):
    state_path = tmp_path / "state.json"
    write_state(state_path, {"version": 1, "backend": "openai_batch", "model_id": "other",
                             "batches": []})
    with pytest.raises(BatchStateError, match="other"):
        run(items(1), make_backend(server, tmp_path), state_path)
    state_path.write_text("{not json")
    with pytest.raises(BatchStateError, match="damaged"):
        run(items(1), make_backend(server, tmp_path), state_path)
    assert server.batches_created == 0


def test_a_second_process_on_the_same_state_is_refused(server, tmp_path):
    fcntl = pytest.importorskip("fcntl")
    state_path = tmp_path / "state.json"
    with open(str(state_path) + ".lock", "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        with pytest.raises(BatchStateError, match="another process"):
            run(items(1), make_backend(server, tmp_path), state_path)
    assert server.batches_created == 0


# -- splitting -------------------------------------------------------------------------------
def test_large_inputs_are_split_by_count_and_bytes(server, tmp_path):
    backend = make_backend(server, tmp_path)
    pending = items(5)
    out = run(pending, backend, tmp_path / "a.json", max_requests_per_batch=2)
    assert server.batches_created == 3 and len(out) == 5
    sizes = [server.batches[b]["request_counts"]["total"] for b in server.batches]
    assert sizes == [2, 2, 1]

    line = len(backend.batch_line(items(1, prefix="z")[0], DEC))
    pending = items(6, prefix="b")
    out = run(pending, backend, tmp_path / "b.json", max_file_bytes=int(line * 2.5))
    new = list(server.batches)[3:]
    assert len(new) == 3
    for bid in new:
        assert len(server.file_data[server.batches[bid]["input_file_id"]]) <= line * 2.5
    assert all(isinstance(r, Completion) for r in out.values()) and not server.duplicates()


def test_split_batches_limits():
    its = items(7)
    chunks = split_batches(its, max_requests=3, max_bytes=10**9, size_of=lambda it: 10)
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert [i for c in chunks for i in c] == its
    chunks = split_batches(its, max_requests=100, max_bytes=25, size_of=lambda it: 10)
    assert [len(c) for c in chunks] == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="alone"):
        split_batches(its, max_requests=100, max_bytes=5, size_of=lambda it: 10)


def test_backend_refuses_batches_over_the_service_limits(server, tmp_path):
    backend = make_backend(server, tmp_path)
    backend.max_requests_per_batch = 2
    with pytest.raises(ValueError, match="limit"):
        backend.submit_batch(items(3), DEC)
    with pytest.raises(ValueError, match="endpoint"):
        backend.submit_batch(items(1) + items(1, "completion"), DEC)
    assert server.files_uploaded == 0


# -- credentials -----------------------------------------------------------------------------
def test_api_key_never_appears_on_disk_or_in_errors(server, tmp_path, monkeypatch):
    state_path = tmp_path / "state.json"
    server.fail("kc001", "400")
    server.progression = ("in_progress",) * 3
    backend = make_backend(server, tmp_path)
    assert KEY not in repr(vars(backend))
    with pytest.raises(TimeoutError) as timeout_info:
        run(items(3), backend, state_path, timeout=0)
    out = run(items(3), backend, state_path)
    assert server.auth_failures == 0  # the planted key was read from the environment
    messages = [str(timeout_info.value)] + [str(r) for r in out.values()
                                            if isinstance(r, BackendError)]
    assert len(messages) == 2
    on_disk = all_text_under(tmp_path)
    assert "kc000" in on_disk and "gpt-test-2025-01-01" in on_disk
    assert KEY not in on_disk and KEY not in "\n".join(messages)
    assert KEY not in repr(vars(backend))
    assert KEY.encode() not in pickle.dumps(backend)

    # the key is read at call time: a rotated key is used at once (and rejected here)
    monkeypatch.setenv(KEY_ENV, "sk-test-ROTATED-KEY-0000")
    with pytest.raises(BackendError) as info:
        backend.poll_batch(next(iter(server.batches)))
    assert info.value.permanent and info.value.error_class == "AuthError"
    assert info.value.status_code == 401
    assert "ROTATED" not in str(info.value) and KEY not in str(info.value)
    assert server.auth_failures == 1

    # an unset variable is named, and nothing is sent
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BackendError) as info:
        backend.submit_batch(items(1, prefix="x"), DEC)
    assert info.value.permanent and KEY_ENV in str(info.value)
    assert server.files_uploaded == 1


def test_key_echoed_by_a_server_is_scrubbed(tmp_path):
    backend = OpenAIBatchBackend(model_id="m", base_url="http://127.0.0.1:9/v1",
                                 api_key_env=KEY_ENV)
    assert backend._scrub(f"bad key {KEY}") == "bad key ***"


# -- identity, registry, interface -----------------------------------------------------------
def test_identity_is_shared_with_the_sync_backend():
    spec = {"backend": "openai_batch", "model_id": "gpt-4o-mini-2024-07-18",
            "base_url": "https://user:secret@api.example.com:8443/v1/?api-key=zz",
            "revision": "2024-07-18", "api_key_env": "SOME_KEY", "batch_dir": "/tmp/x",
            "completion_window": "24h"}
    ident = OpenAIBatchBackend.identity_from_config(spec, None)
    assert ident == OpenAIBackend.identity_from_config(dict(spec, backend="openai"), None)
    assert set(ident) == {"model_id", "base_url", "revision", "openai"}  # no "api" key
    assert ident["base_url"] == "https://api.example.com:8443/v1"
    assert "secret" not in json.dumps(ident) and "zz" not in json.dumps(ident)
    # batch-only settings do not change the identity (same model, same answers)
    plain = dict(spec, batch_dir=None, api_key_env="OTHER")
    assert OpenAIBatchBackend.identity_from_config(plain, None) == ident
    assert OpenAIBatchBackend.cache_namespace == "openai"
    assert BACKENDS.get("openai_batch") is OpenAIBatchBackend
    assert OpenAIBatchBackend.supports_batch_api


def test_unsupported_decoding_is_refused_before_upload(server, tmp_path):
    backend = make_backend(server, tmp_path)
    with pytest.raises(BackendError) as info:
        backend.submit_batch(items(1), Decoding(top_k=40))
    assert info.value.permanent and info.value.error_class == "UnsupportedDecoding"
    assert server.files_uploaded == 0


def test_generate_points_to_the_batch_interface(tmp_path):
    backend = OpenAIBatchBackend(model_id="m", api_key_env=KEY_ENV)
    with pytest.raises(BackendError) as info:
        backend.generate(chat(0), DEC)
    assert info.value.permanent


def test_missing_model_id_is_a_config_error():
    with pytest.raises(BackendError):
        OpenAIBatchBackend.from_config({"backend": "openai_batch"}, None)
    with pytest.raises(BackendError):
        OpenAIBatchBackend.identity_from_config({"backend": "openai_batch"}, None)


def test_poll_status_mapping(server, tmp_path):
    server.progression = ("in_progress", "finalizing")
    backend = make_backend(server, tmp_path)
    bid = backend.submit_batch(items(2), DEC)
    s1, s2, s3 = (backend.poll_batch(bid) for _ in range(3))
    assert (s1.status, s1.done) == ("in_progress", False)
    assert (s2.status, s2.done) == ("finalizing", False)
    assert (s3.status, s3.done, s3.failed, s3.completed, s3.total) == (
        "completed", True, False, 2, 2)
    got = backend.fetch_batch(bid)
    assert set(got) == {"kc000", "kc001"}


def test_runner_batch_path_resumes_and_shares_the_cache_with_the_sync_api(server, tmp_path):
    """Through run_generation: one batch per run, its answers cached; a rerun submits nothing;
    the synchronous openai backend on the same model reuses the batch's answers."""
    import pandas as pd

    from copyprobe.generation import (
        GenerationCache,
        RunSettings,
        backend_identity,
        build_backend,
        run_generation,
    )

    prompts = pd.DataFrame({
        "request_id": [f"r{i}" for i in range(4)], "status": "ready",
        "prompt": [chat(i).to_json() for i in range(4)], "reference": None})
    cache = GenerationCache(tmp_path / "cache")

    def run(backend: str):
        spec = {"name": "m", "backend": backend, "model_id": "gpt-test-2025-01-01",
                "base_url": server.base_url, "api_key_env": KEY_ENV, "request_timeout": 10}
        return run_generation(
            prompts, model="m", backend_name=backend, identity=backend_identity(spec, None),
            backend_factory=lambda: build_backend(spec, None), decoding=DEC, cache=cache,
            settings=RunSettings(batch_poll_interval=0.01), state_dir=tmp_path / "state")

    df, summary = run("openai_batch")
    assert (df["status"] == "ok").all() and summary.model_calls == 4
    assert (df["backend"] == "openai_batch").all() and server.batches_created == 1
    _, again = run("openai_batch")
    assert again.cache_hits == 4 and server.batches_created == 1
    sync_df, sync = run("openai")
    assert sync.cache_hits == 4 and sync.model_calls == 0
    assert list(sync_df["text"]) == list(df["text"])
