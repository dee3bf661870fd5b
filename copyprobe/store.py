"""Atomic file writes and a content-addressed keyed store: every cache and artifact write.

Reference: docs/reproducibility.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["KeyedStore", "atomic_open", "atomic_path", "atomic_write", "atomic_write_json",
           "content_key", "move", "sha256_hex"]

_HOST = socket.gethostname().replace("/", "_") or "host"
PathLike = str | os.PathLike[str]


def content_key(obj: Any) -> str:
    """sha256 (hex) of ``obj`` as canonical JSON (sorted keys, no spaces, UTF-8): equal
    content gives equal keys whatever the order of its dicts."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return sha256_hex(blob.encode("utf-8"))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tmp_name(target: str) -> str:
    head, tail = os.path.split(target)
    return os.path.join(head, f".tmp-{tail}-{_HOST}-{os.getpid()}-{threading.get_ident()}.tmp")


def _fsync_dir(folder: str) -> None:
    try:
        dfd = os.open(folder or ".", os.O_RDONLY)
    except OSError:  # not every platform opens folders
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@contextmanager
def _replacing(target: str, durable: bool) -> Iterator[str]:
    """A temporary name beside ``target``, renamed onto it when the block ends normally and
    removed when it raises."""
    tmp = _tmp_name(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise
    if durable:
        _fsync_dir(os.path.dirname(target))


@contextmanager
def atomic_path(path: PathLike, *, durable: bool = False, mkdir: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that wants a file name (Parquet, savefig);
    renamed onto ``path`` when the block ends normally, removed when it raises. ``mkdir``:
    make the folder first (off where the caller knows it exists)."""
    target = os.fspath(path)
    if mkdir:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with _replacing(target, durable) as tmp:
        yield Path(tmp)
        if durable:
            _fsync_file(tmp)


@contextmanager
def atomic_open(path: PathLike, mode: str = "wb", *, durable: bool = False,
                encoding: str | None = None) -> Iterator[IO[Any]]:
    """An open file (``"wb"`` or ``"w"``) that becomes ``path`` when the block ends normally;
    for streams written in chunks."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open writes only ('wb' or 'w'), not {mode!r}")
    if mode == "w" and encoding is None:
        encoding = "utf-8"
    with atomic_path(path, durable=durable) as tmp:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh


def _write_bytes(target: str, data: bytes, durable: bool) -> None:
    # plain strings and os calls: the call cache writes thousands of small entries per second,
    # and pathlib's parsing would cost more than the write itself
    with _replacing(target, durable) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: PathLike, data: bytes | str | Callable[[Path], object], *,
                 durable: bool = False, mkdir: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically and return the path. ``data``: bytes, text
    (written as UTF-8), or a function that writes the file it is given (its temporary name)."""
    if callable(data):
        with atomic_path(path, durable=durable, mkdir=mkdir) as tmp:
            data(tmp)
        return Path(path)
    target = os.fspath(path)
    if mkdir:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    _write_bytes(target, data.encode("utf-8") if isinstance(data, str) else bytes(data),
                 durable)
    return Path(target)


def atomic_write_json(path: PathLike, obj: Any, *, durable: bool = False,
                      **dumps: Any) -> Path:
    """``obj`` as JSON (``dumps`` go to :func:`json.dumps`; ``ensure_ascii`` False by default)."""
    dumps.setdefault("ensure_ascii", False)
    return atomic_write(path, json.dumps(obj, **dumps), durable=durable)


def move(src: PathLike, dst: PathLike, *, durable: bool = False) -> Path:
    """Rename a complete file ``src`` onto ``dst`` (atomic within one file system)."""
    target = Path(dst)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, target)
    if durable:
        _fsync_dir(target.parent)
    return target


class KeyedStore:
    """Entries under ``root`` by key: ``<root>/<key[:shard]>/<key><suffix>`` (``shard`` 0: no
    sub-folder). Thread- and process-safe: writers of the same key each write a whole entry and
    the last rename wins; a reader never sees a partial one."""

    def __init__(self, root: PathLike, *, suffix: str = ".json", shard: int = 2,
                 durable: bool = False) -> None:
        self.root = Path(root)
        self.suffix = suffix
        self.shard = shard
        self.durable = durable
        self._root = os.fspath(root)
        self._dirs: set[str] = set()  # folders known to exist

    def _file(self, key: str, suffix: str | None) -> str:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"not a store key: {key!r}")
        name = key + (self.suffix if suffix is None else suffix)
        if self.shard:
            return os.path.join(self._root, key[:self.shard], name)
        return os.path.join(self._root, name)

    def path(self, key: str, suffix: str | None = None) -> Path:
        """Where the entry of ``key`` lies (with ``suffix`` instead of the store's)."""
        return Path(self._file(key, suffix))

    def __contains__(self, key: str) -> bool:
        return os.path.isfile(self._file(key, None))

    def get_bytes(self, key: str, suffix: str | None = None) -> bytes | None:
        try:
            with open(self._file(key, suffix), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def put_bytes(self, key: str, data: bytes, suffix: str | None = None) -> None:
        p = self._file(key, suffix)
        folder = os.path.dirname(p)
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        try:
            _write_bytes(p, data, self.durable)
        except FileNotFoundError:  # the folder was removed since it was made
            os.makedirs(folder, exist_ok=True)
            _write_bytes(p, data, self.durable)

    def get_json(self, key: str, suffix: str | None = None) -> Any | None:
        """The entry, or None when it is missing or damaged (not JSON)."""
        raw = self.get_bytes(key, suffix)
        if raw is None:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None

    def put_json(self, key: str, obj: Any, suffix: str | None = None, **dumps: Any) -> None:
        dumps.setdefault("ensure_ascii", False)
        dumps.setdefault("sort_keys", True)
        self.put_bytes(key, json.dumps(obj, **dumps).encode("utf-8"), suffix)
