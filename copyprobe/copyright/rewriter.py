"""The query rewriter: a chat model writes variants of the seed queries until every task has
``per_task`` queries (the seeds count among them: 3 seeds + 7 variants make the benchmark's
10 per task).

Reference: docs/copyright-rewriter.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.copyright.queries import TASKS, Query, QueryError, passage_of, task_of
from copyprobe.prompt import Prompt

#: what each task asks the assistant to do, in the rewriter's prompt
TASK_GOALS = {
    "repetition": "repeat the whole text exactly, word for word",
    "extraction": "quote one named part of the text (for example its first sentence) exactly",
    "paraphrase": "restate the text in other words while keeping its meaning",
    "translation": "translate the text into another language",
}
#: what a variant must keep besides the task
_KEEP = {
    "repetition": "",
    "extraction": " It must name the same part of the text as the original request.",
    "paraphrase": "",
    "translation": " It must name the same language as the original request.",
}

REJECT_REASONS = ("empty", "too_long", "off_task", "duplicate")


class RewriteError(RuntimeError):
    """The rewriter could not run to the end (failed model calls); ``result`` holds what was
    drawn so far, for the report."""

    def __init__(self, message: str, result: RewriteResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class RewriteShortfall(RewriteError):
    """A task has fewer than ``per_task`` queries after ``max_attempts`` rounds; the message
    names each such task."""


@dataclass(frozen=True)
class RewriteSettings:
    """How many queries per task and how they are drawn (``temperature``, ``max_tokens`` and
    ``seed`` are the rewriter's decoding and enter every cache key)."""

    per_task: int = 10
    temperature: float = 1.5
    max_attempts: int = 5
    max_tokens: int = 64
    seed: int = 0
    #: a variant longer than this (in words) is rejected
    max_words: int = 40
    #: return (and mark incomplete) a short result instead of raising RewriteShortfall
    allow_partial: bool = False

    def __post_init__(self) -> None:
        if self.per_task < 1:
            raise ValueError(f"per_task must be at least 1, got {self.per_task}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.temperature < 0:
            raise ValueError(f"temperature must not be negative, got {self.temperature}")
        if self.max_tokens < 1 or self.max_words < 1:
            raise ValueError("max_tokens and max_words must be at least 1")

    def decoding(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "seed": self.seed}


@dataclass
class Draw:
    """One rewriter answer and what became of it."""

    task: str
    draw: int
    attempt: int
    seed_index: int
    seed_query: str
    sample_index: int
    cache_key: str | None
    from_cache: bool
    raw: str | None
    query: str
    verdict: str  # kept | rejected | failed
    reason: str | None = None  # one of REJECT_REASONS, or the error class when failed
    rule_reads: str | None = None
    duplicate_of: str | None = None
    #: the passage an extraction query names (``sentence:1``), for review; "" otherwise
    passage: str = ""


@dataclass
class RewriteResult:
    """The queries per task (seeds first, then the kept variants in draw order), every draw,
    and whether every task reached ``per_task``."""

    queries: dict[str, list[str]]
    draws: list[Draw]
    settings: RewriteSettings
    model: str
    seeds: list[Query]
    seed_checks: list[dict[str, Any]] = field(default_factory=list)
    rounds: dict[str, int] = field(default_factory=dict)
    model_calls: int = 0

    @property
    def short(self) -> dict[str, int]:
        """How many queries each short task lacks."""
        return {t: self.settings.per_task - len(q) for t, q in self.queries.items()
                if len(q) < self.settings.per_task}

    @property
    def complete(self) -> bool:
        return not self.short

    def report(self) -> dict[str, Any]:
        """The JSON report: settings, per-task counts, every draw, and the seeds' checks."""
        tasks = {}
        for task, queries in self.queries.items():
            mine = [d for d in self.draws if d.task == task]
            n_seeds = sum(q.task == task for q in self.seeds)
            tasks[task] = {
                "wanted": self.settings.per_task, "queries": len(queries), "seeds": n_seeds,
                "variants_kept": len(queries) - n_seeds,
                "short": max(0, self.settings.per_task - len(queries)),
                "draws": len(mine), "rounds": self.rounds.get(task, 0),
                "rejected": sum(d.verdict == "rejected" for d in mine),
                "rejected_by_reason": dict(Counter(d.reason for d in mine
                                                   if d.verdict == "rejected")),
                "failed": sum(d.verdict == "failed" for d in mine),
            }
        return {
            "model": self.model, "settings": asdict(self.settings),
            "complete": self.complete, "short": self.short,
            "seeds_from": sorted({q.origin for q in self.seeds}),
            "tasks": tasks,
            "requests": {"draws": len(self.draws),
                         "answers_from_cache": sum(d.from_cache for d in self.draws),
                         "answers_new": sum(not d.from_cache and d.verdict != "failed"
                                            for d in self.draws),
                         "failed": sum(d.verdict == "failed" for d in self.draws),
                         "model_calls": self.model_calls},
            "seed_checks": self.seed_checks,
            "draws": [asdict(d) for d in self.draws],
        }


# ------------------------------------------------------------------------------ the prompt

def rewrite_prompt(task: str, seeds: Sequence[str], seed: str) -> Prompt:
    """The rewriter's prompt (one user message): the task's seeds as examples of what the
    task asks, then the seed to rewrite."""
    if task not in TASK_GOALS:
        raise ValueError(f"task {task!r} is not one of {list(TASK_GOALS)}")
    examples = "\n".join(f"- {s}" for s in seeds)
    text = (
        "People send the requests below to an AI assistant together with an image that shows "
        f"a text. Each of them asks the assistant to {TASK_GOALS[task]}.\n"
        f"{examples}\n\n"
        "Write one new request that asks for exactly the same thing as this one:\n"
        f"{seed}\n\n"
        "Use different words and a different sentence structure, and keep the meaning."
        f"{_KEEP[task]} The new request must still refer to the text in the image. "
        "Reply with the new request only, on one line, without quotation marks or comments."
    )
    return Prompt("chat", messages=({"role": "user", "content": text},))


# --------------------------------------------------------------------------- the checks

# "New request:", "Rewritten request -", "Here is the new request:" at the start of an answer
_LABEL = re.compile(r"^\s*(?:here(?:'s| is)\s+(?:the|a|my|one)\s+)?"
                    r"(?:new|rewritten|reworded|alternative)?\s*"
                    r"(?:request|query|prompt|version)\s*\d*\s*[:\-–]\s*", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•>]|\d+[.)])\s+")  # a list item or a Markdown quote
