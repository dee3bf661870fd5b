"""Submit, resume, poll and fetch batches of a batch service (``Backend.supports_batch_api``).

Reference: docs/backends.md.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from copyprobe.generation.base import (
    Backend,
    BackendError,
    BatchItem,
    BatchStatus,
    Completion,
    Decoding,
)
from copyprobe.store import atomic_write_json

log = logging.getLogger(__name__)

STATE_VERSION = 1
#: OpenAI's limits for one batch input file (backends may set lower ones as attributes).
MAX_REQUESTS_PER_BATCH = 50_000
MAX_BATCH_FILE_BYTES = 200 * 1024 * 1024
#: consecutive transient errors while polling or fetching before run_batch gives up
MAX_CONSECUTIVE_ERRORS = 10

Result = Completion | BackendError


class BatchStateError(RuntimeError):
    """The state file cannot be used (another model, damaged, locked by another process)."""


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def load_state(state_path: Path) -> dict[str, Any] | None:
    """The state file's content, or None when there is none."""
    try:
        with Path(state_path).open(encoding="utf-8") as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        # Never guess: a damaged state file may name paid batches that must not be resubmitted.
        raise BatchStateError(f"batch state file {state_path} is damaged ({exc}); inspect it "
                              f"(its batch ids may still be running) before removing it") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise BatchStateError(f"batch state file {state_path} has an unknown format")
    return state


def write_state(state_path: Path, state: dict[str, Any]) -> None:
    """Write the state atomically and durably (temporary file, fsync, rename)."""
    state["updated_at"] = _now()
    atomic_write_json(state_path, state, durable=True, indent=1)


