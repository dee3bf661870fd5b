"""Licence texts found in the metadata of the installed Python distributions.

Reference: docs/sources.md.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.licences.families import FAMILIES, UNKNOWN
from copyprobe.sources.licences.text import comparison_key, split_licences
from copyprobe.sources.licences.variants import Occurrence, group_variants

MAX_FILE_BYTES = 2_000_000
FIELD_MIN_WORDS = 50  # the ``License`` metadata field counts as a licence text above this


# ----------------------------------------------------------------------- installed files

_META_SKIP = {
    "metadata", "record", "wheel", "installer", "requested", "top_level.txt", "entry_points.txt",
    "direct_url.json", "pkg-info", "sources.txt", "dependency_links.txt", "not-zip-safe",
    "zip-safe", "requires.txt", "namespace_packages.txt", "installed-files.txt",
}
_LICENCE_NAME = re.compile(r"licen[cs]e|copying|copyright|notice", re.IGNORECASE)
_NOT_LICENCE_NAME = re.compile(
    r"^(?:authors?|contributors?|readme|changelog|changes|history|credits|maintainers)",
    re.IGNORECASE,
)
_BINARY_SUFFIX = {".pyc", ".so", ".pyd", ".dll", ".png", ".jpg", ".gif", ".ttf", ".otf"}


@dataclass(frozen=True)
class LicenceFile:
    """A candidate licence text: a file, or the ``License`` metadata field."""

    package: str
    version: str
    ref: str  # "<package>==<version>:<path in site-packages>" or ":METADATA[License]"
    text: str
    notice: bool  # NOTICE files: only recognised licences count


def _metadata_relpath(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    for i, p in enumerate(parts):
        if p.endswith(".dist-info") or p.endswith(".egg-info"):
            return parts[i + 1:]
    return None


def is_licence_file(sub: tuple[str, ...]) -> bool:
    """Whether a file at ``sub`` (its path inside the metadata folder) holds licence text."""
    if not sub:
        return False
    base = sub[-1]
    if base.lower() in _META_SKIP or PurePosixPath(base).suffix.lower() in _BINARY_SUFFIX:
        return False
    if _NOT_LICENCE_NAME.match(base):
        return False
    in_licenses_dir = any(p.lower() in {"licenses", "licences", "license_files"} for p in sub[:-1])
    return in_licenses_dir or bool(_LICENCE_NAME.search(base))


def _dist_files(dist: importlib.metadata.Distribution) -> Iterator[tuple[str, Path]]:
    """(path as in RECORD, file) of the files in the distribution's metadata folder.

    The folder is listed directly when the distribution has one on disk (fast, and it also
    sees files missing from RECORD); otherwise RECORD (``dist.files``) is used.
    """
    root = getattr(dist, "_path", None)  # importlib.metadata.PathDistribution
    if root is not None and Path(root).is_dir():
        root = Path(root)
        for p in sorted(root.rglob("*")):
            if p.is_file():
                yield str(PurePosixPath(root.name, *p.relative_to(root).parts)), p
        return
    for f in dist.files or []:
        yield str(f), Path(str(dist.locate_file(f)))


def licence_files(
    path: list[str] | None = None, skip: Callable[[str, str], None] | None = None
) -> list[LicenceFile]:
    """The licence texts of the distributions found on ``path`` (default ``sys.path``)."""
    if path is not None:
        dists = importlib.metadata.distributions(path=path)
    else:
        dists = importlib.metadata.distributions()
    seen: set[tuple[str, str]] = set()
    out: list[LicenceFile] = []
    for dist in dists:
        try:
            name = (dist.metadata.get("Name") or "").strip()
        except Exception:  # a broken metadata folder must not stop the scan
            name = ""
        if not name:
            continue
        version = str(dist.version)
        key = (re.sub(r"[-_.]+", "-", name).lower(), version)
        if key in seen:  # the same distribution on two path entries
            continue
        seen.add(key)
        try:
            files = list(_dist_files(dist))
        except Exception as exc:  # unreadable RECORD or folder
            if skip:
                skip(f"{name}=={version}", f"cannot list the metadata files: {exc}")
            files = []
        for rel, p in files:
            sub = _metadata_relpath(PurePosixPath(rel).parts)
            if sub is None or not is_licence_file(sub):
                continue
            ref = f"{name}=={version}:{rel}"
            try:
                data = p.read_bytes()
            except OSError as exc:
                if skip:
                    skip(ref, f"cannot read: {exc.strerror or exc}")
                continue
            if len(data) > MAX_FILE_BYTES:
                if skip:
                    skip(ref, f"larger than {MAX_FILE_BYTES} bytes")
                continue
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                if skip:
                    skip(ref, "not UTF-8 text")
                continue
            out.append(LicenceFile(name, version, ref, text,
                                   notice=sub[-1].lower().startswith("notice")))
        lic = dist.metadata.get("License") or ""
        if len(lic.split()) > FIELD_MIN_WORDS:
            # Core metadata folds multi-line fields with 8 spaces (or "|" in old versions).
            lic = re.sub(r"\n(?: {8}|\|)", "\n", lic)
            out.append(LicenceFile(name, version, f"{name}=={version}:METADATA[License]", lic, False))
    out.sort(key=lambda f: f.ref)
    return out



# -------------------------------------------------------------------------------- source

_PARAMS = {"min_words", "families", "max_per_family", "near_duplicate_threshold",
           "unknown_published", "path"}


def _err(key: str, value: Any, why: str) -> SourceError:
    return SourceError(f"source installed_licences: param {key!r} = {value!r} {why}")


class InstalledLicences(Source):
    """Distinct licence texts of the installed Python distributions."""

    name = "installed_licences"
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        mw = params.get("min_words", 50)
        if isinstance(mw, bool) or not isinstance(mw, int) or mw < 0:
            raise _err("min_words", mw, "must be an integer >= 0")
        self.min_words: int = mw

        fams = params.get("families")
        self.families: set[str] | None = None
        if fams is not None:
            if not isinstance(fams, (list, tuple, set)):
                raise _err("families", fams, "must be a list of licence families")
            canon = {f.lower(): f for f in [*FAMILIES, UNKNOWN]}
            chosen = set()
            for f in fams:
                if not isinstance(f, str) or f.lower() not in canon:
                    raise _err("families", fams, f"has unknown family {f!r}; known: "
                               f"{', '.join(sorted(canon.values()))}")
                chosen.add(canon[f.lower()])
            self.families = chosen

        mpf = params.get("max_per_family")
        if mpf is not None and (isinstance(mpf, bool) or not isinstance(mpf, int) or mpf < 1):
            raise _err("max_per_family", mpf, "must be an integer >= 1 or null")
        self.max_per_family: int | None = mpf

        thr = params.get("near_duplicate_threshold", 0.9)
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 < thr <= 1:
            raise _err("near_duplicate_threshold", thr, "must be a number in (0, 1]")
        self.threshold = float(thr)

        up = params.get("unknown_published")
        self.unknown_published: dt.date | None = None
        if up is not None:
            if isinstance(up, dt.datetime):
                up = up.date()
            if isinstance(up, str):
                try:
                    up = dt.date.fromisoformat(up.strip())
                except ValueError:
                    raise _err("unknown_published", up, "is not an ISO date (YYYY-MM-DD)") from None
            if not isinstance(up, dt.date):
                raise _err("unknown_published", up, "is not an ISO date (YYYY-MM-DD)")
            self.unknown_published = up

        path = params.get("path")
        if path is not None:
            if isinstance(path, str):
                path = [path]
            if not isinstance(path, (list, tuple)) or not all(isinstance(p, str) for p in path):
                raise _err("path", path, "must be a folder or a list of folders")
            path = [str(Path(p).expanduser().resolve()) for p in path]
        self.path: list[str] | None = path

    # ------------------------------------------------------------------------------------

    def collect(self) -> dict[str, list[Occurrence]]:
        """The usable licence texts per family (skips recorded)."""
        by_family: dict[str, list[Occurrence]] = {}
        for lf in licence_files(self.path, self.skip):
            segments = split_licences(lf.text)
            if not segments:
                if not lf.notice:
                    self.skip(lf.ref, "no licence text recognised")
                continue
            for i, seg in enumerate(segments, 1):
                ref = lf.ref if len(segments) == 1 else f"{lf.ref}#{i}"
                if seg.problem:
                    self.skip(ref, seg.problem)
                    continue
                family = seg.family
                if family is None:
                    if lf.notice:
                        continue
                    family = UNKNOWN
                n = len(seg.text.split())
                if n < self.min_words:
                    self.skip(ref, f"{family} text of {n} words, fewer than min_words={self.min_words}")
                    continue
                if family == UNKNOWN and self.unknown_published is None:
                    self.skip(ref, "unrecognised licence family")
                    continue
                if self.families is not None and family not in self.families:
                    self.skip(ref, f"family {family} not in param 'families'")
                    continue
                by_family.setdefault(family, []).append(
                    Occurrence(family, seg.text, comparison_key(seg.text), lf.package, ref,
                               seg.copyright)
                )
        return by_family

    def documents(self) -> Iterable[Document]:
        by_family = self.collect()
        for family in sorted(by_family):
            variants = group_variants(by_family[family], self.threshold)
            for idx, v in enumerate(variants, 1):
                title_base = "Unrecognised licence text" if family == UNKNOWN else family
                title = title_base if len(variants) == 1 else f"{title_base} (variant {idx})"
                if self.max_per_family is not None and idx > self.max_per_family:
                    for m in v.members:
                        self.skip(m.ref, f"{title} beyond max_per_family={self.max_per_family}")
                    continue
                if family == UNKNOWN:
                    assert self.unknown_published is not None
                    published = self.unknown_published
                    basis = "param unknown_published (no recognised licence family, no known date)"
                    spdx = "NOASSERTION"
                else:
                    info = FAMILIES[family]
                    published = info.published
                    basis = f"licence publication date of {family}: {info.basis}"
                    spdx = "Apache-2.0" if family == "Apache-2.0-notice" else family
                rep = next(m for m in sorted(v.members, key=lambda o: o.ref) if m.key == v.rep_key)
                copyright_lines = sorted({c for m in v.members for c in m.copyright})
                yield Document(
                    doc_id=f"licence:{family}:{text_id(v.representative, length=12)}",
                    title=title,
                    text=v.representative,
                    published=published,
                    date_basis=basis,
                    url="",
                    licence=spdx,
                    provenance={
                        "family": family,
                        "variant": idx,
                        "n_variants": len(variants),
                        "packages": v.packages,
                        "n_packages": len(v.packages),
                        "occurrences": sorted(m.ref for m in v.members),
                        "n_occurrences": len(v.members),
                        "representative": rep.ref,
                        "exact_texts": v.exact_texts,
                        "min_similarity": round(v.min_similarity, 4),
                        "near_duplicate_threshold": self.threshold,
                        "copyright_lines": copyright_lines,
                        "python": sys.version.split()[0],
                    },
                )
