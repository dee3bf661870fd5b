"""A guarded model: any backend wrapped so that each request passes the copyright guard first.

Reference: docs/guard.md.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.generation.base import BACKENDS, Backend, BackendError, Completion, Decoding
from copyprobe.generation.cache import GenerationCache
from copyprobe.guard.output import BLOCK_FINISH_REASON, OutputFinding
from copyprobe.guard.pipeline import (
    Guard,
    GuardDecision,
    GuardError,
    GuardSpec,
    output_index_digest,
)
from copyprobe.guard.types import NoticeFinding, RiskFinding, StatusFinding
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt, image_digests
from copyprobe.store import content_key

GUARD_DECISIONS = TableSpec(
    "guard_decisions",
    pa.schema([
        ("request_id", pa.string()),
        ("model", pa.string()),
        ("guard", pa.string()),            # the guard spec's digest
        ("decision_key", pa.string()),     # where the decision is stored
        ("action", pa.string()),           # pass | remind | block
        ("protected", pa.bool_()),
        ("infringing", pa.bool_()),
        ("reason", pa.string()),
        ("notice_found", pa.bool_()),
        ("notice", pa.string()),
        ("notice_where", pa.string()),
        ("status", pa.string()),
        ("status_basis", pa.string()),
        ("risk", pa.string()),
        ("task", pa.string()),
        ("risk_component", pa.string()),
        ("notice_s", pa.float64()),
        ("status_s", pa.float64()),
        ("risk_s", pa.float64()),
        ("total_s", pa.float64()),
        ("errors", pa.string()),           # JSON {check: message}
        ("decision", pa.string()),         # the whole decision as JSON
        # the output check on sample 0's answer (null: no output check, or no answer yet)
        ("output_action", pa.string()),    # pass | block | truncate
        ("output_span_words", pa.int64()),  # the first protected span's words (so far)
        ("output_span_text", pa.string()),
        ("output_doc_ids", pa.list_(pa.string())),  # its first documents' doc_id
        ("output_s", pa.float64()),        # seconds the output check took
    ]),
)


def decision_from_dict(d: Mapping[str, Any]) -> GuardDecision:
    """Rebuild a :class:`GuardDecision` from :meth:`GuardDecision.as_dict`."""
    def part(cls: type, value: Any) -> Any:
        return cls(**value) if isinstance(value, Mapping) else None

    return GuardDecision(
        action=d["action"], protected=d["protected"], infringing=d["infringing"],
        reason=d.get("reason"), message=d.get("message"),
        notice=part(NoticeFinding, d.get("notice")), status=part(StatusFinding, d.get("status")),
        risk=part(RiskFinding, d.get("risk")), timings=dict(d.get("timings") or {}),
        errors=dict(d.get("errors") or {}), guard=d.get("guard", ""),
        output=OutputFinding.from_dict(d["output"]) if d.get("output") else None)


def guard_cache_dir(spec: Mapping[str, Any]) -> Path:
    return Path(spec.get("cache_dir", ".cache/copyprobe")) / "guard"


class DecisionStore:
    """Decisions by guard digest and prompt (images by content), in the cache directory."""

    def __init__(self, root: str | Path) -> None:
        self._cache = GenerationCache(root)

    @staticmethod
    def key(guard_digest: str, prompt: Prompt) -> str:
        payload = {"guard": guard_digest, "prompt": prompt.as_dict(),
                   "images": list(image_digests(prompt))}
        return content_key(payload)

    @staticmethod
    def output_key(guard_digest: str, prompt: Prompt, sample_index: int) -> str:
        """Where the decision with the output check on sample ``sample_index``'s answer is."""
        payload = {"guard": guard_digest, "prompt": prompt.as_dict(),
                   "images": list(image_digests(prompt)), "output_sample": sample_index}
        return content_key(payload)

    def get(self, key: str) -> GuardDecision | None:
        record = self._cache.get(key)
        return decision_from_dict(record) if record is not None else None

    def put(self, key: str, decision: GuardDecision) -> None:
        self._cache.put(key, decision.as_dict())


