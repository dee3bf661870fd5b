"""The extraction study's requests, planned from the config alone (:mod:`copyprobe.cost`).

Each (model, source) is scored once, whichever datasets read it: every document gives at most
``extraction.max_windows_per_document`` windows (null: not known before the documents are
cut, and said so). An exact model sends one scoring request per window (prompt: prefix and
suffix, nothing generated; local backends cost no dollars); a Monte Carlo model draws
continuations of ``suffix_tokens + extra_tokens`` tokens: at most ``max_samples`` a window
(the worst case, counted) and about one ``batch`` a window expected (a window far from the
(n,p) threshold is decided at the sequential test's first look).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.config import model_slice
from copyprobe.extraction import config as xc
from copyprobe.generation.limits import MESSAGE_OVERHEAD_TOKENS
from copyprobe.studies import PlannedRequests


def planned_requests(cfg: Mapping[str, Any],
                     documents: Mapping[str, int | None]) -> list[PlannedRequests]:
    """One entry per (model, source) of the study."""
    out: list[PlannedRequests] = []
    for model in xc.extraction_models(cfg):
        spec = model_slice(cfg, model)
        job = xc.job_settings(cfg, model)
        win, mc = job["windows"], job["monte_carlo"]
        per_doc = job["max_windows_per_document"]
        framing = MESSAGE_OVERHEAD_TOKENS if job["extraction_format"] == "chat" else 0
        for source in xc.model_sources(cfg, model):
            docs = documents.get(source)
            windows = None if docs is None or per_doc is None else docs * per_doc
            why = ("" if windows is not None else
                   f"documents of source {source} not known (no limit in the config; give "
                   f"--documents {source}=N)" if docs is None else
                   "windows per document not bounded (extraction.max_windows_per_document: "
                   "null): a document of W tokens gives about W / stride windows")
            if job["method"] == "exact":
                out.append(PlannedRequests(
                    model=model, spec=spec, run="extraction", part=source, calls=windows,
                    prompt_tokens=win["prefix_tokens"] + win["suffix_tokens"] + framing,
                    completion_tokens=0, note=why))
                continue
            out.append(PlannedRequests(
                model=model, spec=spec, run="extraction", part=source,
                calls=None if windows is None else windows * mc["max_samples"],
                prompt_tokens=win["prefix_tokens"] + framing,
                completion_tokens=win["suffix_tokens"] + mc["extra_tokens"],
                expected_calls=None if windows is None else
                windows * min(mc["batch"], mc["max_samples"]),
                note=why or (f"Monte Carlo: the worst case, {mc['max_samples']} samples a "
                             f"window; expected about {min(mc['batch'], mc['max_samples'])} "
                             "(one batch: most windows are decided at the first look)")))
    return out
