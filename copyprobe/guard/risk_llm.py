"""The LLM risk analyzer: a chat model reads the request and answers a JSON object
``{"task": ..., "risk": ...}``.

Reference: docs/guard-risk.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.guard.risk import ALL_TASKS, RiskError, check_query, risk_analyzer, risk_of
from copyprobe.guard.types import RiskFinding
from copyprobe.prompt import Prompt

__all__ = ["ANSWER_SCHEMA", "LLM_DECODING", "LLMAnalyzer", "classifier_prompt", "parse_answer"]

#: what the model must answer
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["task", "risk"],
    "properties": {
        "task": {"enum": list(ALL_TASKS)},
        "risk": {"enum": ["infringing", "benign"]},
    },
}

#: greedy, and long enough for the object and a little chatter around it
LLM_DECODING = {"temperature": 0.0, "max_tokens": 48, "seed": 0}

INSTRUCTIONS = (
    "You classify a user's request about a text (often a text shown in an image). Which task "
    "does the request ask for?\n"
    "- repetition: reproduce the whole text as written\n"
    "- extraction: give one named part of it (a sentence, line or paragraph)\n"
    "- paraphrase: restate it in other words\n"
    "- translation: give it in another language\n"
    "- summary: summarise it or give its main points\n"
    "- author: who wrote or published it\n"
    "- comment: an opinion on it (style, tone, quality)\n"
    "- background: context or knowledge about its topic\n"
    "- other: none of these\n"
    "risk is \"infringing\" for repetition, extraction, paraphrase and translation, and "
    "\"benign\" for the others.\n"
    "Answer with one JSON object and nothing else, for example "
    "{\"task\": \"summary\", \"risk\": \"benign\"}.\n\n"
)


def classifier_prompt(query: str) -> Prompt:
    """The chat prompt for one request: one user message, the instructions, then the request
    between the lines BEGIN REQUEST and END REQUEST."""
    body = INSTRUCTIONS + "BEGIN REQUEST\n" + check_query(query) + "\nEND REQUEST"
    return Prompt("chat", messages=({"role": "user", "content": body},))


_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_answer(text: str | None) -> tuple[dict[str, str] | None, str]:
    """``({"task": ..., "risk": ...}, "")`` from a model's answer, or ``(None, why)``.

    The first ``{...}`` (without nesting) that is JSON and validates against
    :data:`ANSWER_SCHEMA` counts; a task whose risk is not the one given is refused (the model
    contradicts itself)."""
    import jsonschema

    if not isinstance(text, str) or not text.strip():
        return None, "empty answer"
    why = "no JSON object in the answer"
    for m in _OBJECT.finditer(text):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            why = "the answer's object is not valid JSON"
            continue
        try:
            jsonschema.validate(obj, ANSWER_SCHEMA)
        except jsonschema.ValidationError as exc:
            why = f"the answer's object does not fit the schema: {exc.message}"
            continue
        if risk_of(obj["task"]) != obj["risk"]:
            why = (f"the answer's risk {obj['risk']!r} contradicts its task {obj['task']!r} "
                   f"(which is {risk_of(obj['task'])})")
            continue
        return {"task": obj["task"], "risk": obj["risk"]}, ""
    return None, why


class LLMAnalyzer:
    """``LLMAnalyzer(model={...model entry...}, cache_dir=...)``: ``model`` is a model entry as
    in the workflow config (``backend`` plus ``model_file`` or ``model_id``/``base_url``, ...);
    its ``decoding`` is laid over :data:`LLM_DECODING`. ``fallback``: the spec of the analyzer
    used when the model fails or answers nothing usable: a name (``"rules"``) or a spec for
    :func:`risk_analyzer`; ``None``: raise instead."""

    name = "llm"

    def __init__(self, model: Mapping[str, Any] | None = None,
                 cache_dir: str | Path = ".cache/copyprobe",
                 fallback: str | Mapping[str, Any] | None = "rules") -> None:
        if not isinstance(model, Mapping) or "backend" not in model:
            raise RiskError("the llm risk analyzer needs model: a model entry with a 'backend' "
                            "(e.g. llamacpp with model_file, or openai with model_id/base_url)")
        spec = dict(model)
        spec.setdefault("name", "guard-risk-llm")
        spec["decoding"] = {**LLM_DECODING, **dict(spec.get("decoding") or {}), "samples": 1}
        spec["shard_size"] = None
        spec["cache_dir"] = str(cache_dir)
        self.spec = spec
        self.fallback_spec = ({"analyzer": fallback} if isinstance(fallback, str)
                              else None if fallback is None else dict(fallback))
        if self.fallback_spec is not None and self.fallback_spec.get("analyzer") == "llm":
            raise RiskError("the llm risk analyzer cannot fall back to itself")
        self._fallback: Any = None

    def load(self) -> None:
        """Build the fallback analyzer and load its models now (a guard does at start)."""
        if self.fallback_spec is not None and self._fallback is None:
            self._fallback = risk_analyzer(self.fallback_spec)
        load = getattr(self._fallback, "load", None)
        if callable(load):
            load()

    def _fallback_findings(self, queries: list[str]) -> list[RiskFinding]:
        if self._fallback is None:
            self._fallback = risk_analyzer(self.fallback_spec)
        return self._fallback.classify_many(queries)

    def classify(self, query: str) -> RiskFinding:
        return self.classify_many([query])[0]

    def classify_many(self, queries: Sequence[str]) -> list[RiskFinding]:
        """One generation run for all requests (cached answers are not sent again)."""
        from copyprobe.generation import generate_shard
        from copyprobe.models import prepare

        queries = [check_query(q) for q in queries]
        if not queries:
            return []
        prompts = pd.DataFrame({
            "request_id": [f"q{i:06d}" for i in range(len(queries))],
            "status": "ready", "prompt_format": "chat",
            "prompt": [classifier_prompt(q).to_json() for q in queries],
            "reference": None,
        })
        manifest = prepare(self.spec.get("model_file"), Path(self.spec["cache_dir"]))
        gens, _ = generate_shard(prompts, self.spec, manifest)
        out: list[RiskFinding | None] = []
        failed: dict[int, dict[str, Any]] = {}
        for i, g in enumerate(gens.itertuples(index=False)):
            base = {"model": self.spec["name"], "from_cache": bool(g.from_cache)}
            if g.status != "ok":
                failed[i] = {**base, "llm_status": "failed", "llm_error": g.error}
                out.append(None)
                continue
            answer, why = parse_answer(g.text)
            if answer is None:
                failed[i] = {**base, "llm_status": "unparseable", "llm_error": why,
                             "llm_text": g.text}
                out.append(None)
                continue
            out.append(RiskFinding(answer["risk"], answer["task"], "llm", None,
                                   {**base, "llm_text": g.text}))
        if failed:
            if self.fallback_spec is None:
                i, why = next(iter(failed.items()))
                raise RiskError(f"the llm risk analyzer could not classify {queries[i]!r} "
                                f"({why['llm_status']}: {why['llm_error']}) and has no fallback")
            backups = self._fallback_findings([queries[i] for i in failed])
            for (i, why), f in zip(failed.items(), backups, strict=True):
                out[i] = RiskFinding(f.risk, f.task, f.component, f.score,
                                     {**f.detail, "fallback_from": "llm", **why})
        return [f for f in out if f is not None]