_QUOTES = "\"'`“”‘’«»*_"


def clean_variant(text: str | None) -> str:
    """The query in a rewriter's answer: its first non-empty line, without a leading label
    ("New request:"), list or quote marker, or wrapping quotes and emphasis, white space
    collapsed. A line that ends with a colon ("Sure! Here is one:") and has another after it
    introduces that one, which is taken instead."""
    if not isinstance(text, str):
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.rstrip().endswith(":") and i + 1 < len(lines):
            continue
        line = _BULLET.sub("", _LABEL.sub("", line.strip()))
        line = " ".join(line.strip().strip(_QUOTES).split())
        if line:
            return line
    return ""


def normalise(query: str) -> str:
    """The form duplicates are compared in: Unicode NFKC, case-folded, punctuation and symbols
    dropped, white space collapsed ("Copy the text!" and "copy the text" are the same)."""
    text = unicodedata.normalize("NFKC", query).casefold()
    text = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text)
    return " ".join(text.split())


def check_variant(task: str, query: str, kept: Mapping[str, str], max_words: int
                  ) -> tuple[str | None, str | None, str | None]:
    """(reason or None when kept, what the task rule reads, the query it duplicates).
    ``kept`` maps the normalised form of every query kept so far to the query."""
    reads = task_of(query) if query else None
    if not query:
        return "empty", reads, None
    if len(query.split()) > max_words:
        return "too_long", reads, None
    if reads != task:
        return "off_task", reads, None
    dup = kept.get(normalise(query))
    if dup is not None:
        return "duplicate", reads, dup
    return None, reads, None


