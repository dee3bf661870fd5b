"""The span index a running proxy checks answers against, as a snapshot that follows its
folder: between requests, a folder that now holds another build (another manifest digest) is
opened and swapped in (``reload``) or only reported (``keep``); an index deleted or changed
and not reloaded makes ``/health`` degraded. Behaviour: docs/guard.md ("The index under a
running proxy").
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copyprobe.guard.output import OutputGuard

RELOAD_MODES = ("reload", "keep")


@dataclass
class _Snapshot:
    guard: OutputGuard
    digest: str
    leases: int = 0
    retired: bool = False

    def close_if_unused(self) -> None:
        if self.retired and self.leases == 0:
            close = getattr(self.guard.index, "close", None)
            if callable(close):
                close()


def _open(path: Path, params: Mapping[str, Any]) -> _Snapshot:
    from copyprobe.guard.pipeline import build_output_guard
    from copyprobe.spans.index import SpanIndex

    index = SpanIndex.open(path)
    try:
        return _Snapshot(build_output_guard(params, index), index.digest)
    except BaseException:
        index.close()
        raise


@dataclass
class ServedIndex:
    """The output check over the span index in ``path`` (opened now: errors stop the start).
    Use :meth:`refresh` before a request (in the event loop), then :meth:`lease` for it."""

    path: Path
    params: Mapping[str, Any]
    mode: str = "reload"
    problem: str | None = None
    _current: _Snapshot = field(init=False)
    _stat: tuple[int, int, int] | None = field(init=False)

    def __post_init__(self) -> None:
        if self.mode not in RELOAD_MODES:
            raise ValueError(f"index reload must be one of {', '.join(RELOAD_MODES)}, got "
                             f"{self.mode!r}")
        self.path = Path(self.path)
        self._stat = self._manifest_stat()
        self._current = _open(self.path, self.params)
        self.started_digest = self._current.digest
        self._lock = asyncio.Lock()

    @property
    def digest(self) -> str:
        """The digest of the snapshot served now."""
        return self._current.digest

    @property
    def guard(self) -> OutputGuard:
        return self._current.guard

    def _manifest_stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path / "index.json")
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    async def refresh(self) -> None:
        """Notice a changed folder (a stat of its manifest; its digest read only when that
        changed) and, under ``reload``, open the new build and serve it from the next request
        on; a build that cannot be opened leaves the current one served (and reported)."""
        if self._manifest_stat() == self._stat:
            return
        async with self._lock:
            stat = self._manifest_stat()
            if stat == self._stat:
                return  # another request reloaded it meanwhile
            self._stat = stat
            if stat is None:
                self.problem = (f"{self.path / 'index.json'} is gone (the index was deleted); "
                                f"serving the snapshot opened before, {self.digest[:16]}")
                return
            from copyprobe.spans.index import SpanIndexError, index_digest

            try:
                digest = index_digest(self.path)
            except SpanIndexError as exc:
                self.problem = f"{exc}; serving the snapshot {self.digest[:16]}"
                return
            if digest == self.digest:
                self.problem = None
                return
            if self.mode == "keep":
                self.problem = (f"{self.path} now holds the index {digest[:16]}; serving "
                                f"{self.digest[:16]} (index reload: keep)")
                return
            try:
                new = await asyncio.to_thread(_open, self.path, self.params)
            except Exception as exc:  # noqa: BLE001 (reported; the old snapshot serves on)
                self.problem = (f"reloading {self.path} failed ({type(exc).__name__}: {exc}); "
                                f"serving {self.digest[:16]}")
                return
            old, self._current = self._current, new
            old.retired = True
            old.close_if_unused()
            self.problem = None

    @contextmanager
    def lease(self) -> Iterator[OutputGuard]:
        """The output check for one request: its snapshot stays open until the request ends,
        even when a reload swaps in another."""
        snap = self._current
        snap.leases += 1
        try:
            yield snap.guard
        finally:
            snap.leases -= 1
            snap.close_if_unused()

    def health(self) -> dict[str, Any]:
        return {"path": str(self.path), "digest": self.digest,
                "started_digest": self.started_digest, "reload": self.mode,
                "problem": self.problem}

    def close(self) -> None:
        self._current.retired = True
        self._current.close_if_unused()
