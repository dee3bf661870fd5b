"""The guard pipeline: which checks run, in what order, and what the guard decides.

Reference: docs/guard.md.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from copyprobe import __version__
from copyprobe.guard import reminder as rem
from copyprobe.guard.output import OutputFinding, OutputGuard, OutputStream
from copyprobe.guard.types import NoticeFinding, RiskFinding, StatusFinding
from copyprobe.prompt import Prompt

ROLES = ("notice", "status", "risk")
#: The output check's component (an :class:`~copyprobe.guard.output.OutputGuard`).
OUTPUT = "output"
#: the proxy's settings in the output block (how answers are relayed, not what is decided)
PROXY_OUTPUT_KEYS = ("on_error", "on_mismatch")
QUERY_PARTS = ("first_paragraph", "last_paragraph", "message")
ACTIONS = ("pass", "remind", "block")
#: what a request the risk analyzer calls ``uncertain`` counts as (``risk: {uncertain: ...}``):
#: ``benign`` (the default, measured in docs/guard-risk.md), ``infringing``, or ``remind``
#: (infringing, but reminded even under policy block)
UNCERTAIN_POLICIES = ("benign", "remind", "infringing")
#: the status verifier's statuses that permit copying: a notice on such a text protects nothing
OPEN_STATUSES = ("open_licence", "public_domain")


class GuardError(RuntimeError):
    """A check failed under ``on_error: raise`` (the message names the check)."""


class GuardConfigError(ValueError):
    """A bad ``guard`` block (the message names the key)."""


def _with_cache_dir(cls: Callable[..., Any], params: Mapping[str, Any],
                    cache_dir: Path | None, sub: str) -> dict[str, Any]:
    """``params`` with ``cache_dir=<cache_dir>/<sub>`` added when ``cls`` takes one and the
    params do not set it."""
    kwargs = dict(params)
    if cache_dir is not None and "cache_dir" not in kwargs:
        try:
            takes = "cache_dir" in inspect.signature(cls).parameters
        except (TypeError, ValueError):
            takes = False
        if takes:
            kwargs["cache_dir"] = str(Path(cache_dir) / sub if sub else cache_dir)
    return kwargs


def _settings(role: str, cls: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """A setting ``cls`` does not take is a :class:`GuardConfigError` naming it."""
    known = [n for n in inspect.signature(cls).parameters if n != "self"]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise GuardConfigError(f"guard.{role}: unknown setting(s) {', '.join(unknown)}; known: "
                               f"{', '.join(known)}")


def build_component(role: str, params: Mapping[str, Any], cache_dir: Path | None) -> Any:
    """The package's component for a check, built from its settings (imported only when
    used); ``cache_dir`` is handed on when the settings name none: the notice identifier keeps
    its OCR texts in ``<cache_dir>/ocr`` itself, the verifier and the analyzer get
    ``<cache_dir>/status`` and ``<cache_dir>/risk``."""
    if role == "notice":
        from copyprobe.guard.notice import NoticeIdentifier

        _settings(role, NoticeIdentifier, params)
        return NoticeIdentifier(**_with_cache_dir(NoticeIdentifier, params, cache_dir, ""))
    if role == "status":
        from copyprobe.guard.status import StatusVerifier

        _settings(role, StatusVerifier, params)
        return StatusVerifier(**_with_cache_dir(StatusVerifier, params, cache_dir, "status"))
    if role == "risk":
        from copyprobe.guard.risk import RISK_ANALYZERS, risk_analyzer

        spec = {k: v for k, v in params.items() if k != "uncertain"}  # the guard's own key
        name = spec.get("analyzer", "rules")
        if name in RISK_ANALYZERS:  # else risk_analyzer names the known ones
            spec = _with_cache_dir(RISK_ANALYZERS.get(name), spec, cache_dir, "risk")
        return risk_analyzer(spec or None)
    if role == OUTPUT:
        return build_output_guard(params)
    raise ValueError(f"no guard check {role!r}; known: {', '.join(ROLES)}")


def _output_index_dir(params: Mapping[str, Any]) -> str:
    name = params.get("index")
    if not name:
        raise GuardConfigError("guard.output.index: required: the name of the protected "
                               "materials' span index (results/spans/<index>)")
    from copyprobe.spans import paths as SP

    return SP.INDEX_DIR.format(index=name)


def output_index_digest(spec: GuardSpec) -> str:
    """The content digest of the span index ``spec``'s output check reads (from its manifest:
    an error naming the file where the index is not built)."""
    from copyprobe.spans.index import index_digest

    assert spec.output is not None
    return index_digest(_output_index_dir(spec.output))


def build_output_guard(params: Mapping[str, Any], index: Any = None) -> OutputGuard:
    """The output check from the ``output`` block; ``index`` (a SpanLookup) when the caller
    has one open, else the block's ``index`` names ``results/spans/<index>``, opened with
    :meth:`copyprobe.spans.index.SpanIndex.open`."""
    kwargs = {k: v for k, v in params.items() if k != "index" and k not in PROXY_OUTPUT_KEYS}
    if index is None:
        from copyprobe.spans.index import SpanIndex

        index = SpanIndex.open(_output_index_dir(params))
    return OutputGuard(index, **kwargs)


#: what a schema type is called in an error
_TYPE_WORDS = {"object": "a mapping", "boolean": "true or false", "null": "null",
               "string": "a string", "number": "a number", "integer": "an integer"}
#: settings whose keys are names of their own kind (an unknown one is named so)
_NAMED_KEYS = {"guard.output.chars_per_word": "script group"}


@functools.cache
def _guard_schema() -> dict[str, Any]:
    """The schema of a ``guard`` block (the study's fragment, without the study's own
    ``ablation`` key, which is expanded before a spec is built)."""
    import yaml

    text = (Path(__file__).parent / "data/schema.yaml").read_text(encoding="utf-8")
    schema = dict(yaml.safe_load(text)["model_properties"]["guard"])
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "ablation"}
    return schema


def _schema_message(e: Any) -> str:
    """A schema error as a sentence naming the key (``guard.output.min_words ...``)."""
    parts = ["guard", *map(str, e.absolute_path)]
    key = ".".join(parts)
    if e.validator == "additionalProperties":
        known = sorted(e.schema.get("properties", {}))
        unknown = sorted(k for k in e.instance if k not in known)
        if key in _NAMED_KEYS:
            return f"{key}: unknown {_NAMED_KEYS[key]} {unknown[0]!r}; known: {', '.join(known)}"
        return f"{key}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}"
    if len(parts) > 3:  # an entry of a named map: chars_per_word.thai
        key = f"{'.'.join(parts[:-1])}: {parts[-1]}"
    if e.validator == "enum":
        return f"{key} must be one of {', '.join(map(str, e.validator_value))}, got {e.instance!r}"
    if e.validator == "type":
        types = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        return f"{key}: expected {' or '.join(_TYPE_WORDS.get(t, t) for t in types)}, got " \
               f"{e.instance!r}"
    if e.validator in ("minimum", "exclusiveMinimum"):
        what = "integer" if e.schema.get("type") == "integer" else "number"
        return f"{key} must be a positive {what}, got {e.instance!r}"
    return f"{key}: {e.message}"


def validate_block(block: Mapping[str, Any]) -> None:
    """Check a ``guard`` block against the guard's schema; the first problem is a
    :class:`GuardConfigError` naming its key."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_guard_schema())
    errors = sorted(validator.iter_errors(dict(block)), key=lambda e: list(e.absolute_path))
    if errors:
        raise GuardConfigError(_schema_message(errors[0]))