class GuardedBackend(Backend):
    """``inner`` behind a :class:`Guard`; each prompt's decision is stored in ``store``."""

    name = "guarded"

    def __init__(self, inner: Backend, guard: Guard, store: DecisionStore,
                 workers: int = 8) -> None:
        self.inner = inner
        self.guard = guard
        self.store = store
        self.max_batch_size = int(getattr(inner, "max_batch_size", 1))
        # the concurrent path checks off the event loop, as many at once as requests in
        # flight (asyncio's default pool has min(32, cores + 4) threads)
        self._checks = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="guarded")

    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        raise TypeError("a guarded backend is built by GuardWrapper, not named in config")

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> Backend:
        raise TypeError("a guarded backend is built by GuardWrapper, not named in config")

    def decide(self, prompt: Prompt) -> GuardDecision:
        """The stored decision for this prompt, else the guard's (then stored)."""
        key = self.store.key(self.guard.digest, prompt)
        decision = self.store.get(key)
        if decision is None:
            try:
                decision = self.guard.check(prompt)
            except GuardError as exc:
                raise BackendError(str(exc), permanent=True, error_class="GuardError") from exc
            self.store.put(key, decision)
        return decision

    def _route(self, prompt: Prompt) -> Prompt | Completion:
        decision = self.decide(prompt)
        guarded = self.guard.guarded_prompt(prompt, decision)
        if guarded is None:
            return Completion(text=decision.message or "", prompt_tokens=0, completion_tokens=0,
                              finish_reason=BLOCK_FINISH_REASON)
        return guarded

    def check_output(self, prompt: Prompt, sample_index: int,
                     answer: Completion | BackendError) -> Completion | BackendError:
        """The model's ``answer`` after the output check (as is without one); the decision
        with the finding is stored."""
        if isinstance(answer, BackendError) or self.guard.spec.output is None:
            return answer
        try:
            finding = self.guard.check_output(answer.text)
        except Exception as exc:  # noqa: BLE001 (an index that cannot be opened or read)
            return BackendError(f"guard output check failed: {type(exc).__name__}: {exc}",
                                permanent=True, error_class="GuardError")
        assert finding is not None
        decision = replace(self.decide(prompt), output=finding)
        self.store.put(self.store.output_key(self.guard.digest, prompt, sample_index), decision)
        if finding.action == "pass":
            return answer
        return replace(answer, text=finding.text, finish_reason=finding.finish_reason)

    def _raise(self, result: Completion | BackendError) -> Completion:
        if isinstance(result, BackendError):
            raise result
        return result

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        routed = self._route(prompt)
        if isinstance(routed, Completion):
            return routed
        return self._raise(self.check_output(
            prompt, sample_index, self.inner.generate(routed, decoding, sample_index)))

    def generate_batch(self, prompts: Sequence[Prompt], decoding: Decoding,
                       sample_indices: Sequence[int]) -> list[Completion | BackendError]:
        out: list[Completion | BackendError | None] = [None] * len(prompts)
        send: list[Prompt] = []
        where: list[int] = []
        for i, prompt in enumerate(prompts):
            try:
                routed = self._route(prompt)
            except BackendError as exc:
                out[i] = exc
                continue
            if isinstance(routed, Completion):
                out[i] = routed
            else:
                send.append(routed)
                where.append(i)
        if send:
            results = self.inner.generate_batch(send, decoding, [sample_indices[i] for i in where])
            for i, res in zip(where, results, strict=True):
                out[i] = self.check_output(prompts[i], sample_indices[i], res)
        return [r if r is not None else BackendError("no result", permanent=True) for r in out]

    async def agenerate(self, prompt: Prompt, decoding: Decoding,
                        sample_index: int = 0) -> Completion:
        # the checks block (OCR, search, a classifier): run them off the event loop
        routed = await asyncio.get_running_loop().run_in_executor(self._checks, self._route,
                                                                  prompt)
        if isinstance(routed, Completion):
            return routed
        answer = await self.inner.agenerate(routed, decoding, sample_index)
        if self.guard.spec.output is None:
            return answer
        return self._raise(await asyncio.get_running_loop().run_in_executor(
            self._checks, self.check_output, prompt, sample_index, answer))

    async def aclose(self) -> None:
        aclose = getattr(self.inner, "aclose", None)
        if aclose is not None:
            await aclose()

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self._checks.shutdown(wait=False)
            self.guard.close()


