"""The copyright study's requests, planned from the config alone (:mod:`copyprobe.cost`).

Reference: docs/paper-setups.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe import cost
from copyprobe.config import MAIN, run_slice
from copyprobe.copyright.benchmark import benchmark_queries, render_settings
from copyprobe.copyright.manifest import prompt_for
from copyprobe.copyright.notices import GENERIC_NOTICE, NOTICE_FORMS, notice_place
from copyprobe.copyright.refusal import judge_prompt, judge_spec
from copyprobe.studies import PlannedRequests, study_models

STUDY = "copyright"
JUDGE = "copyright.judge"


def rows_per_material(spec: Mapping[str, Any]) -> int:
    """Manifest rows of one material with an original notice (forms x queries)."""
    forms = list(spec.get("forms") or NOTICE_FORMS)
    benign_under = set(forms if spec.get("benign_forms") is None else spec["benign_forms"])
    return sum(1 for form in forms for q in benchmark_queries(spec)
               if not q.benign or form in benign_under)


def _prompt_tokens(spec: Mapping[str, Any]) -> int | None:
    """The largest prompt of the benchmark: the longest query with a text notice, and the
    most pages the renderer draws (None: the material's text is in the prompt)."""
    settings = render_settings(spec)
    query = max((q.query for q in benchmark_queries(spec)), key=lambda s: len(s.split()))
    row = {"notice_text": GENERIC_NOTICE, "notice_place": notice_place("text_generic"),
           "query": query}
    if settings is None:  # the text follows the query: known only with an excerpt length
        if spec.get("images") == "released" or spec.get("max_words") is None:
            return None
        return cost.prompt_tokens(prompt_for({**row, "image_paths": [],
                                              "text": "w " * int(spec["max_words"])}))
    pages = 1 if settings.overflow == "truncate" else settings.max_pages
    return cost.prompt_tokens(prompt_for({**row, "image_paths": ["page.png"] * pages}))


def _materials(spec: Mapping[str, Any], documents: Mapping[str, int | None]) -> int | None:
    counts = [documents.get(s) for s in spec["materials"]]
    return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]


def planned_requests(cfg: Mapping[str, Any],
                     documents: Mapping[str, int | None]) -> list[PlannedRequests]:
    """One entry per (model, benchmark), then one for the judge per benchmark."""
    block = cfg.get(STUDY) or {}
    models = study_models(cfg, STUDY)
    out: list[PlannedRequests] = []
    for bench, spec in (block.get("benchmarks") or {}).items():
        materials = _materials(spec, documents)
        calls = None if materials is None else materials * rows_per_material(spec)
        pt = _prompt_tokens(spec)
        responses: list[tuple[int | None, int]] = []
        for model in models:
            mspec = run_slice(cfg, model, MAIN)
            samples = int(mspec.get("decoding", {}).get("samples", 1))
            n = None if calls is None else calls * samples
            ct = cost.completion_tokens(mspec)
            out.append(PlannedRequests(model=model, spec=mspec, run=bench, part=STUDY,
                                       calls=n, prompt_tokens=pt, completion_tokens=ct))
            responses.append((n, ct))
        judge = block.get("judge")
        if judge is None or not responses:
            continue
        jspec = judge_spec(judge, cfg["cache_dir"])
        if "price" not in jspec and jspec.get("model_id") in cfg.get("prices", {}):
            jspec["price"] = dict(cfg["prices"][jspec["model_id"]])
        max_words = int(block.get("judge_max_words", 400))
        words = min(max_words, max(int(ct / cost.TOKENS_PER_WORD) for _, ct in responses))
        n_judged = (None if any(n is None for n, _ in responses)
                    else sum(n for n, _ in responses))  # type: ignore[misc]
        out.append(PlannedRequests(
            model=JUDGE, spec=jspec, run=bench, part="refusal judge", calls=n_judged,
            prompt_tokens=cost.prompt_tokens(judge_prompt("w " * words, max_words)),
            completion_tokens=cost.completion_tokens(jspec)))
    return out
