"""Status verifier: is the work a prompt quotes protected, in the public domain, or openly
licensed? Consulted by the guard only when no notice was found.

Reference: docs/guard-notice-status.md.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from copyprobe.guard.catalogue import STATUSES
from copyprobe.guard.notice import prompt_texts
from copyprobe.guard.search import (
    SEARCH_PROVIDERS,
    Lookup,
    ProviderAnswer,
    SearchError,
    SearchHit,
    make_lookup,
)
from copyprobe.guard.types import StatusFinding
from copyprobe.prompt import Prompt

__all__ = ["ON_ERROR", "SEARCH_PROVIDERS", "VERDICT_SCHEMA", "StatusError", "StatusVerifier",
           "licence_status", "parse_status_verdict", "verdict_prompt"]

log = logging.getLogger(__name__)

ON_ERROR = ("protected", "unknown", "raise")

#: what the LLM must answer (extra keys are allowed and ignored)
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status", "reason"],
    "properties": {
        "status": {"enum": list(STATUSES)},
        "reason": {"type": "string"},
    },
}

#: greedy and short: the answer is one small JSON object
VERDICT_DECODING = {"temperature": 0.0, "max_tokens": 160, "seed": 0}
MAX_SNIPPET_CHARS = 300


_LICENCE_NAMES: tuple[tuple[str, str, str], ...] = (
    # (id, status, name as written; matched on the lower-cased, whitespace-normalised text)
    ("LGPL", "open_licence", r"gnu (?:lesser|library) general public licen[cs]e|lgpl"),
    ("GPL", "open_licence", r"gnu (?:affero )?general public licen[cs]e|a?gpl(?:-?v?[123])?"),
    ("GFDL", "open_licence", r"gnu free documentation licen[cs]e|gfdl"),
    ("MIT", "open_licence", r"mit licen[cs]e|expat licen[cs]e"),
    ("BSD", "open_licence", r"(?:new |modified |simplified )?bsd(?:[- ](?:[23]|two|three)"
                            r"[- ]clause)? licen[cs]e"),
    ("ISC", "open_licence", r"isc licen[cs]e"),
    ("Apache", "open_licence", r"apache licen[cs]e(?:,? (?:version |v)?[12](?:\.[01])?)?"),
    ("BSL-1.0", "open_licence", r"boost software licen[cs]e"),
    ("MPL", "open_licence", r"mozilla public licen[cs]e"),
    ("Artistic", "open_licence", r"artistic licen[cs]e"),
    ("OFL", "open_licence", r"sil open font licen[cs]e"),
    ("PSF", "open_licence", r"python software foundation licen[cs]e|psf licen[cs]e"),
    # CC BY and BY-SA; not NC (non-commercial) or ND (no derivatives)
    ("CC-BY", "open_licence",
     r"(?:creative commons )?attribution(?:[- ]share ?alike)?(?![- ]?(?:non|no ?deriv))"
     r"(?: [1-4]\.0)?(?: international| unported| generic)?(?: public)? licen[cs]e|"
     r"creative commons attribution(?:[- ]share ?alike)?(?![- ]?(?:non|no ?deriv))|"
     r"cc[- ]by(?:[- ]sa)?(?![- ]?(?:nc|nd))(?: [1-4]\.0)?"),
    ("CC0", "public_domain", r"cc0(?: 1\.0)?(?: universal)?|creative commons zero"),
    ("Unlicense", "public_domain", r"the unlicense"),
)
_NAME_ALT = "|".join(f"(?P<n{i}>{rx})" for i, (_, _, rx) in enumerate(_LICENCE_NAMES))
#: a licence named as a grant ("licensed under the MIT License", "you can redistribute it
#: and/or modify it under the terms of the GNU General Public License", "available under CC
#: BY-SA 4.0", "subject to the terms of the Mozilla Public License"); a question ("is this
#: under the GPL?") names no grant
_GRANT = re.compile(r"\b(?:(?:licen[cs]ed|released|distributed|available|published|provided|"
                    r"offered|covered|modify it|shared) (?:\w+ ){0,3}?under|subject to) "
                    r"(?:the )?(?:terms (?:and conditions )?of )?(?:either )?"
                    r"(?:version [\d.]+ of )?(?:the |a |an )?(?:" + _NAME_ALT + r")\b")
#: a licence's own title at the start of a line: alone, or before its version, "copyright"
#: or "preamble" ("GNU GENERAL PUBLIC LICENSE Version 3", "Apache License Version 2.0, January
#: 2004 ...", "The "Artistic License" Preamble")
_TITLE = re.compile(r"^\W*(?:the )?\W*(?:creative commons legal code\W*)?(?:" + _NAME_ALT
                    + r")\W*(?:$|copyright\b|preamble\b|(?:version |v)?\d)", re.M)
#: wording that is the licence itself, whatever precedes it
_OWN_WORDS: tuple[tuple[str, str, str], ...] = (
    ("GNU", "open_licence", r"everyone is permitted to copy and distribute verbatim copies of "
                            r"this licen[cs]e document"),
    ("MIT", "open_licence", r"permission is hereby granted, free of charge, to any person "
                            r"obtaining a copy"),
    ("BSD", "open_licence", r"redistribution and use in source and binary forms, with or "
                            r"without modification, are permitted"),
    ("ISC", "open_licence", r"permission to use, copy, modify,? and(?:/or)? distribute this "
                            r"software(?: and its documentation)? for any purpose,? (?:with or "
                            r"without|and without) fee,? is hereby granted"),
    ("zlib", "open_licence", r"permission is granted to anyone to use this software for any "
                             r"purpose, including commercial applications"),
    ("CC0", "public_domain", r"has waived all copyright and related or neighboring rights"),
    ("public-domain", "public_domain",
     r"(?:(?:is|are|has been|have been|was|were|been) |(?:dedicat\w*|placed|released|put) "
     r"(?:\w+ ){0,3}?)(?:in|into|to) the public domain"),
    ("Gutenberg", "public_domain", r"you may copy it, give it away or re-use it"),
)
#: wording that forbids copying: with it, no grant counts (the status is not decided here)
_FORBIDS = re.compile(
    r"no part of (?:this|the) (?:\w+ ){0,3}may be (?:reproduced|copied|transmitted|stored)|"
    r"proprietary and confidential|unauthori[sz]ed (?:copying|reproduction|distribution)|"
    r"(?:copying|reproduction|redistribution) (?:\w+ ){0,4}(?:is |are )?strictly prohibited|"
    r"may not be (?:copied|reproduced|reprinted|redistributed)")
_NEGATED = re.compile(r"\b(?:not|no longer|never|nor)\W+(?:\w+\W+){0,2}$")


def _named(m: re.Match[str]) -> tuple[str, str]:
    i = next(int(k[1:]) for k, v in m.groupdict().items() if v is not None)
    return _LICENCE_NAMES[i][0], _LICENCE_NAMES[i][1]


def licence_status(text: str | None) -> tuple[str, str] | None:
    """``(status, licence id)`` when ``text`` carries a licence that permits copying it (see
    the module text), else None. ``status`` is ``open_licence`` or ``public_domain``."""
    if not isinstance(text, str) or not text.strip():
        return None
    # each line without the comment marks a source file puts before it ("* ", "# ", "// ")
    lines = "\n".join(" ".join(re.sub(r"^\s*(?:[*#;]+|//|--)\s", " ", line).split()) for line in
                      unicodedata.normalize("NFKC", text).lower().splitlines())
    flat = " ".join(lines.split())
    if _FORBIDS.search(flat):
        return None
    for lid, status, rx in _OWN_WORDS:
        m = re.search(rx, flat)
        if m is not None and not _NEGATED.search(flat[max(0, m.start() - 40):m.start()]):
            return status, lid
    m = _TITLE.search(lines)
    if m is not None:
        lid, status = _named(m)
        return status, lid
    for m in _GRANT.finditer(flat):
        if not _NEGATED.search(flat[max(0, m.start() - 40):m.start()]):
            lid, status = _named(m)
            return status, lid
    return None


class StatusError(RuntimeError):
    """A step of the status verifier failed and the policy is ``raise``."""


class VerdictError(ValueError):
    """The LLM's answer is not a JSON object that fits :data:`VERDICT_SCHEMA`."""


