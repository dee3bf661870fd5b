"""One small file that stands, as a rule's input, for the library files its script depends on.

A stamp (``.snakemake/copyprobe/code/<name>/stamp.json``, planning state beside Snakemake's
own) lists each file's sha256 and is rewritten only when one's content changed, or a file was
added or removed: its modification time moves exactly then, so the rule's jobs rerun, and
Snakemake prints one path per job instead of every file. The rewrite says which files changed.
Each stamp has a folder of its own: Snakemake lists a folder once per run and then takes a
file missing from the listing for absent, and stamps are made while it plans.
Reference: docs/reproducibility.md.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from copyprobe.environment import sha256_file
from copyprobe.store import atomic_write_json

__all__ = ["STAMP_DIR", "stamp_files", "stamp_name", "write_stamp"]

#: where the stamps live, relative to Snakemake's working directory
STAMP_DIR = ".snakemake/copyprobe/code"

_digests: dict[tuple[str, int, int], str] = {}
_named: dict[str, object] = {}


def _sha256(path: str) -> str:
    """A file's sha256, computed once per (path, size, mtime) in this process."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _digests:
        _digests[key] = sha256_file(path)
    return _digests[key]


def stamp_name(script: str, parts: Mapping[str, Collection[str]] | None) -> str:
    """``script``, and where the job's registry parts are chosen, their names
    (``generate.llamacpp``; ``.no-model`` for none). Two different choices that would share
    a name are an error, not two stamps rewriting one file in turn."""
    if parts is None:
        return script
    chosen = tuple(sorted((k, tuple(sorted(v))) for k, v in parts.items()))
    names = sorted({v for _, vs in chosen for v in vs})
    name = f"{script}.{'+'.join(names) if names else 'no-model'}"
    if _named.setdefault(name, chosen) != chosen:
        raise ValueError(f"code stamp {name}: named by two choices of parts, "
                         f"{dict(_named[name])} and {dict(chosen)}")
    return name


def write_stamp(name: str, files: Sequence[str], *, folder: str | os.PathLike[str] = STAMP_DIR,
                say: Callable[[str], None] | None = None) -> str:
    """The stamp ``folder/name/stamp.json`` for ``files``, written if missing or if any file's
    content changed since (``say`` is told which; default: standard error). A new stamp takes
    the newest file's modification time, so one made for results that exist reruns nothing."""
    path = Path(folder) / name / "stamp.json"
    digests = {f: _sha256(f) for f in sorted(files)}
    try:
        old = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        old = None
    if old == digests:
        return str(path)
    changed = sorted(f for f in {*digests, *(old or {})}
                     if (old or {}).get(f) != digests.get(f))
    atomic_write_json(path, {"stamp": name, "changed": changed if old is not None else [],
                             "files": digests}, indent=1)
    if old is None:
        newest = max((os.stat(f).st_mtime_ns for f in digests), default=0)
        os.utime(path, ns=(newest, newest))
    else:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more"
                                          if len(changed) > 5 else "")
        (say or _to_stderr)(f"{path}: {shown} changed; its jobs rerun")
    return str(path)


def stamp_files(path: str | os.PathLike[str]) -> list[str]:
    """The files a stamp lists (what the rule's script depends on), sorted."""
    return sorted(json.loads(Path(path).read_text(encoding="utf-8"))["files"])


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)