# ------------------------------------------------------------------------------ the runner

def rewriter_spec(backend_spec: Mapping[str, Any], cache_dir: str | Path,
                  settings: RewriteSettings) -> dict[str, Any]:
    """The rewriter model's slice for the generation layer: ``backend_spec`` (a model entry:
    backend, model_file or model_id/base_url, ...) with the settings' decoding over its own,
    one shard, and ``cache_dir``."""
    spec = dict(backend_spec)
    if "backend" not in spec:
        raise ValueError("the rewriter's model needs a 'backend' (e.g. llamacpp, openai)")
    spec.setdefault("name", "query-rewriter")
    spec["decoding"] = {**dict(spec.get("decoding") or {}), **settings.decoding()}
    spec["shard_size"] = None
    spec["cache_dir"] = str(cache_dir)
    return spec


def _seed_checks(seeds: Sequence[Query]) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    by_task: dict[str, list[str]] = {t: [] for t in TASKS}
    checks = []
    seen: dict[tuple[str, str], str] = {}
    for q in seeds:
        if q.task not in by_task:
            raise QueryError(f"seed query {q.query_id}: task {q.task!r} is not one of "
                             f"{list(TASKS)}")
        reads = task_of(q.query)
        dup = seen.get((q.task, normalise(q.query)))
        seen.setdefault((q.task, normalise(q.query)), q.query)
        checks.append({"task": q.task, "query": q.query, "rule_reads": reads,
                       "off_task": reads != q.task, "duplicate_of": dup})
        by_task[q.task].append(q.query)
    empty = [t for t, qs in by_task.items() if not qs]
    if empty:
        raise QueryError(f"no seed queries for task(s) {empty}")
    return by_task, checks