class VerdictCallError(RuntimeError):
    """The LLM call failed (the generation layer's retries spent, or a permanent error)."""


VERDICT_INSTRUCTIONS = (
    "You decide the copyright status of a text that a user sent to an AI assistant. You get "
    "the first lines of the text, the user's request, and web search results about the text, "
    "if any.\n\n"
    "Status values:\n"
    "- protected: the text is under copyright and no open licence allows reuse;\n"
    "- public_domain: its copyright has expired or never existed;\n"
    "- open_licence: it is under copyright but released under an open licence (such as "
    "Creative Commons or an open-source licence);\n"
    "- unknown: the information given does not allow a decision.\n\n"
)
VERDICT_QUESTION = (
    "Answer with one JSON object and nothing else, in this form:\n"
    "{\"status\": \"protected\" | \"public_domain\" | \"open_licence\" | \"unknown\", "
    "\"reason\": \"<one sentence>\"}"
)


def verdict_prompt(lookup: Lookup, hits: Sequence[SearchHit]) -> Prompt:
    """The LLM's chat prompt for one lookup and its search hits."""
    lines = "\n".join(lookup.lines) or "(none)"
    found = "\n".join(f"{i}. {h.title}\n   {h.url}\n   {h.snippet[:MAX_SNIPPET_CHARS]}"
                      for i, h in enumerate(hits, start=1)) or "(no search results)"
    body = (VERDICT_INSTRUCTIONS + "FIRST LINES OF THE TEXT\n" + lines
            + "\n\nUSER REQUEST\n" + (lookup.request.strip() or "(none)")
            + "\n\nSEARCH RESULTS\n" + found + "\n\n" + VERDICT_QUESTION)
    return Prompt("chat", messages=({"role": "user", "content": body},))