@dataclass(frozen=True)
class GuardSpec:
    """A model's ``guard`` block, checked. ``notice``/``status``/``risk`` are None when
    switched off, else the component's settings (``{}``: every default)."""

    policy: str = "remind"
    style: str = "system"
    notice: Mapping[str, Any] | None = field(default_factory=dict)
    status: Mapping[str, Any] | None = field(default_factory=dict)
    risk: Mapping[str, Any] | None = field(default_factory=dict)
    on_error: str = "raise"
    query: str = "first_paragraph"
    timeout_s: float = 120.0
    reminder_text: str | None = None
    block_text: str | None = None
    #: False: no input check runs and every request passes (an output-only guard)
    input: bool = True
    #: the output check's settings (None: off): index, min_words, action, max_docs, block_text
    output: Mapping[str, Any] | None = None

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | GuardSpec | None) -> GuardSpec:
        """The spec of a ``guard`` block, validated by the guard's schema (the one place its
        keys, types and choices are checked; errors name the key)."""
        if isinstance(block, GuardSpec):
            return block
        block = dict(block or {})
        validate_block(block)
        out: dict[str, Any] = {}
        for role in (*ROLES, OUTPUT):
            if role in block:
                value = block.pop(role)
                out[role] = None if value is False or value is None else \
                    {} if value is True else dict(value)
        # the schema documents {component: default} for the notice identifier, the only one
        if out.get("notice") and "component" in out["notice"]:
            if (name := out["notice"].pop("component")) != "default":
                raise GuardConfigError(
                    f"guard.notice.component: the package has one notice identifier "
                    f"('default'), got {name!r}; leave the key out")
        spec = cls(**block, **out)
        texts = [(f"guard.{k}", getattr(spec, k)) for k in ("reminder_text", "block_text")]
        if spec.output is not None:
            texts.append(("guard.output.block_text", spec.output.get("block_text")))
        for key, text in texts:  # what a schema cannot say: the only placeholder is {reason}
            if text is not None:
                try:
                    text.format(reason="x")
                except (KeyError, IndexError, ValueError) as exc:
                    raise GuardConfigError(f"{key}: only {{reason}} may be used in "
                                           f"braces ({exc})") from None
        return spec

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, every default filled in."""
        d = asdict(self)
        for role in (*ROLES, OUTPUT):
            d[role] = dict(d[role]) if d[role] is not None else None
        return d

    def identity(self) -> dict[str, Any]:
        """What changes the guard's decisions and texts: the spec with the reminder wording
        actually used, and the package version. It enters the generation cache key of a
        guarded model. ``input`` (when true) and ``output`` (when off) are left out: the
        guards that existed before them keep their digests and cache keys."""
        d = self.as_dict()
        d.pop("timeout_s")
        if d["input"] is True:
            d.pop("input")
        if d["output"] is None:
            d.pop("output")
        else:  # the prefilter changes how fast the check is, not what it decides; the
            # proxy's keys, how answers are relayed
            for key in ("prefilter", *PROXY_OUTPUT_KEYS):
                d["output"].pop(key, None)
        if d["risk"] is not None:  # its default decides what an uncertain request counts as
            d["risk"].setdefault("uncertain", UNCERTAIN_POLICIES[0])
        d["reminder_text"] = self.reminder_text or rem.REMINDER_TEXT
        d["block_text"] = self.block_text or rem.BLOCK_TEXT
        return {"guard": d, "copyprobe": __version__}

    def digest(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def without(self, role: str) -> GuardSpec:
        """The same guard with one check switched off (the ablation)."""
        if role not in ROLES:
            raise ValueError(f"no guard check {role!r}; known: {', '.join(ROLES)}")
        return replace(self, **{role: None})


@dataclass(frozen=True)
class GuardDecision:
    """What the guard decided for one prompt, with each finding and each check's latency."""

    action: str                        # "pass" | "remind" | "block"
    protected: bool
    infringing: bool
    reason: str | None = None          # why the guard acted (None on pass)
    message: str | None = None         # the reminder added, or the block message
    notice: NoticeFinding | None = None
    status: StatusFinding | None = None
    risk: RiskFinding | None = None
    #: seconds per check that ran ("notice", "status", "risk") and "total" (the added latency)
    timings: Mapping[str, float] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    guard: str = ""                    # the guard spec's digest
    #: the output check's finding on the model's answer (None: no output check, or not yet)
    output: OutputFinding | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, sort_keys=True)


