"""The authors' released page images, used as a benchmark's image forms instead of renders.

Reference: docs/copyright.md#the-authors-released-formats.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

#: copyprobe's notice form -> the released image mode it shows.
FORM_MODE = {"none": 0, "text_generic": 0, "text_original": 0, "image_generic": 1,
             "image_original": 2}
IMAGES_SUFFIX = "_copyright_images"
ON_ERROR = ("raise", "skip")
#: Name patterns per category (``{stem}``: the text file's name without ``.txt`` and, for news,
#: without ``_text``); a category not listed tries them all.
_PATTERNS = {"book": ("{stem}_sample_1.png",), "lyrics": ("{stem}_sample_1.png",),
             "code": ("{stem}.png",), "news": ("{stem}_screenshot.png",)}
_ALL = ("{stem}_sample_1.png", "{stem}.png", "{stem}_screenshot.png")


class MissingReleasedImage(ValueError):
    """A material has no released image for a mode its forms need (names it and the paths)."""


class ReleasedImagesError(ValueError):
    """Bad ``images: released`` settings (the message names the key or folder)."""


@dataclass(frozen=True)
class ReleasedImage:
    """One released image: the file, its path as the release names it, its sha256."""

    path: Path
    file: str
    sha256: str


def image_names(category: str, text_file: str) -> list[str]:
    """The released image names of a material file (``news_copyright/X_text.txt`` ->
    ``X_screenshot.png``), most likely first; a name with stray spaces also tried stripped."""
    stem = PurePosixPath(text_file).stem
    if category == "news" or stem.endswith("_text"):
        stem = stem.removesuffix("_text")
    stems = list(dict.fromkeys([stem, stem.strip()]))
    pats = _PATTERNS.get(category, ())
    pats = (*pats, *(p for p in _ALL if p not in pats))
    return list(dict.fromkeys(p.format(stem=s) for p in pats for s in stems))


def images_root(path: Path) -> Path:
    """The folder holding the ``*_copyright_images`` folders: ``path/dataset`` or ``path``."""
    from copyprobe.sources.materials.dataset import layout_root

    root = layout_root(path, IMAGES_SUFFIX)
    if root is not None:
        return root
    raise ReleasedImagesError(f"images: released: {path} holds no <category>{IMAGES_SUFFIX} "
                              f"folder (nor does {path / 'dataset'}); expected the released "
                              f"layout dataset/{{book,code,lyrics,news}}{IMAGES_SUFFIX}/"
                              "{0,1,2}/ (unzip the release's *_copyright_images.zip there)")


class ReleasedImages:
    """Finds each material's released images under ``path`` (None: only the image paths a
    dataset JSON gave its materials are used). ``on_error``: what the benchmark does with a
    material lacking an image: "raise" or "skip" (left out, listed in the build report)."""

    def __init__(self, path: str | Path | None, on_error: str = "raise") -> None:
        if on_error not in ON_ERROR:
            raise ReleasedImagesError(f"released_images.on_error = {on_error!r} must be one "
                                      f"of {ON_ERROR}")
        self.path = None if path is None else Path(path).expanduser().resolve()
        self.on_error = on_error
        self._root: Path | None = None
        self._sha: dict[Path, str] = {}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> ReleasedImages:
        """From a benchmark's ``released_images`` entry ``{path, on_error}``."""
        spec = dict(spec or {})
        unknown = sorted(set(spec) - {"path", "on_error"})
        if unknown:
            raise ReleasedImagesError(f"released_images: unknown key(s) {unknown}; known: "
                                      "['on_error', 'path']")
        return cls(spec.get("path"), spec.get("on_error", "raise"))

    @property
    def root(self) -> Path | None:
        if self.path is None:
            return None
        if self._root is None:
            self._root = images_root(self.path)
        return self._root

    def files(self) -> list[Path]:
        """Every file of the layout's image folders (``<category>_copyright_images/{0,1,2}/``),
        sorted: the manifest rule's inputs, so that replacing an image builds it again (none
        without a ``path``: the images a dataset JSON names are not listed)."""
        if self.root is None:
            return []
        modes = sorted({str(m) for m in FORM_MODE.values()})
        return sorted(p for folder in self.root.glob(f"*{IMAGES_SUFFIX}") for m in modes
                      for p in (folder / m).glob("*") if p.is_file())

    def settings(self) -> str:
        """What the manifest records as the render settings of a released row (JSON)."""
        return json.dumps({"images": "released", "path": str(self.path) if self.path else None,
                           "form_mode": FORM_MODE}, sort_keys=True)

    def _candidates(self, material: Mapping[str, Any], mode: int) -> list[tuple[Path, str]]:
        prov = material.get("provenance")
        prov = json.loads(prov) if isinstance(prov, str) and prov else dict(prov or {})
        out: list[tuple[Path, str]] = []
        given = (prov.get("released_images") or {}).get(str(mode))
        if given:
            p = Path(given)
            if p.is_absolute():
                out.append((p, given))
            else:
                bases = [Path(prov["released_root"])] if prov.get("released_root") else []
                if self.path is not None:
                    bases += [self.path, self.path.parent]
                out += [(b / p, given) for b in bases]
        rel = prov.get("file")
        if self.root is not None and isinstance(rel, str) and rel:
            category = str(material.get("category") or "")
            folder = f"{category}{IMAGES_SUFFIX}"
            out += [(self.root / folder / str(mode) / name, f"{folder}/{mode}/{name}")
                    for name in image_names(category, rel)]
        return out

    def for_material(self, material: Mapping[str, Any], forms: Iterable[str]
                     ) -> dict[str, ReleasedImage]:
        """form -> its released image, for each of ``forms``; raises
        :class:`MissingReleasedImage` naming the material and the paths tried."""
        mid = material.get("doc_id")
        found: dict[int, ReleasedImage] = {}
        out: dict[str, ReleasedImage] = {}
        for form in forms:
            mode = FORM_MODE[form]
            if mode not in found:
                tried = self._candidates(material, mode)
                hit = next(((p, f) for p, f in tried if p.is_file()), None)
                if hit is None:
                    where = ([str(p) for p, _ in tried] if tried else
                             ["none: the material has no released file (provenance 'file') "
                              "and no image paths of a dataset JSON"
                              + ("" if self.path else ", and released_images.path is not set")])
                    raise MissingReleasedImage(
                        f"material {mid!r} ({material.get('title')!r}): no released image for "
                        f"notice mode {mode} (form {form}); tried {where}")
                found[mode] = ReleasedImage(hit[0].resolve(), hit[1], self._sha256(hit[0]))
            out[form] = found[mode]
        return out

    def _sha256(self, path: Path) -> str:
        key = path.resolve()
        if key not in self._sha:
            self._sha[key] = hashlib.sha256(key.read_bytes()).hexdigest()
        return self._sha[key]
