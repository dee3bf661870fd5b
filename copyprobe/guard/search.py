"""Search providers for the status verifier: where to look up the work a prompt quotes.

Reference: docs/guard-notice-status.md#status-verifier.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copyprobe.guard.catalogue import Catalogue, Work
from copyprobe.registry import Registry

TITLE_LINES = 2
QUERY_WORDS = 12
DEFAULT_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search"
DEFAULT_KEY_ENV = "BRAVE_SEARCH_API_KEY"


class SearchError(RuntimeError):
    """A search that failed (unreachable, an error status, an unreadable answer)."""


@dataclass(frozen=True)
class Lookup:
    """What the status verifier looks up (see the module text)."""

    lines: tuple[str, ...]  # the material's first lines
    request: str            # the request's text

    @property
    def text(self) -> str:
        return "\n".join((*self.lines, self.request))

    @property
    def query(self) -> str:
        if self.lines:
            return f"\"{self.lines[0]}\" copyright"
        return " ".join(self.request.split()[:QUERY_WORDS])


def _first_lines(text: str, n: int = TITLE_LINES) -> tuple[str, ...]:
    out = []
    for line in text.splitlines():
        words = line.split()
        if words:
            out.append(" ".join(words[:QUERY_WORDS]).replace("\"", ""))
        if len(out) == n:
            break
    return tuple(out)


def make_lookup(request_texts: list[str], ocr_text: str) -> Lookup:
    """The lookup for a prompt: ``request_texts`` are its user text parts, ``ocr_text`` what
    OCR read from its images (empty when it has none)."""
    request = "\n".join(t for t in request_texts if t.strip())
    if ocr_text.strip():
        return Lookup(_first_lines(ocr_text), request)
    parts = [t for t in request_texts if t.strip()]
    # text only: the material is pasted with the request: in the parts after the first; in a
    # single part, after its first blank line (the request, and a notice, come first), else
    # in its lines after the first
    if len(parts) > 1:
        material = "\n".join(parts[1:])
    else:
        blocks = re.split(r"\n\s*\n", request.strip(), maxsplit=1)
        lines = request.strip().splitlines()
        material = (blocks[1] if len(blocks) > 1
                    else "\n".join(lines[1:]) if len(lines) > 1 else "")
    return Lookup(_first_lines(material), request)


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class ProviderAnswer:
    """A provider's answer: a ``status`` it decided (with ``basis`` and ``title``), or ``hits``
    for the LLM verdict, or neither."""

    provider: str
    status: str | None = None
    basis: str = ""
    title: str | None = None
    hits: tuple[SearchHit, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)


SEARCH_PROVIDERS: Registry[type] = Registry("search provider")
SEARCH_PROVIDERS.declare("catalogue", "copyprobe.guard.search:CatalogueSearch")
SEARCH_PROVIDERS.declare("web", "copyprobe.guard.search:BraveSearch")


class CatalogueSearch:
    """The offline catalogue (see the module text)."""

    name = "catalogue"

    def __init__(self, path: str | Path | None = None, jurisdiction: str = "US",
                 today: str | datetime.date | None = None) -> None:
        from copyprobe.guard.catalogue import PD_RULES

        if jurisdiction not in PD_RULES:
            raise ValueError(f"search provider catalogue: jurisdiction {jurisdiction!r} has no "
                             f"public-domain rule; known: {sorted(PD_RULES)}")
        self.catalogue = Catalogue.load(path)
        self.jurisdiction = jurisdiction
        self.today = datetime.date.fromisoformat(today) if isinstance(today, str) else today

    def describe(self, work: Work) -> dict[str, Any]:
        return {"id": work.id, "title": work.title, "author": work.author,
                "holder": work.holder, "first_published": work.first_published,
                "author_died": work.author_died, "licence": work.licence,
                "jurisdiction": self.jurisdiction}

    def search(self, lookup: Lookup) -> ProviderAnswer:
        work = self.catalogue.find(lookup.text)
        if work is None:
            return ProviderAnswer(self.name)
        return ProviderAnswer(self.name, status=work.status(self.jurisdiction, self.today),
                              basis=f"catalogue:{work.id}", title=work.title,
                              detail=self.describe(work))


_TAG = re.compile(r"<[^>]+>")


class BraveSearch:
    """The Brave Search web search API (see the module text)."""

    name = "web"

    def __init__(self, base_url: str = DEFAULT_SEARCH_URL, api_key_env: str = DEFAULT_KEY_ENV,
                 count: int = 5, cache_dir: str | Path | None = None,
                 user_agent: str | None = None, max_requests_per_second: float | None = 1.0,
                 max_retries: int = 2, timeout: float = 10.0) -> None:
        from copyprobe.web import WebSettings, polite_session
        from copyprobe.web import user_agent as configured_agent

        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise ValueError(f"search provider web: no API key in the environment variable "
                             f"{api_key_env} (set it, or name another with api_key_env)")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 20:
            raise ValueError(f"search provider web: count must be 1..20, got {count!r}")
        self.base_url = base_url
        self.count = count
        settings = WebSettings(
            user_agent=configured_agent(user_agent) or "copyprobe-guard/0.1",
            cache_dir=cache_dir, max_requests_per_second=max_requests_per_second,
            max_retries=max_retries, timeout=timeout)
        self.session = polite_session(settings)
        self.session.headers.update({"X-Subscription-Token": key,
                                     "Accept": "application/json"})

    def search(self, lookup: Lookup) -> ProviderAnswer:
        from copyprobe.web import FetchError

        query = lookup.query
        if not query.strip():
            return ProviderAnswer(self.name)
        try:
            body = self.session.get_json(self.base_url, params={"q": query, "count": self.count})
        except FetchError as exc:
            raise SearchError(f"web search failed: {exc}") from exc
        except Exception as exc:  # requests' own errors before any retry logic (bad URL)
            raise SearchError(f"web search failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(body, Mapping):
            raise SearchError(f"web search: the answer is not a JSON object: {str(body)[:80]}")
        results = (body.get("web") or {}).get("results") or []
        if not isinstance(results, list):
            raise SearchError("web search: web.results is not a list")
        hits = []
        for r in results[:self.count]:
            if not isinstance(r, Mapping) or not isinstance(r.get("url"), str):
                raise SearchError(f"web search: a result without a url: {str(r)[:80]}")
            hits.append(SearchHit(title=_TAG.sub("", str(r.get("title") or "")),
                                  url=r["url"],
                                  snippet=_TAG.sub("", str(r.get("description") or ""))))
        return ProviderAnswer(self.name, hits=tuple(hits), detail={"query": query})
