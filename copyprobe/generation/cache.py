"""Content-addressed cache of model calls.

One small JSON file per answered request, ``<root>/<key[:2]>/<key>.json``, written atomically
(temporary file + rename). There is no shared database to lock or corrupt: parallel jobs (SLURM
shards) write disjoint files, a job killed mid-run loses at most the request in flight, and a
restart finds every answer stored before the kill. Only successful answers are stored, so a
failed request is retried on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.generation.base import Decoding
from copyprobe.prompt import Prompt

KEY_VERSION = 1
_HOST = socket.gethostname().replace("/", "_") or "host"


def cache_key(*, backend: str, identity: Mapping[str, Any], decoding: Decoding, prompt: Prompt,
              sample_index: int = 0, images: tuple[str, ...] = ()) -> str:
    """sha256 over everything that changes a model's output.

    ``identity`` comes from the backend (model id, weights sha256 or revision, context size,
    library versions); ``decoding`` holds every decoding parameter and the seed; ``images`` are
    the sha256 of any image inputs. Sampled generations differ by ``sample_index``.
    """
    payload = {
        "v": KEY_VERSION,
        "backend": backend,
        "identity": dict(identity),
        "decoding": decoding.as_dict(),
        "sample_index": sample_index,
        "prompt": prompt.as_dict(),
        "images": list(images),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class GenerationCache:
    """Directory-backed store of answers keyed by :func:`cache_key`."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._dirs: set[Path] = set()  # directories known to exist

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self._path(key)
        try:
            with p.open(encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # a damaged entry is treated as missing and rewritten

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Store ``record`` under ``key`` (thread-safe; parallel processes may write the same
        key: the last complete write wins, and no reader ever sees a partial entry)."""
        p = self._path(key)
        if p.parent not in self._dirs:
            p.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(p.parent)
        data = json.dumps(dict(record), ensure_ascii=False, sort_keys=True).encode("utf-8")
        # One temporary name per host, process and thread (caches live on shared file systems):
        # no other live writer can hold it, so a leftover of a killed writer is overwritten.
        tmp = p.parent / f".tmp-{key}-{_HOST}-{os.getpid()}-{threading.get_ident()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        try:
            try:
                fd = os.open(tmp, flags, 0o644)
            except FileNotFoundError:  # the directory was removed since it was made
                p.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(tmp, flags, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, p)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()