@contextmanager
def _locked(state_path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock_path = Path(str(state_path) + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BatchStateError(f"another process is driving the batches of {state_path}"
                                  ) from None
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def split_batches(items: Sequence[BatchItem], *, max_requests: int, max_bytes: int,
                  size_of: Callable[[BatchItem], int] | None = None) -> list[list[BatchItem]]:
    """Split ``items`` (in order) into chunks of at most ``max_requests`` requests and
    ``max_bytes`` bytes of input file (``size_of(item)`` bytes per request line)."""
    chunks: list[list[BatchItem]] = []
    cur: list[BatchItem] = []
    cur_bytes = 0
    for it in items:
        size = size_of(it) if size_of is not None else 0
        if size > max_bytes:
            raise ValueError(f"request {it.custom_id} alone ({size} bytes) exceeds the batch "
                             f"file limit of {max_bytes} bytes")
        if cur and (len(cur) >= max_requests or cur_bytes + size > max_bytes):
            chunks.append(cur)
            cur, cur_bytes = [], 0
        cur.append(it)
        cur_bytes += size
    if cur:
        chunks.append(cur)
    return chunks


def _size_fn(backend: Backend, decoding: Decoding) -> Callable[[BatchItem], int] | None:
    line = getattr(backend, "batch_line", None)
    if callable(line):
        return lambda it: len(line(it, decoding))
    # unknown request encoding: estimate from the prompt with room for the envelope
    return lambda it: len(it.prompt.to_json().encode()) + 1024


def _fetch(backend: Backend, batch_id: str, expected: list[str]) -> dict[str, Result]:
    # backends that can name the requests missing from both result files take expected_ids
    if "expected_ids" in inspect.signature(backend.fetch_batch).parameters:
        return backend.fetch_batch(batch_id, expected_ids=expected)  # type: ignore[call-arg]
    return backend.fetch_batch(batch_id)


def run_batch(
    pending: list[BatchItem],
    *,
    backend: Backend,
    decoding: Decoding,
    state_path: Path,
    poll_interval: float = 30.0,
    timeout: float | None = None,
    on_progress: Callable[[BatchStatus], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    max_requests_per_batch: int | None = None,
    max_file_bytes: int | None = None,
) -> dict[str, Result]:
    """Answer ``pending`` through the backend's batch service, resuming recorded batches.

    Returns one entry per distinct pending ``custom_id``: a :class:`Completion` or a
    :class:`BackendError` (transient for requests a failed or expired batch did not answer, so
    the caller resubmits them on its next run). ``timeout`` (seconds of polling) raises
    :class:`TimeoutError` naming the batch ids, which stay resumable from ``state_path``.
    ``on_progress`` receives every polled :class:`BatchStatus`.
    """
    if not getattr(backend, "supports_batch_api", False):
        raise ValueError(f"backend {backend.name!r} has no batch interface")
    state_path = Path(state_path)
    items: dict[str, BatchItem] = {}
    for it in pending:
        items.setdefault(it.custom_id, it)
    if not items:
        return {}
    model_id = str(getattr(backend, "model_id", ""))
    max_n = int(max_requests_per_batch or getattr(backend, "max_requests_per_batch", 0)
                or MAX_REQUESTS_PER_BATCH)
    max_b = int(max_file_bytes or getattr(backend, "max_batch_file_bytes", 0)
                or MAX_BATCH_FILE_BYTES)

    with _locked(state_path):
        state = load_state(state_path)
        if state is None:
            state = {"version": STATE_VERSION, "backend": backend.name, "model_id": model_id,
                     "created_at": _now(), "batches": []}
        elif state.get("backend") != backend.name or state.get("model_id") != model_id:
            raise BatchStateError(
                f"batch state file {state_path} belongs to {state.get('backend')}/"
                f"{state.get('model_id')}, not {backend.name}/{model_id}")

        # 1. resume: unfinished batches covering pending requests are polled; finished ones
        #    that answered pending requests are fetched again (free) rather than resubmitted:
        #    the caller may have lost those answers (a timeout after some batches were
        #    fetched, a kill before it stored them)
        results: dict[str, Result] = {}
        covered: set[str] = set()
        active: list[dict[str, Any]] = []
        for entry in state["batches"]:
            mine = set(entry["custom_ids"]) & items.keys()
            if entry.get("finished"):
                reuse = mine - set(entry.get("retry_ids") or ())
                if reuse and not entry.get("results_gone"):
                    got = _refetch(backend, entry, state_path, sleep, poll_interval)
                    if got is None:
                        write_state(state_path, state)  # results_gone recorded
                        continue
                    for cid in reuse:
                        if isinstance(got.get(cid), Completion):
                            results[cid] = got[cid]
                            covered.add(cid)
                    log.info("fetched %d answer(s) again from finished batch %s",
                             len(reuse), entry["batch_id"])
                continue
            if not mine:
                log.warning("batch %s in %s covers none of the pending requests; left alone",
                            entry["batch_id"], state_path)
                continue
            covered |= mine
            active.append(entry)
            log.info("resuming batch %s (%d of its requests pending)", entry["batch_id"],
                     len(mine))

        # 2. submit what no unfinished batch covers; record each id before anything else
        todo = [it for cid, it in items.items() if cid not in covered]
        if todo:
            by_format: dict[str, list[BatchItem]] = {}
            for it in todo:
                by_format.setdefault(it.prompt.format, []).append(it)
            size_of = _size_fn(backend, decoding)
            for group in by_format.values():
                for chunk in split_batches(group, max_requests=max_n, max_bytes=max_b,
                                           size_of=size_of):
                    batch_id = backend.submit_batch(chunk, decoding)
                    entry = {"batch_id": batch_id, "custom_ids": [it.custom_id for it in chunk],
                             "requests": len(chunk), "decoding": decoding.as_dict(),
                             "submitted_at": _now(), "status": "submitted",
                             "finished": False, "finished_at": None, "outcome": None,
                             "history": []}
                    state["batches"].append(entry)
                    write_state(state_path, state)
                    active.append(entry)
                    log.info("submitted batch %s (%d requests)", batch_id, len(chunk))

        # 3. poll until every active batch has ended, fetching each as it ends
        start = clock()
        errors = 0
        waiting = list(active)
        while waiting:
            still: list[dict[str, Any]] = []
            for entry in waiting:
                try:
                    status = backend.poll_batch(entry["batch_id"])
                    if status.done:
                        got = _fetch(backend, entry["batch_id"], entry["custom_ids"])
                except BackendError as exc:
                    if exc.permanent:
                        raise BackendError(f"batch {entry['batch_id']}: {exc} (the batch stays "
                                           f"recorded in {state_path})", permanent=True,
                                           error_class=exc.error_class,
                                           status_code=exc.status_code) from exc
                    errors += 1
                    if errors >= MAX_CONSECUTIVE_ERRORS:
                        raise
                    log.warning("batch %s: %s (will retry)", entry["batch_id"], exc)
                    still.append(entry)
                    continue
                errors = 0
                if on_progress is not None:
                    on_progress(status)
                changed = _record_status(entry, status)
                if not status.done:
                    if changed:
                        write_state(state_path, state)
                    still.append(entry)
                    continue
                _finish(entry, status, got, results)
                write_state(state_path, state)
            waiting = still
            if not waiting:
                break
            elapsed = clock() - start
            if timeout is not None and elapsed >= timeout:
                ids = ", ".join(f"{e['batch_id']} ({e['status']})" for e in waiting)
                raise TimeoutError(
                    f"batch(es) {ids} not ended after {elapsed:.0f} s of polling; they remain "
                    f"recorded in {state_path}: run again with the same state file to resume "
                    f"polling them (nothing will be resubmitted)")
            wait = poll_interval if timeout is None else min(poll_interval, timeout - elapsed)
            sleep(max(0.0, wait))

    out: dict[str, Result] = {}
    for cid in items:
        out[cid] = results.get(cid) or BackendError(
            f"request {cid} was answered by no batch; it will be resubmitted",
            error_class="MissingResult")
    return out


def _refetch(backend: Backend, entry: dict[str, Any], state_path: Path,
             sleep: Callable[[float], None], poll_interval: float) -> dict[str, Result] | None:
    """The results of a finished batch, fetched again; None when the service no longer has
    them (the entry is then marked ``results_gone`` and its requests are resubmitted)."""
    errors = 0
    while True:
        try:
            return _fetch(backend, entry["batch_id"], entry["custom_ids"])
        except BackendError as exc:
            if exc.error_class == "NotFoundError":
                log.warning("results of finished batch %s are gone (%s); its requests will be "
                            "resubmitted", entry["batch_id"], exc)
                entry["results_gone"] = True
                return None
            errors += 1
            if exc.permanent or errors >= MAX_CONSECUTIVE_ERRORS:
                raise BackendError(f"batch {entry['batch_id']}: fetching its results again "
                                   f"failed: {exc} (recorded in {state_path})",
                                   permanent=exc.permanent, error_class=exc.error_class,
                                   status_code=exc.status_code) from exc
            log.warning("batch %s: %s (will retry)", entry["batch_id"], exc)
            sleep(poll_interval)


def _record_status(entry: dict[str, Any], status: BatchStatus) -> bool:
    """Append a status change to the entry's history; True when something changed."""
    if status.status == entry.get("status"):
        return False
    entry["status"] = status.status
    entry["history"].append({"at": _now(), "status": status.status,
                             "completed": status.completed, "total": status.total,
                             **({"message": status.message} if status.message else {})})
    return True


def _finish(entry: dict[str, Any], status: BatchStatus, got: dict[str, Result],
            results: dict[str, Result]) -> None:
    answered = errors = missing = 0
    for cid in entry["custom_ids"]:
        res = got.get(cid)
        if res is None:
            missing += 1
            res = BackendError(f"batch {entry['batch_id']} ended {status.status} without an "
                               f"answer for this request"
                               f"{f' ({status.message})' if status.message else ''}; it will be "
                               f"resubmitted", error_class="MissingResult")
        elif isinstance(res, Completion):
            answered += 1
        else:
            errors += 1
            if isinstance(res, BackendError) and res.error_class == "MissingResult":
                missing += 1
                errors -= 1
        results[cid] = res
    entry["finished"] = True
    entry["finished_at"] = _now()
    entry["retry_ids"] = [cid for cid in entry["custom_ids"]
                          if not isinstance(results[cid], Completion)]
    entry["outcome"] = {"answered": answered, "errors": errors, "missing": missing,
                        "failed": status.failed}
    log.info("batch %s ended %s: %d answered, %d errors, %d missing", entry["batch_id"],
             status.status, answered, errors, missing)


__all__ = ["BatchStateError", "load_state", "run_batch", "split_batches", "write_state"]
