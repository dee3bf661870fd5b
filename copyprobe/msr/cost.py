"""The MSR study's requests, planned from the config alone (:mod:`copyprobe.cost`).

One request per document of each source a (model, variant) run reads, times the samples of
its decoding. A document is taken to be at least ``num_words`` words long (the paper's are
over 1,000), so its prompt is the library's own prompt (:func:`copyprobe.msr.prompts.segment`
and :func:`~copyprobe.msr.prompts.build_prompt`) of a text of ``num_words`` words, and its
completion is capped as the runner caps it for a held-out segment of that length. A run whose
requests equal another's (same model, source, prompt settings and decoding: the temperature
ablation's 0.1 is the main run) is answered from the cache and not counted again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from copyprobe import cost
from copyprobe.config import run_slice
from copyprobe.msr import experiments as cpx
from copyprobe.msr.prompts import build_prompt, segment
from copyprobe.studies import PlannedRequests

#: the MSR settings that shape a prompt (with the decoding they decide the requests)
PROMPT_KEYS = ("n", "num_words", "min_segment_words", "system_message", "prompt_format")


def planned_requests(cfg: Mapping[str, Any],
                     documents: Mapping[str, int | None]) -> list[PlannedRequests]:
    """One entry per (model, variant, source) whose requests no earlier run sends."""
    out: list[PlannedRequests] = []
    seen: set[str] = set()
    for model in cfg["models"]:
        for variant in cpx.variant_names(cfg):
            sources = cpx.run_sources(cfg, model, variant)
            if not sources:
                continue
            spec = run_slice(cfg, model, variant)
            msr = {k: spec["msr"].get(k) for k in PROMPT_KEYS}
            parts = segment("w " * msr["num_words"], msr["n"], msr["num_words"])
            prompt, reference = build_prompt(parts, msr["prompt_format"],
                                             msr["system_message"])
            pt = cost.prompt_tokens(prompt)
            ct = cost.completion_tokens(spec, len(reference.split()))
            samples = int(spec.get("decoding", {}).get("samples", 1))
            for source in sources:
                key = json.dumps([model, source, msr, spec.get("decoding", {})],
                                 sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
                docs = documents.get(source)
                out.append(PlannedRequests(
                    model=model, spec=spec, run=variant, part=source,
                    calls=None if docs is None else docs * samples,
                    prompt_tokens=pt, completion_tokens=ct))
    return out
