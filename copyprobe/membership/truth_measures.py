"""The extraction and MSR studies' per-document measures of a ground-truth run, to score
against its truth beside the membership scores: extraction's exact p_z of each document's
windows (read from the membership pass where it holds them) and MSR's verbatim match of the
segment a model writes after the faux conversation of the others
(docs/membership.md#every-study-against-the-truth)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from copyprobe.generation.logprob_runner import ScoreResult
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores
from copyprobe.membership.engine import Model, Pass, run_pass

#: the measure families a run may score (``membership.runs.<run>.measures``)
FAMILIES = ("membership", "extraction", "msr")
#: extraction's per-document measures (copyprobe.extraction.discoverability.document_summary),
#: each with the sign that points to "member"
EXTRACTION = {"max_log_pz": 1, "mean_log_pz_per_token": 1}
#: the documents' source and split in the study tables these measures reuse
_SOURCE, _SPLIT = "membership", "truth"


def msr_measures(k: int) -> dict[str, int]:
    """MSR's per-document measures: the longest verbatim match in words, and whether it is
    ``k`` words or more (the document's share of f_k)."""
    return {"msr_longest": 1, f"msr_match_{k}": 1}


def _study_docs(docs: pd.DataFrame) -> pd.DataFrame:
    return docs[["doc_id", "text"]].assign(source=_SOURCE, split=_SPLIT)


def from_pass(window: Any, request: ScoreRequest | None,
              result: ScoreResult | None) -> ScoreResult | None:
    """A window's exact score read from its document's pass, or None where the pass does not
    hold it. It does where the window's prefix starts at the document's first token: its
    suffix's log-probabilities are then conditioned on exactly the prefix (and BOS), as a
    request of the prefix and the suffix alone would have them."""
    if (window.start != 0 or request is None or result is None or result.scores is None
            or request.context_ids is None or request.target_ids is None):
        return None
    seq = (*request.context_ids, *request.target_ids)
    p, s, c = len(window.prefix_ids), len(window.suffix_ids), len(request.context_ids)
    if p < c or p + s > len(seq) or seq[:p + s] != (*window.prefix_ids, *window.suffix_ids):
        return None
    sc, a = result.scores, p - c
    part = TokenScores(token_ids=sc.token_ids[a:a + s], logprobs=sc.logprobs[a:a + s],
                       argmax=sc.argmax[a:a + s], path=sc.path,
                       n_context_tokens=sc.n_context_tokens + a,
                       token_texts=sc.token_texts[a:a + s] if sc.token_texts else ())
    return ScoreResult(key=f"{result.key}[{a}:{a + s}]", scores=part,
                       from_cache=result.from_cache, latency_s=0.0, attempts=result.attempts)


def extraction_windows(docs: pd.DataFrame, model: Model, passed: Pass,
                       windows: Mapping[str, Any], max_windows: int | None
                       ) -> tuple[pd.DataFrame, int]:
    """The extraction study's WINDOWS table of ``docs`` on ``model`` (plain text, exact
    p_z), and how many windows the pass answered; the others are scored as rule
    extraction_score scores them (the score runner and its cache)."""
    from copyprobe.extraction.tables import WINDOWS
    from copyprobe.extraction.window_scoring import cut_documents, score_exact
    from copyprobe.extraction.windows import WindowSpec

    jobs, skipped = cut_documents(_study_docs(docs), model.tokenizer(),
                                  WindowSpec.from_config(windows), model=model.name,
                                  method="exact", max_windows=max_windows)
    by_doc = dict(zip(docs["doc_id"].astype(str), zip(passed.requests, passed.results,
                                                      strict=True), strict=True))
    answers = [from_pass(j.window, *by_doc[j.row["doc_id"]]) for j in jobs]

    def run(reqs: list[ScoreRequest]) -> list[Any]:
        sent = iter(run_pass(model, [r for r, a in zip(reqs, answers, strict=True)
                                     if a is None]))
        return [a if a is not None else next(sent) for a in answers]

    rows = score_exact(jobs, "completion", "one_pass", run) if jobs else []
    table = pd.DataFrame([*rows, *skipped], columns=WINDOWS.columns)
    return table, sum(a is not None for a in answers)


def extraction_measures(windows: pd.DataFrame) -> pd.DataFrame:
    """Per document (``doc_id``): its largest log p_z and its mean log-probability per suffix
    token over its scored windows (the extraction table's per-document measures). A
    document shorter than one window (``skipped``) has none: it is left out of both."""
    from copyprobe.extraction.discoverability import document_summary

    windows = windows[windows["status"] != "skipped"]
    if windows.empty:
        return pd.DataFrame(columns=["doc_id", *EXTRACTION])
    return document_summary(windows)[["doc_id", *EXTRACTION]]


def msr_prompts(docs: pd.DataFrame, model: str, msr: Mapping[str, Any]) -> pd.DataFrame:
    """MSR's PROMPTS table of ``docs``: segments 1..n-1 shown, segment n the reference."""
    from copyprobe.msr.prompts import build_prompts

    corpus = _study_docs(docs)
    curated = corpus[["doc_id", "split"]].assign(kept=True)
    return build_prompts(corpus.drop(columns="split"), curated, model=model, msr=msr,
                         cut_at=None)


def generate(prompts: pd.DataFrame, model: Model) -> pd.DataFrame:
    """The model's answers to ``prompts`` through the generation runner and its cache, with
    the model's decoding as MSR's generation jobs read it (copyprobe.generation.shards)."""
    from copyprobe.generation.shards import generate_rows

    gens, _ = generate_rows(prompts, model.spec, model.model_file, shard="membership")
    return gens


def msr_match_measures(prompts: pd.DataFrame, generations: pd.DataFrame, *, k: int,
                       k_min: int, k_max: int) -> pd.DataFrame:
    """Per document (``doc_id``): the longest verbatim word match of its answers with its
    held-out segment (MSR's word mode, copyprobe.msr.match_scoring) and whether it reaches
    ``k`` words; NaN for a document without a scored answer (skipped, failed)."""
    from copyprobe.msr.match_scoring import score

    names = list(msr_measures(k))
    matches = score(prompts, generations, k_min=k_min, k_max=k_max)
    ok = matches[matches["status"] == "ok"]
    longest = ok.groupby("doc_id")["word_longest"].max().astype(float)
    out = pd.DataFrame({"doc_id": prompts["doc_id"].astype(str).unique()})
    out[names[0]] = out["doc_id"].map(longest)
    out[names[1]] = (out[names[0]] >= k).astype(float).where(out[names[0]].notna())
    return out


def family_measures(families: Sequence[str], k: int) -> dict[str, int]:
    """The extra measures (name -> sign) of ``families`` beyond the membership scores."""
    out: dict[str, int] = {}
    if "extraction" in families:
        out.update(EXTRACTION)
    if "msr" in families:
        out.update(msr_measures(k))
    return out