class GuardWrapper:
    """The ``guard`` entry of :data:`~copyprobe.generation.base.BACKEND_WRAPPERS`."""

    @staticmethod
    def _check_backend(spec: Mapping[str, Any]) -> None:
        cls = BACKENDS.get(spec["backend"])
        if cls.supports_batch_api:
            raise BackendError(f"model {spec.get('name', '?')!r}: a guard cannot wrap the batch "
                               f"backend {spec['backend']!r} (requests are submitted as a "
                               "file); use its synchronous backend", permanent=True,
                               error_class="ConfigError")

    @classmethod
    def wrap_identity(cls, block: Mapping[str, Any], spec: Mapping[str, Any],
                      identity: Mapping[str, Any]) -> dict[str, Any]:
        cls._check_backend(spec)
        gspec = GuardSpec.from_config(block)
        guard = gspec.identity()
        if gspec.output is not None:
            # the output check's answers change with the protected documents, not only with
            # the index's name: the index's content digest enters the key
            guard = {**guard, "output_index_digest": output_index_digest(gspec)}
        return {**identity, "guard": guard}

    @staticmethod
    def records(block: Mapping[str, Any], spec: Mapping[str, Any],
                prompts: pd.DataFrame) -> tuple[pd.DataFrame, TableSpec]:
        """The decisions on the requests of ``prompts`` (:func:`guard_decisions`)."""
        return guard_decisions(prompts, spec), GUARD_DECISIONS

    @classmethod
    def wrap(cls, block: Mapping[str, Any], spec: Mapping[str, Any],
             backend: Backend) -> GuardedBackend:
        cls._check_backend(spec)
        root = guard_cache_dir(spec)
        workers = int(spec.get("requests", {}).get("max_concurrency", 8)) + 1
        guard = Guard(block, cache_dir=root, workers=workers)
        return GuardedBackend(backend, guard, DecisionStore(root / "decisions"), workers)


_NO_OUTPUT = dict.fromkeys(("output_action", "output_span_words", "output_span_text",
                             "output_doc_ids", "output_s"))


def _row(request_id: str, model: str, key: str, d: GuardDecision,
         output: OutputFinding | None = None) -> dict[str, Any]:
    t = d.timings
    same = {k: v for k, v in d.as_dict().items() if k not in ("timings", "output")}
    if output is not None:  # without its timing, which is output_s
        same["output"] = {k: v for k, v in output.as_dict().items() if k != "check_s"}
    return {
        "request_id": request_id, "model": model, "guard": d.guard, "decision_key": key,
        "action": d.action, "protected": d.protected, "infringing": d.infringing,
        "reason": d.reason,
        "notice_found": d.notice.found if d.notice is not None else None,
        "notice": d.notice.notice if d.notice is not None else None,
        "notice_where": d.notice.where if d.notice is not None else None,
        "status": d.status.status if d.status is not None else None,
        "status_basis": d.status.basis if d.status is not None else None,
        "risk": d.risk.risk if d.risk is not None else None,
        "task": d.risk.task if d.risk is not None else None,
        "risk_component": d.risk.component if d.risk is not None else None,
        "notice_s": t.get("notice"), "status_s": t.get("status"), "risk_s": t.get("risk"),
        "total_s": t.get("total"),
        "errors": json.dumps(dict(d.errors), sort_keys=True),
        # without its timings, which are the *_s columns: the rest is the same on every run
        "decision": json.dumps(same, ensure_ascii=False, sort_keys=True),
        **(output.as_record() if output is not None else _NO_OUTPUT),
    }


def guard_decisions(prompts: pd.DataFrame, spec: Mapping[str, Any], *,
                    compute_missing: bool = True) -> pd.DataFrame:
    """The :data:`GUARD_DECISIONS` sidecar of a guarded model's run on a PROMPTS table: one row
    per ready request, read from the decision store. A decision not stored yet (its answer
    came from a copied cache, say) is computed and stored when ``compute_missing``, else the
    request is left out. ``spec`` is the model's config slice with its ``guard`` block."""
    if spec.get("guard") is None or spec.get("guard") is False:
        raise ValueError(f"model {spec.get('name', '?')!r} has no guard block")
    root = guard_cache_dir(spec)
    store = DecisionStore(root / "decisions")
    gspec = GuardSpec.from_config(spec["guard"])
    digest = gspec.digest()
    guard: Guard | None = None
    rows = []
    ready = prompts[prompts["status"] == "ready"]
    try:
        for rid, raw in zip(ready["request_id"], ready["prompt"], strict=True):
            prompt = Prompt.from_json(raw)
            key = store.key(digest, prompt)
            decision = store.get(key)
            if decision is None:
                if not compute_missing:
                    continue
                guard = guard or Guard(gspec, cache_dir=root)
                decision = guard.check(prompt)
                store.put(key, decision)
            done = (store.get(store.output_key(digest, prompt, 0))
                    if gspec.output is not None else None)
            rows.append(_row(str(rid), str(spec.get("name", "")), key, decision,
                             done.output if done is not None else None))
    finally:
        if guard is not None:
            guard.close()
    return pd.DataFrame(rows, columns=GUARD_DECISIONS.columns)
