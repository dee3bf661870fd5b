"""The released copyright benchmark's dataset JSON, read as materials with their original notice.

Reference: docs/materials.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.materials.common import (
    ItemProblem,
    int_param,
    readable_title,
    resolve_path,
    str_param,
    word_count,
)
from copyprobe.sources.materials.dataset import CATEGORY_SUFFIX
from copyprobe.sources.materials.rights import best_notice, find_notices, strip_notices

KIND = "copyright_json"
IMAGE_KEYS = ("img_file_0", "img_file_1", "img_file_2")
_PARAMS = {"path", "root", "min_words", "on_error"}


def read_samples(path: Path) -> list[Any]:
    """The list of samples of a released dataset or responses JSON (entries unchecked).

    A file that is missing, not UTF-8 JSON or not a list raises :class:`SourceError` naming it.
    """
    if not path.is_file():
        raise SourceError(f"source {KIND}: {path} does not exist")
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"source {KIND}: {path} is not valid UTF-8 JSON: {exc}") from exc
    if not isinstance(data, list):
        raise SourceError(f"source {KIND}: {path} must hold a JSON list of samples "
                          f"{{txt_file, img_file_0..2, text, copyright_text}}, got "
                          f"{type(data).__name__}")
    return data


def material_file(txt_file: str) -> str:
    """``<category>_copyright/<name>.txt`` of a ``txt_file`` path (the released folder's
    relative path, :mod:`.dataset`'s ``page_id``); a path without such a folder: its name."""
    parts = PurePosixPath(txt_file.replace("\\", "/")).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i].endswith(CATEGORY_SUFFIX):
            return "/".join(parts[i:i + 2])
    return parts[-1] if parts else ""


def check_sample(sample: Any, where: str) -> dict[str, Any]:
    """The sample with its keys checked: ``txt_file`` and ``text`` non-empty strings,
    ``copyright_text`` and the image paths strings when present. Raises :class:`ItemProblem`
    naming ``where`` (the file and index) and the key."""
    if not isinstance(sample, Mapping):
        raise ItemProblem(f"{where}: must be an object {{txt_file, text, ...}}, got "
                          f"{type(sample).__name__}")
    for key in ("txt_file", "text"):
        value = sample.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ItemProblem(f"{where}: key {key!r} must be a non-empty string, got "
                              f"{value!r}"[:300])
    for key in ("copyright_text", *IMAGE_KEYS):
        value = sample.get(key)
        if value is not None and not isinstance(value, str):
            raise ItemProblem(f"{where}: key {key!r} must be a string, got "
                              f"{type(value).__name__}")
    return dict(sample)


def _default_root(path: Path, samples: list[Any]) -> Path:
    first = next((s.get("txt_file") for s in samples if isinstance(s, Mapping)
                  and isinstance(s.get("txt_file"), str)), None)
    if first and not Path(first).is_absolute():
        for cand in (path.parent, *path.parent.parents):
            if (cand / first).is_file():
                return cand
    return path.parent


class CopyrightJson(Source):
    """Materials of a released dataset (or responses) JSON, one document per sample."""

    name = KIND
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if params.get("path") is None:
            raise SourceError(f"source {KIND}: param 'path' (the dataset JSON) is required")
        self.path = resolve_path(KIND, params["path"], "path")
        root = params.get("root")
        self.root_param = None if root is None else resolve_path(KIND, root, "root")
        self.min_words = int_param(KIND, params, "min_words", 1, 0)
        self.on_error = str_param(KIND, params, "on_error", "raise", ("raise", "skip"))

    @classmethod
    def input_files(cls, params: Mapping[str, Any]) -> list[str]:
        """The JSON file (its images are read by the benchmark, not by the source)."""
        src = cls(**params)
        return [str(src.path)] if src.path.is_file() else []

    def documents(self) -> Iterable[Document]:
        samples = read_samples(self.path)
        root = self.root_param or _default_root(self.path, samples)
        seen: dict[str, int] = {}
        for i, raw in enumerate(samples):
            where = f"{self.path}, sample {i}"
            try:
                sample = check_sample(raw, where)
                rel = material_file(sample["txt_file"])
                if rel in seen:
                    raise ItemProblem(f"{where}: txt_file {sample['txt_file']!r} is also "
                                      f"sample {seen[rel]}'s")
            except ItemProblem as exc:
                if self.on_error == "raise":
                    raise SourceError(f"source {KIND}: {exc}") from None
                self.skip(where, str(exc).removeprefix(f"{where}: "))
                continue
            seen[rel] = i
            doc = self._document(i, sample, rel, root)
            if not strip_notices(doc.text)[0].strip():  # two released lyrics files are so
                self.skip(where, "the text is only a copyright line (no material)")
                continue
            n = word_count(doc.text)
            if n < self.min_words:
                self.skip(where, f"{n} words, fewer than min_words={self.min_words}")
                continue
            yield doc

    def _document(self, index: int, sample: dict[str, Any], rel: str, root: Path) -> Document:
        text = sample["text"].replace("\r\n", "\n").replace("\r", "\n").strip()
        notice = " ".join((sample.get("copyright_text") or "").split())
        folder = rel.split("/", 1)[0] if "/" in rel else ""
        category = folder[: -len(CATEGORY_SUFFIX)] if folder.endswith(CATEGORY_SUFFIX) else ""
        stem = PurePosixPath(rel).stem
        stem = stem.removesuffix("_text")
        found = best_notice([n for _, n in find_notices(notice)]) if notice else None
        prov: dict[str, Any] = {
            "file": rel, "dataset_json": str(self.path), "index": index,
            "txt_file": sample["txt_file"], "released_root": str(root),
            "released_images": {str(m): sample[k] for m, k in enumerate(IMAGE_KEYS)
                                if sample.get(k)},
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }
        if notice:
            prov["rights_basis"] = f"copyright_text of sample {index} of {self.path}"
        return Document(
            doc_id=f"{category}:{text_id(rel, length=12)}",
            title=readable_title(stem),
            text=text,
            published=None,
            date_basis="none: the released dataset JSON carries no date",
            provenance=prov,
            page_id=rel,
            revision_id=prov["sha256"],
            category=category,
            rights_holder=found.holder if found is not None else "",
            rights_year=found.year if found is not None else None,
            rights_notice=notice,
        )