def parse_status_verdict(text: str | None) -> dict[str, Any]:
    """The first JSON object in ``text`` (Markdown code fences and words around it allowed)
    that fits :data:`VERDICT_SCHEMA`; :class:`VerdictError` otherwise."""
    import jsonschema

    if not isinstance(text, str) or "{" not in text:
        raise VerdictError(f"no JSON object in the answer: {str(text)[:120]!r}")
    decoder = json.JSONDecoder()
    problem = "no JSON object"
    start = text.find("{")
    while start != -1:
        try:
            obj, _end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg})"
        else:
            try:
                jsonschema.validate(obj, VERDICT_SCHEMA)
            except jsonschema.ValidationError as exc:
                problem = f"does not fit the schema: {exc.message}"
            else:
                return obj
        start = text.find("{", start + 1)
    raise VerdictError(f"{problem} in the answer: {text[:120]!r}")


def _verdict_spec(backend_spec: Mapping[str, Any], cache_dir: Path) -> dict[str, Any]:
    spec = dict(backend_spec)
    if "backend" not in spec:
        raise ValueError("status verifier: the llm spec needs a 'backend' (e.g. llamacpp, "
                         "openai)")
    spec.setdefault("name", "status-verifier")
    spec["decoding"] = {**VERDICT_DECODING, **dict(spec.get("decoding") or {}), "samples": 1}
    spec["shard_size"] = None
    spec["cache_dir"] = str(cache_dir)
    return spec


