"""The span index's steps as the workflow runs them (rules/spans.smk), with content-keyed reuse.

Reference: docs/span-index.md.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from copyprobe.models import sha256_file
from copyprobe.spans.layout import PLAN
from copyprobe.spans.paths import SA_FILES, STEP1_FILES
from copyprobe.spans.types import SpanIndexError
from copyprobe.store import KeyedStore, content_key

log = logging.getLogger(__name__)

#: Bumped when what a stored build holds, or how it is keyed, changes.
FORMAT = 1


def _engine_version() -> str:
    try:
        return metadata.version("infini-gram")
    except metadata.PackageNotFoundError:
        return "absent"


def shard_key(shard_dir: str | os.PathLike[str]) -> str:
    """The content key of a shard's suffix array: its tokenized bytes decide it."""
    tokenized = Path(shard_dir) / STEP1_FILES[0]
    if not tokenized.is_file():
        raise SpanIndexError(f"{tokenized}: missing (rule span_index_prepare writes it)")
    key = {"format": FORMAT, "infini_gram": _engine_version(),
           "tokenized_sha256": sha256_file(tokenized)}
    plan = Path(shard_dir).parent / PLAN
    dtype = json.loads(plan.read_text(encoding="utf-8")).get("token_dtype", "u8") if (
        plan.is_file()) else "u8"
    if dtype != "u8":  # the same bytes are other suffixes in u16 / u32 (u8 keys unchanged)
        key["token_dtype"] = dtype
    return content_key(key)


def _place(src: Path, dst: Path) -> None:
    """``dst`` becomes a hard link to ``src`` (a copy across file systems)."""
    if dst.exists():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def prepare(corpora: Sequence[str], out_dir: str | os.PathLike[str], *, unit: str,
            shards: int, tokenizer: str | None = None) -> dict[str, Any]:
    """Step 1 of every shard (:func:`copyprobe.spans.build.prepare_index`), then a check that
    each shard folder holds the files the rule declares."""
    from copyprobe.spans.build import prepare_index
    from copyprobe.spans.paths import shard_names

    out = Path(out_dir)
    result = prepare_index(list(corpora), out, unit=unit, shards=shards, tokenizer=tokenizer)
    for shard in shard_names(shards):
        for name in STEP1_FILES:
            if not (out / f"shard-{shard}" / name).is_file():
                raise SpanIndexError(f"{out / f'shard-{shard}' / name}: not written by "
                                     "prepare_index (the rule declares it)")
    return result if isinstance(result, dict) else {}


def build_shard_stored(shard_dir: str | os.PathLike[str], store_root: str | os.PathLike[str],
                       *, cpus: int, mem_gb: int, builder: str = "auto") -> str:
    """Give ``shard_dir`` its suffix array: the stored build of its content key, else a new
    build (:func:`copyprobe.spans.build.build_shard`), which is then stored. Returns
    ``"reused"`` or ``"built"``."""
    shard = Path(shard_dir)
    key = shard_key(shard)
    store = KeyedStore(store_root, suffix="")
    stored = store.path(key)
    if all((stored / name).is_file() for name in SA_FILES):
        for f in sorted(stored.iterdir()):
            _place(f, shard / f.name)
        log.info("%s: reused the stored suffix array %s", shard, key)
        return "reused"
    from copyprobe.spans.build import build_shard

    before = {p.name for p in shard.iterdir()}
    build_shard(shard, cpus=cpus, mem_gb=mem_gb, builder=builder)
    made = sorted(p for p in shard.iterdir() if p.name not in before and p.is_file())
    missing = [n for n in SA_FILES if not (shard / n).is_file()]
    if missing:
        raise SpanIndexError(f"{shard}: build_shard did not write {missing}")
    tmp = stored.with_name(f".tmp-{stored.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in made:
        _place(f, tmp / f.name)
    try:
        os.replace(tmp, stored)
    except OSError:  # another job stored the same key first: keep its entry
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("%s: built the suffix array (%s), stored as %s", shard,
             ", ".join(p.name for p in made), key)
    return "built"


def finalize(out_dir: str | os.PathLike[str], *, unit: str,
             tokenizer: str | None = None) -> dict[str, Any]:
    """The manifest (:func:`copyprobe.spans.build.finalize_index`), kept only once the index
    opens and validates in ``unit``; else it is removed and the error raised."""
    from copyprobe.spans.build import finalize_index
    from copyprobe.spans.index import SpanIndex

    out = Path(out_dir)
    manifest = finalize_index(out)
    try:
        index = SpanIndex.open(out, unit=unit, tokenizer=tokenizer)
        try:
            n_docs = index.n_docs
        finally:
            index.close()
    except Exception:
        (out / "index.json").unlink(missing_ok=True)
        raise
    log.info("%s: %d documents, unit %s", out, n_docs, unit)
    return manifest


def open_index(manifest: str | os.PathLike[str], *, unit: str | None = None) -> Any:
    """The :class:`~copyprobe.spans.index.SpanIndex` whose manifest is ``manifest`` (a rule's
    input ``results/spans/NAME/index.json``)."""
    from copyprobe.spans.index import SpanIndex

    return SpanIndex.open(Path(manifest).parent, unit=unit)