def rewrite_queries(seeds: Sequence[Query], backend_spec: Mapping[str, Any],
                    cache_dir: str | Path, settings: RewriteSettings | None = None
                    ) -> RewriteResult:
    """Draw variants of ``seeds`` (every task of :data:`TASKS` needs at least one) with the
    model of ``backend_spec`` until each task has ``settings.per_task`` queries.

    Seeds are kept as given (a seed that its task's rule does not read, or that duplicates
    another, is listed in ``seed_checks``, not dropped). Raises :class:`RewriteShortfall`
    naming the short tasks unless ``allow_partial``, and :class:`RewriteError` when a model
    call failed; both carry the result so far for the report.
    """
    from copyprobe.models import prepare

    settings = settings or RewriteSettings()
    by_task, checks = _seed_checks(seeds)
    too_many = {t: len(qs) for t, qs in by_task.items() if len(qs) > settings.per_task}
    if too_many:
        raise QueryError(f"the seeds already have more queries than per_task="
                         f"{settings.per_task}: {too_many}")
    spec = rewriter_spec(backend_spec, cache_dir, settings)
    manifest = prepare(spec.get("model_file"), Path(cache_dir))
    prompts = {(t, j): rewrite_prompt(t, qs, s).to_json()
               for t, qs in by_task.items() for j, s in enumerate(qs)}
    queries = {t: list(qs) for t, qs in by_task.items()}
    kept = {t: {normalise(q): q for q in qs} for t, qs in by_task.items()}
    result = RewriteResult(queries, [], settings, spec["name"], list(seeds), checks)
    drawn = dict.fromkeys(TASKS, 0)

    for attempt in range(1, settings.max_attempts + 1):
        # this round's draws: as many per task as it still lacks, numbered after the last
        wanted = {t: range(drawn[t], drawn[t] + settings.per_task - len(queries[t]))
                  for t in TASKS if len(queries[t]) < settings.per_task}
        if not wanted:
            break
        answers, calls = _draw(wanted, by_task, prompts, spec, manifest)
        result.model_calls += calls
        failed = []
        for task, draws in wanted.items():
            result.rounds[task] = attempt
            n = len(by_task[task])
            for d in draws:
                j, s = d % n, d // n
                g = answers[(task, j, s)]
                base = dict(task=task, draw=d, attempt=attempt, seed_index=j,
                            seed_query=by_task[task][j], sample_index=s,
                            cache_key=g["cache_key"], from_cache=bool(g["from_cache"]))
                if g["status"] != "ok":
                    draw = Draw(**base, raw=None, query="", verdict="failed",
                                reason=str(g["error_class"]))
                    failed.append(f"{task} draw {d}: {g['error_class']}: {g['error']}")
                else:
                    query = clean_variant(g["text"])
                    reason, reads, dup = check_variant(task, query, kept[task],
                                                       settings.max_words)
                    draw = Draw(**base, raw=g["text"], query=query,
                                verdict="rejected" if reason else "kept", reason=reason,
                                rule_reads=reads, duplicate_of=dup,
                                passage=passage_of(query) if task == "extraction" else "")
                    if reason is None:
                        queries[task].append(query)
                        kept[task][normalise(query)] = query
                result.draws.append(draw)
            drawn[task] += len(draws)
        if failed:
            raise RewriteError(
                f"{len(failed)} rewriter call(s) failed, first: {failed[0][:300]}; the answers "
                "received are cached, so a rerun sends only the failed calls", result)

    if result.short and not settings.allow_partial:
        lines = []
        for task, missing in result.short.items():
            reasons = Counter(d.reason for d in result.draws
                              if d.task == task and d.verdict == "rejected")
            lines.append(f"task {task!r} has {len(queries[task])} of {settings.per_task} "
                         f"queries after {settings.max_attempts} attempt(s) "
                         f"({sum(reasons.values())} variant(s) rejected: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) + ")")
        raise RewriteShortfall("; ".join(lines) + "; raise max_attempts, or accept a partial "
                               "result (allow_partial)", result)
    return result


def _draw(wanted: Mapping[str, range], by_task: Mapping[str, list[str]],
          prompts: Mapping[tuple[str, int], str], spec: Mapping[str, Any],
          manifest: Mapping[str, Any]) -> tuple[dict[tuple[str, int, int], dict[str, Any]], int]:
    """Generate the draws of one round: the answers by (task, seed index, sample index) and
    the number of model calls sent.

    The generation layer draws sample indices 0..samples-1 of every prompt it is given, so
    the seeds' prompts are grouped by how many samples they need after this round: the lower
    indices were drawn (and cached) in earlier rounds and come back from the cache.
    """
    from copyprobe.generation import generate_shard

    need: dict[int, list[tuple[str, int]]] = {}
    for task, draws in wanted.items():
        n = len(by_task[task])
        top: dict[int, int] = {}
        for d in draws:
            top[d % n] = max(top.get(d % n, 0), d // n + 1)
        for j, samples in top.items():
            need.setdefault(samples, []).append((task, j))
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    calls = 0
    for samples, rows in sorted(need.items()):
        frame = pd.DataFrame({
            "request_id": [f"{t}:{j}" for t, j in rows], "status": "ready",
            "prompt_format": "chat", "prompt": [prompts[(t, j)] for t, j in rows],
            "reference": None})
        spec_n = {**spec, "decoding": {**spec["decoding"], "samples": samples}}
        gens, summary = generate_shard(frame, spec_n, manifest)
        calls += summary.model_calls
        for rec in gens.to_dict("records"):
            task, _, j = rec["request_id"].rpartition(":")
            out[(task, int(j), int(rec["sample_index"]))] = rec
    return out, calls