class StatusVerifier:
    """See the module text.

    ``providers``: provider names in the order asked; ``provider_options``: name -> options
    (the ``web`` provider's ``cache_dir`` defaults to ``<cache_dir>/http``); ``llm``: a model
    spec for the verdict (as in the config: backend, model_file or model_id/base_url, ...) or
    None; ``cache_dir``: where web answers and verdicts are cached; ``on_error``: one of
    :data:`ON_ERROR`. ``last_seconds`` is the time the current thread's last :meth:`verify`
    took, ``last_detail`` what decided it.
    """

    def __init__(self, providers: Sequence[str] = ("catalogue",),
                 provider_options: Mapping[str, Mapping[str, Any]] | None = None,
                 llm: Mapping[str, Any] | None = None,
                 cache_dir: str | Path = ".cache/copyprobe/guard",
                 on_error: str = "unknown") -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"status verifier: on_error must be one of {list(ON_ERROR)}, "
                             f"got {on_error!r}")
        if isinstance(providers, str):
            raise ValueError("status verifier: providers must be a list of names, not a string")
        options = dict(provider_options or {})
        unknown = sorted(set(options) - set(providers))
        if unknown:
            raise ValueError(f"status verifier: provider_options for {unknown}, which are not "
                             f"among the providers {list(providers)}")
        self.cache_dir = Path(cache_dir)
        self.on_error = on_error
        self.providers = []
        for name in providers:
            opts = dict(options.get(name) or {})
            if name == "web":
                opts.setdefault("cache_dir", str(self.cache_dir / "http"))
            self.providers.append(SEARCH_PROVIDERS.get(name)(**opts))
        if "web" in providers and llm is None:
            raise ValueError("status verifier: the web provider returns search results that "
                             "only an LLM verdict can read: give an llm spec")
        self.llm = _verdict_spec(llm, self.cache_dir) if llm is not None else None
        self._manifest: dict[str, Any] | None = None
        self._local = threading.local()  # last_* are per thread (concurrent guards)

    @property
    def last_seconds(self) -> float:
        return float(getattr(self._local, "seconds", 0.0))

    @property
    def last_detail(self) -> dict[str, Any]:
        """What decided the current thread's last verify: the catalogue row, or the LLM's
        verdict (with its reason), raw answer and whether it came from the cache."""
        if not hasattr(self._local, "detail"):
            self._local.detail = {}
        return self._local.detail

    # -- errors -----------------------------------------------------------------------------
    def _failed(self, step: str, message: str, title: str | None = None) -> StatusFinding:
        error = f"{step}: {message}"
        if self.on_error == "raise":
            raise StatusError(f"status verifier: {error}")
        log.warning("status verifier: %s; status %s by the on_error policy", error,
                    self.on_error)
        return StatusFinding(status=self.on_error, basis=f"error:{self.on_error}", title=title,
                             error=error)

    # -- the LLM verdict --------------------------------------------------------------------
    def _verdict(self, lookup: Lookup, hits: Sequence[SearchHit]) -> dict[str, Any]:
        """The parsed verdict; raises VerdictError, or VerdictCallError for a failed call."""
        import pandas as pd

        from copyprobe.generation import generate_shard
        from copyprobe.models import prepare

        assert self.llm is not None
        if self._manifest is None:
            self._manifest = prepare(self.llm.get("model_file"), self.cache_dir)
        prompts = pd.DataFrame({"request_id": ["status"], "status": ["ready"],
                                "prompt_format": ["chat"],
                                "prompt": [verdict_prompt(lookup, hits).to_json()],
                                "reference": [None]})
        gens, _summary = generate_shard(prompts, self.llm, self._manifest)
        row = gens.iloc[0]
        self.last_detail.update(from_cache=bool(row["from_cache"]), answer=row["text"])
        if row["status"] != "ok":
            raise VerdictCallError(f"the model call failed: {row['error']}")
        return parse_status_verdict(row["text"])

    # -- the check --------------------------------------------------------------------------
    def verify(self, prompt: Prompt, ocr_text: str = "") -> StatusFinding:
        """The status of the work ``prompt`` quotes; ``ocr_text`` is what OCR read from its
        images (the notice identifier's ``NoticeFinding.ocr_text``)."""
        started = time.perf_counter()
        try:
            return self._verify(prompt, ocr_text)
        finally:
            self._local.seconds = time.perf_counter() - started

    def licence(self, prompt: Prompt, ocr_text: str = "") -> StatusFinding | None:
        """The status a licence the material carries gives (:func:`licence_status`, basis
        ``licence:<ID>``), or None: offline and cheap, asked by the guard even when a notice
        was found."""
        found = licence_status("\n\n".join([*prompt_texts(prompt), ocr_text or ""]))
        if found is None:
            return None
        return StatusFinding(status=found[0], basis=f"licence:{found[1]}")

    def _verify(self, prompt: Prompt, ocr_text: str) -> StatusFinding:
        self._local.detail = {}
        licensed = self.licence(prompt, ocr_text)
        if licensed is not None:
            return licensed
        lookup = make_lookup(prompt_texts(prompt), ocr_text or "")
        hits: list[SearchHit] = []
        undecided: ProviderAnswer | None = None  # a provider that knew the work, not its status
        for provider in self.providers:
            try:
                answer: ProviderAnswer = provider.search(lookup)
            except (SearchError, OSError) as exc:
                return self._failed(f"search provider {provider.name}",
                                    f"{type(exc).__name__}: {exc}")
            if answer.status == "unknown":
                undecided = undecided or answer
            elif answer.status is not None:
                self._local.detail = dict(answer.detail)
                return StatusFinding(status=answer.status, basis=answer.basis,
                                     title=answer.title)
            hits.extend(answer.hits)
        if self.llm is None:
            if undecided is not None:
                self._local.detail = dict(undecided.detail)
                return StatusFinding(status="unknown", basis=undecided.basis,
                                     title=undecided.title)
            return StatusFinding(status="unknown", basis="no_match")
        basis = "search+llm" if hits else "llm"
        title = hits[0].title if hits else None
        try:
            verdict = self._verdict(lookup, hits)
        except (VerdictError, VerdictCallError) as exc:
            return self._failed("llm verdict", str(exc), title)
        except Exception as exc:  # a failed call (or a model that cannot be loaded)
            return self._failed("llm verdict", f"{type(exc).__name__}: {exc}", title)
        self.last_detail.update(verdict=verdict, hits=len(hits))
        return StatusFinding(status=verdict["status"], basis=basis, title=title)
