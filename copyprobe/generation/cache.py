"""Content-addressed cache of model calls.

One small JSON file per answered request, ``<root>/<key[:2]>/<key>.json``, written atomically
(temporary file + rename) by :class:`copyprobe.store.KeyedStore`. There is no shared database
to lock or corrupt: parallel jobs (SLURM shards) write disjoint files, a job killed mid-run
loses at most the request in flight, and a restart finds every answer stored before the kill.
Only successful answers are stored, so a failed request is retried on the next run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copyprobe.generation.base import Decoding
from copyprobe.prompt import Prompt
from copyprobe.store import KeyedStore, content_key

KEY_VERSION = 1


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
    return content_key(payload)


class GenerationCache:
    """Directory-backed store of answers keyed by :func:`cache_key` (a
    :class:`~copyprobe.store.KeyedStore`: ``<root>/<key[:2]>/<key>.json``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._store = KeyedStore(self.root, suffix=".json", shard=2)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record, or None (a damaged entry reads as missing and is rewritten)."""
        record = self._store.get_json(key)
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Store ``record`` under ``key`` (thread-safe; parallel processes may write the same
        key: the last complete write wins, and no reader ever sees a partial entry)."""
        self._store.put_json(key, dict(record))

    def __contains__(self, key: str) -> bool:
        return key in self._store