def _message_text(prompt: Prompt) -> str:
    if prompt.format == "completion":
        return prompt.text
    for m in reversed(prompt.messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(p.get("text", "") for p in content
                             if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def query_text(prompt: Prompt, part: str = "first_paragraph") -> str:
    """What the user asks, for the risk analyzer: the text of the last user message (its
    text parts joined; a plain-text prompt: all of it), or only its first or last paragraph
    (split at blank lines). A request often carries the material after the instruction
    ("Translate this:" then the text), and words of the material ("repeat", "translate") must
    not decide what the request asks for; the benchmark's text-only prompts put the query
    first and the material after a blank line."""
    if part not in QUERY_PARTS:
        raise ValueError(f"query part must be one of {', '.join(QUERY_PARTS)}, got {part!r}")
    text = _message_text(prompt)
    if part == "message":
        return text
    paragraphs = [p for p in _BLANK_LINE.split(text.strip()) if p.strip()] or [""]
    return (paragraphs[0] if part == "first_paragraph" else paragraphs[-1]).strip()


class Guard:
    """Runs the configured checks on a prompt (:meth:`check`) and applies the decision
    (:meth:`guarded_prompt`). Thread-safe: one guard serves concurrent requests; the risk
    analyzer runs in a pool of ``workers`` threads while the calling thread runs the notice
    identifier and, when needed, the status verifier.

    ``components``: components already built, by check (``"notice"``, ``"status"``,
    ``"risk"``), used instead of the package's own; a switched-off check ignores its entry."""

    def __init__(self, spec: Mapping[str, Any] | GuardSpec | None = None, *,
                 cache_dir: str | Path | None = None, workers: int = 32,
                 components: Mapping[str, Any] | None = None) -> None:
        self.spec = GuardSpec.from_config(spec)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.digest = self.spec.digest()
        unknown = sorted(set(components or {}) - {*ROLES, OUTPUT})
        if unknown:
            raise ValueError(f"no guard check {', '.join(unknown)}; known: "
                             f"{', '.join((*ROLES, OUTPUT))}")
        self._components: dict[str, Any] = dict(components or {})
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="copyguard")

    # -- components ---------------------------------------------------------------------------
    def component(self, role: str) -> Any:
        """The component of a check (built on first use), or None when switched off (every
        input check is, under ``input: false``)."""
        params = getattr(self.spec, role)
        if params is None or (role in ROLES and not self.spec.input):
            return None
        with self._lock:
            if role not in self._components:
                self._components[role] = build_component(role, params, self.cache_dir)
            return self._components[role]

    def build(self) -> Guard:
        """Build every switched-on component now and load its models (a component's
        ``load()``, e.g. the risk analyzer's embedding model): a server and the workflow do
        this at start, so a bad setting or a missing engine stops it there rather than
        failing each request, and the first request pays no model load."""
        for role in (*ROLES, OUTPUT):
            comp = self.component(role)
            load = getattr(comp, "load", None)
            if callable(load):
                load()
        return self

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for comp in self._components.values():
            close = getattr(comp, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the checks ---------------------------------------------------------------------------
    @staticmethod
    def _timed(fn: Callable[[], Any]) -> tuple[Any, float, BaseException | None]:
        t0 = time.perf_counter()
        try:
            return fn(), time.perf_counter() - t0, None
        except Exception as exc:  # reported by the caller, per on_error
            return None, time.perf_counter() - t0, exc

    def _risk(self, query: str) -> tuple[Any, float, BaseException | None]:
        comp = self.component("risk")
        return self._timed(lambda: comp.classify(query))

    def check_output(self, text: str) -> OutputFinding | None:
        """The output check on a whole answer (None: the guard has none)."""
        comp = self.component(OUTPUT)
        return comp.check(text) if comp is not None else None

    def output_stream(self) -> OutputStream | None:
        """A streamed answer's output check (None: the guard has none)."""
        comp = self.component(OUTPUT)
        return comp.stream() if comp is not None else None

    def check(self, prompt: Prompt) -> GuardDecision:
        """Run the checks on ``prompt`` and decide."""
        t0 = time.perf_counter()
        if not self.spec.input:
            return GuardDecision("pass", False, False, timings={"total": 0.0},
                                 guard=self.digest)
        timings: dict[str, float] = {}
        errors: dict[str, str] = {}
        risk_future: Future | None = None
        if self.spec.risk is not None:
            self.component("risk")  # built here, so a construction error is not a timeout
            risk_future = self._pool.submit(self._risk, query_text(prompt, self.spec.query))

        notice: NoticeFinding | None = None
        status: StatusFinding | None = None
        flagged_by_error = False
        if self.spec.notice is not None:
            comp = self.component("notice")
            notice, timings["notice"], exc = self._timed(lambda: comp.identify(prompt))
            if exc is not None:
                flagged_by_error |= self._failed("notice", exc, errors)
                notice = None
        found = notice is not None and notice.found
        if self.spec.status is not None:
            comp = self.component("status")
            ocr_text = notice.ocr_text if notice is not None else ""
            # with a notice found, only whether the text is a licence that permits copying
            # (a component without ``licence`` is not asked)
            verify = (comp.verify if not found
                      else getattr(comp, "licence", lambda _p, _o: None))
            status, seconds, exc = self._timed(lambda: verify(prompt, ocr_text))
            if not found or status is not None or exc is not None:
                timings["status"] = seconds
            if exc is not None:
                flagged_by_error |= self._failed("status", exc, errors)
                status = None

        risk: RiskFinding | None = None
        risk_flag_error = False
        if risk_future is not None:
            remaining = max(0.0, self.spec.timeout_s - (time.perf_counter() - t0))
            try:
                risk, timings["risk"], exc = risk_future.result(timeout=remaining)
            except FutureTimeout:
                risk_future.cancel()
                exc = TimeoutError(f"no answer within timeout_s={self.spec.timeout_s}")
                timings["risk"] = time.perf_counter() - t0
            if exc is not None:
                risk_flag_error = self._failed("risk", exc, errors)
                risk = None

        protection_checked = self.spec.notice is not None or self.spec.status is not None
        licensed = status is not None and status.status in OPEN_STATUSES
        protected = (not protection_checked
                     or (found and not licensed)
                     or bool(status is not None and status.status == "protected")
                     or flagged_by_error)
        uncertain = (self.spec.risk.get("uncertain", UNCERTAIN_POLICIES[0])
                     if self.spec.risk is not None else None)
        if risk is not None and risk.risk == "uncertain":
            risk = replace(risk, detail={**risk.detail, "uncertain_policy": uncertain})
        infringing = (self.spec.risk is None or risk_flag_error
                      or bool(risk is not None and risk.risk == "infringing")
                      or bool(risk is not None and risk.risk == "uncertain"
                              and uncertain != "benign"))
        timings["total"] = time.perf_counter() - t0
        if not (protected and infringing):
            return GuardDecision("pass", protected, infringing, notice=notice, status=status,
                                 risk=risk, timings=timings, errors=errors, guard=self.digest)
        reason = rem.reason_text(
            notice=notice.notice if notice is not None and notice.found else None,
            status_basis=status.basis if status is not None and status.status == "protected"
            else None,
            title=status.title if status is not None else None,
            task=risk.task if risk is not None else None)
        remind_only = risk is not None and risk.risk == "uncertain" and uncertain == "remind"
        if self.spec.policy == "block" and not remind_only:
            action, message = "block", rem.block_message(reason, self.spec.block_text)
        else:
            action, message = "remind", rem.reminder_message(reason, self.spec.reminder_text)
        return GuardDecision(action, protected, infringing, reason=reason, message=message,
                             notice=notice, status=status, risk=risk, timings=timings,
                             errors=errors, guard=self.digest)

    def _failed(self, role: str, exc: BaseException, errors: dict[str, str]) -> bool:
        """Record a failed check; True when it flags (``on_error: flag``)."""
        errors[role] = f"{type(exc).__name__}: {exc}"[:500]
        if self.spec.on_error == "raise":
            raise GuardError(f"guard check {role!r} failed: {errors[role]}") from exc
        return self.spec.on_error == "flag"

    def guarded_prompt(self, prompt: Prompt, decision: GuardDecision) -> Prompt | None:
        """The prompt to send to the model: as is on pass, with the reminder on remind, None
        on block (answer with ``decision.message`` instead)."""
        if decision.action == "pass":
            return prompt
        if decision.action == "block":
            return None
        assert decision.message is not None
        return rem.add_reminder(prompt, decision.message, self.spec.style)
