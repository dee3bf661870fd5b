"""What a config costs to run, before anything runs: calls, tokens and US dollars per model
(``copyprobe cost CONFIG``).

Reference: docs/paper-setups.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from copyprobe.generation.base import Decoding, backend_facts
from copyprobe.generation.limits import IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, content_parts
from copyprobe.prompt import Prompt
from copyprobe.sources.base import SOURCES
from copyprobe.studies import PlannedRequests, studies

#: Tokens per English word (OpenAI's rule of thumb: ~750 words per 1,000 tokens).
TOKENS_PER_WORD = 4 / 3

COLUMNS = ("study", "model", "backend", "model_id", "run", "part", "calls", "prompt_tokens",
           "completion_tokens", "usd")


def word_tokens(words: int) -> int:
    """The estimated tokens of ``words`` words of English text."""
    return math.ceil(words * TOKENS_PER_WORD)


def prompt_tokens(prompt: Prompt, images: int = 0) -> int:
    """The estimated prompt tokens of ``prompt``: its words (every message's text) x
    :data:`TOKENS_PER_WORD`, the chat framing per message, and ``images`` images (beside any
    the prompt holds)."""
    if prompt.format != "chat":
        return word_tokens(len(prompt.text.split())) + images * IMAGE_TOKENS
    words = 0
    for message in prompt.messages:
        texts, n = content_parts(message.get("content"))
        words += sum(len(t.split()) for t in texts)
        images += n
    return (word_tokens(words) + MESSAGE_OVERHEAD_TOKENS * len(prompt.messages)
            + images * IMAGE_TOKENS)


def completion_tokens(spec: Mapping[str, Any], reference_words: int | None = None) -> int:
    """The most completion tokens one request of the model slice ``spec`` may write: its
    ``max_tokens``, scaled to a reference of ``reference_words`` words as the runner does
    (``max_tokens_per_reference_word``)."""
    from copyprobe.generation.runner import RunSettings, request_decoding

    decoding = Decoding.from_config(spec.get("decoding", {}))
    reference = None if reference_words is None else "w " * reference_words
    return request_decoding(decoding, reference, RunSettings.from_config(spec)).max_tokens


def source_documents(cfg: Mapping[str, Any], given: Mapping[str, int] | None = None
                     ) -> dict[str, int | None]:
    """The most documents each source of ``cfg`` gives a model: ``given[source]`` when set,
    else the kind's :meth:`~copyprobe.sources.base.Source.max_documents` (None: unknown)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(cfg["sources"]))
    if unknown:
        raise ValueError(f"--documents names source(s) {unknown} that the config does not "
                         f"have; its sources: {', '.join(cfg['sources'])}")
    out: dict[str, int | None] = {}
    for name, spec in cfg["sources"].items():
        if name in given:
            out[name] = int(given[name])
            continue
        params = {k: v for k, v in spec.items() if k not in ("kind", "cut_at")}
        out[name] = SOURCES.get(spec["kind"]).max_documents(params)
    return out


def usd(spec: Mapping[str, Any], prompt_tokens: int | None,
        completion_tokens: int | None) -> float | None:
    """The price of the tokens at the model's ``price`` (None: no price, or a local backend),
    times its backend's ``price_factor`` (``openai_batch``: half the list price)."""
    price = spec.get("price")
    facts = backend_facts(str(spec.get("backend")))
    if not price or not facts["remote"]:
        return None
    if prompt_tokens is None or completion_tokens is None:
        return None
    if "input_per_million" not in price or "output_per_million" not in price:
        return None
    return facts["price_factor"] * (prompt_tokens * price["input_per_million"]
                                    + completion_tokens * price["output_per_million"]) / 1e6


def _row(study: str, plan: PlannedRequests) -> dict[str, Any]:
    def total(per_call: int | None) -> int | None:
        return None if plan.calls is None or per_call is None else plan.calls * per_call

    pt, ct = total(plan.prompt_tokens), total(plan.completion_tokens)
    note = plan.note or ("" if plan.calls is not None else
                         f"documents of {plan.part} not known (no limit in the config; give "
                         f"--documents {plan.part}=N)")
    row = {"study": study, "model": plan.model, "backend": plan.spec.get("backend"),
           "model_id": plan.spec.get("model_id"), "run": plan.run, "part": plan.part,
           "calls": plan.calls, "prompt_tokens": pt, "completion_tokens": ct,
           "usd": usd(plan.spec, pt, ct), "note": note}
    if plan.expected_calls is not None:
        row["expected_calls"] = plan.expected_calls
    return row


def estimate(cfg: Mapping[str, Any], documents: Mapping[str, int] | None = None
             ) -> list[dict[str, Any]]:
    """One row per (study, model, run, part) with its calls, tokens and price (upper bounds;
    None where the config does not say: see :func:`source_documents`)."""
    counts = source_documents(cfg, documents)
    return [_row(study.name, plan) for study in studies()
            for plan in study.planned_requests(cfg, counts)]


def _sum(values: Sequence[Any]) -> Any:
    if any(v is None for v in values):
        return None
    return sum(values)


def by_model(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of :func:`estimate` summed per (study, model)."""
    keys: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        keys.setdefault((r["study"], r["model"]), []).append(r)
    out = []
    for (study, model), group in keys.items():
        first = group[0]
        out.append({"study": study, "model": model, "backend": first["backend"],
                    "model_id": first["model_id"],
                    **{k: _sum([g[k] for g in group])
                       for k in ("calls", "prompt_tokens", "completion_tokens")},
                    "usd": _sum([g["usd"] for g in group])
                    if backend_facts(str(first["backend"]))["remote"] else None,
                    "note": "; ".join(f"{g['part']}: {g['note']}" for g in group
                                      if g.get("note"))})
        expected = [g.get("expected_calls", g["calls"]) for g in group]
        if any("expected_calls" in g for g in group):
            out[-1]["expected_calls"] = _sum(expected)
    return out


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The totals of :func:`estimate`'s rows: calls and tokens of every model, dollars of the
    priced ones (``unpriced``: remote models without a price; ``unknown``: rows whose count
    the config does not give)."""
    unknown = sorted({f"{r['model']}/{r['run']}/{r['part']}" for r in rows if r["calls"] is None})
    unpriced = sorted({r["model"] for r in rows if r["usd"] is None and r["calls"] is not None
                       and backend_facts(str(r["backend"]))["remote"]})
    known = [r for r in rows if r["calls"] is not None]
    return {"calls": sum(r["calls"] for r in known),
            "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in known),
            "completion_tokens": sum(r["completion_tokens"] or 0 for r in known),
            "usd": round(sum(r["usd"] or 0.0 for r in known), 2),
            "unpriced": unpriced, "unknown": unknown}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The per-model table of :func:`by_model` and the total, as Markdown."""
    cols = ("study", "model", "backend", "calls", "prompt_tokens", "completion_tokens", "usd")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in by_model(rows)]
    s = summary(rows)
    lines.append("| **total** | | | " + " | ".join(
        _fmt(s[c]) for c in ("calls", "prompt_tokens", "completion_tokens", "usd")) + " |")
    notes = [f"{r['model']}/{r['run']}/{r['part']}: {r['note']}" for r in rows if r["note"]]
    if s["unpriced"]:
        notes.append(f"remote models without a price: {', '.join(s['unpriced'])}")
    return "\n".join(lines + [f"\n{n}" for n in notes]) + "\n"


def conversation(first_prompt: int, reply: int, follow_up: int, turns: int) -> int:
    """The prompt tokens of ``turns`` follow-ups of one growing conversation, worst case: turn
    t resends the first prompt (``first_prompt`` tokens), every earlier reply (``reply``
    tokens each, the most decoding allows) and t follow-up messages of ``follow_up`` tokens,
    each message with its chat framing."""
    per_turn = reply + follow_up + 2 * MESSAGE_OVERHEAD_TOKENS
    return sum(first_prompt + t * per_turn for t in range(1, turns + 1))
