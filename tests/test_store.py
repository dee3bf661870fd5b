"""copyprobe.store: atomic writes (a failed or killed writer leaves the old file), concurrent
writers of one key, the keyed layout, and keys that cover the content."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from copyprobe.store import (
    KeyedStore,
    atomic_open,
    atomic_path,
    atomic_write,
    atomic_write_json,
    content_key,
    move,
)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".tmp-*"))


def test_atomic_write_bytes_text_and_a_writer_function(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "a.bin"
    assert atomic_write(target, b"\x00\x01") == target  # the folder is made
    assert target.read_bytes() == b"\x00\x01"
    atomic_write(target, "ü\n")
    assert target.read_bytes() == "ü\n".encode()
    atomic_write(target, lambda tmp: Path(tmp).write_bytes(b"by function"), durable=True)
    assert target.read_bytes() == b"by function"
    atomic_write_json(tmp_path / "j.json", {"b": 1, "a": "é"}, sort_keys=True)
    assert (tmp_path / "j.json").read_text(encoding="utf-8") == '{"a": "é", "b": 1}'
    assert _leftovers(tmp_path) == []


def test_a_writer_that_raises_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    target.write_bytes(b"old complete content")

    def half_then_crash(tmp: Path) -> None:
        Path(tmp).write_bytes(b"half of the new")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(target, half_then_crash)
    assert target.read_bytes() == b"old complete content"
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(target) as f:
            f.write(b"first chunk")
            raise KeyboardInterrupt  # an interrupted stream: BaseException is handled too
    assert target.read_bytes() == b"old complete content"
    with pytest.raises(ValueError):
        with atomic_path(tmp_path / "never.txt") as tmp:
            tmp.write_text("x")
            raise ValueError
    assert not (tmp_path / "never.txt").exists()
    assert _leftovers(tmp_path) == []


def test_a_killed_writer_leaves_the_old_file_and_the_next_write_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text('{"batches": ["paid-1"]}')
    code = ("import os, sys\n"
            "from copyprobe.store import atomic_open\n"
            "with atomic_open(sys.argv[1]) as f:\n"
            "    f.write(b'{\"batches\": [\"pa'); f.flush()\n"
            "    os._exit(9)  # killed mid-write: no clean-up runs\n")
    proc = subprocess.run([sys.executable, "-c", code, str(target)],
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert proc.returncode == 9
    assert json.loads(target.read_text()) == {"batches": ["paid-1"]}
    left = _leftovers(tmp_path)
    assert len(left) == 1 and left[0].endswith(".tmp")  # never matches the target's suffix
    assert list(tmp_path.glob("*.json")) == [target]
    atomic_write(target, b'{"batches": ["paid-1", "paid-2"]}')
    assert json.loads(target.read_text()) == {"batches": ["paid-1", "paid-2"]}


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path: Path) -> None:
    store = KeyedStore(tmp_path)
    key = content_key({"request": 1})
    bodies = {w: {"writer": w, "text": str(w) * 50_000} for w in range(8)}
    barrier = threading.Barrier(len(bodies))

    def write(w: int) -> None:
        barrier.wait()
        for _ in range(20):
            store.put_json(key, bodies[w])

    threads = [threading.Thread(target=write, args=(w,)) for w in bodies]
    for t in threads:
        t.start()
    seen = []
    while any(t.is_alive() for t in threads):
        got = store.get_json(key)  # a reader never sees a partial entry
        if got is not None:
            assert got in bodies.values()
            seen.append(got["writer"])
    for t in threads:
        t.join()
    assert store.get_json(key) in bodies.values()
    # processes too (caches are shared by parallel jobs)
    code = ("import sys\nfrom copyprobe.store import KeyedStore\n"
            "s = KeyedStore(sys.argv[1])\n"
            "for i in range(100): s.put_json(sys.argv[2], {'w': sys.argv[3], 'x': 'y' * 5000})\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), key, str(w)], env=env)
             for w in range(3)]
    assert all(p.wait() == 0 for p in procs)
    assert store.get_json(key)["w"] in {"0", "1", "2"}
    assert _leftovers(tmp_path) == []


def test_the_keyed_layout_and_damaged_entries(tmp_path: Path) -> None:
    store = KeyedStore(tmp_path / "c")
    key = "ab" + "0" * 62
    assert store.path(key) == tmp_path / "c" / "ab" / f"{key}.json"
    assert store.get_json(key) is None and key not in store
    store.put_json(key, {"text": "hi"})
    assert key in store and store.get_json(key) == {"text": "hi"}
    store.put_bytes(key, b"raw", ".body")
    assert store.get_bytes(key, ".body") == b"raw"
    assert store.path(key, ".body") == tmp_path / "c" / "ab" / f"{key}.body"
    store.path(key).write_bytes(b"{not json")
    assert store.get_json(key) is None  # damaged reads as missing and is written again
    store.path(key).write_bytes(b"\xff\xfe")
    assert store.get_json(key) is None
    flat = KeyedStore(tmp_path / "pages", suffix=".png", shard=0)
    assert flat.path("k-p1") == tmp_path / "pages" / "k-p1.png"
    for bad in ("", "../x", ".hidden", "a/b"):
        with pytest.raises(ValueError):
            store.path(bad)


def test_a_removed_folder_is_made_again(tmp_path: Path) -> None:
    store = KeyedStore(tmp_path / "c")
    key = "cd" + "1" * 62
    store.put_json(key, {"n": 1})
    store.path(key).unlink()
    store.path(key).parent.rmdir()
    store.put_json(key, {"n": 2})
    assert store.get_json(key) == {"n": 2}


def test_content_key_covers_the_content_and_not_the_order() -> None:
    a = {"model": "m", "decoding": {"temperature": 0.0, "top_p": 1.0}, "prompt": "ü"}
    b = {"prompt": "ü", "decoding": {"top_p": 1.0, "temperature": 0.0}, "model": "m"}
    assert content_key(a) == content_key(b)
    assert content_key(a) != content_key({**a, "prompt": "u"})
    assert content_key(a) != content_key({**a, "decoding": {"temperature": 0.1, "top_p": 1.0}})
    # the canonical form the call cache and the rendered pages have always hashed
    blob = json.dumps(a, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert content_key(a) == hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_move_puts_a_complete_file_in_place(tmp_path: Path) -> None:
    src = tmp_path / "pending.jsonl"
    src.write_bytes(b"lines\n")
    dst = move(src, tmp_path / "out" / "batch_1.jsonl", durable=True)
    assert dst.read_bytes() == b"lines\n" and not src.exists()
