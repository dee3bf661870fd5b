"""Scoring documents for membership: each document in the model's own tokens (its first
``max_tokens``), one teacher-forced request through the score runner and its cache (the
model is loaded only when a request is not cached), and the per-document scores of
:mod:`copyprobe.membership.scores`; a reference model's loss on the same tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.generation.base import BACKENDS
from copyprobe.generation.cache import GenerationCache
from copyprobe.generation.runner import backend_identity
from copyprobe.generation.logprob_runner import ScoreResult, run_scoring
from copyprobe.generation.logprob_scoring import ScoreRequest, Tokenizer, load_tokenizer, scoring_facts
from copyprobe.membership.scores import KS, document_scores, loss
from copyprobe.models import ModelFile

#: the per-document scores table
SCORES = TableSpec("membership_scores", pa.schema([
    ("model", pa.string()), ("doc_id", pa.string()), ("status", pa.string()),
    ("error", pa.string()), ("n_tokens", pa.int64()), ("truncated", pa.bool_()),
    ("path", pa.string()), ("loss", pa.float64()), ("zlib_ratio", pa.float64()),
    *((f"min_k_{k}", pa.float64()) for k in KS), *((f"min_kpp_{k}", pa.float64()) for k in KS),
    ("reference_model", pa.string()), ("reference_loss", pa.float64()),
    ("reference_ratio", pa.float64()),
]))


@dataclass(frozen=True)
class Model:
    """A model to score with: its config slice and prepared file."""

    name: str
    spec: Mapping[str, Any]
    model_file: ModelFile | None

    @classmethod
    def from_slice(cls, spec: Mapping[str, Any], manifest: Mapping[str, Any]) -> Model:
        model_file = ModelFile.from_manifest(manifest)
        spec = dict(spec)
        if model_file is not None:
            spec.setdefault("model_id", model_file.path.name)
        return cls(str(spec["name"]), spec, model_file)

    def tokenizer(self) -> Tokenizer:
        return load_tokenizer(self.spec, self.model_file)

    def has_moments(self) -> bool:
        return scoring_facts(self.spec["backend"])["score_moments"]


def requests(texts: Sequence[str], tokenizer: Tokenizer, *, max_tokens: int,
             moments: bool) -> tuple[list[ScoreRequest | None], list[str], list[bool]]:
    """Per document: its request (None: fewer than 2 tokens), the text of its scored tokens
    (the document, or its first ``max_tokens`` tokens' text) and whether it was cut. Every
    token is scored after BOS; a model without BOS gets the first token as context."""
    out, scored, cut = [], [], []
    for text in texts:
        ids = tokenizer.tokenize(text)
        cut.append(len(ids) > max_tokens)
        ids = ids[:max_tokens]
        scored.append(tokenizer.detokenize(ids) if cut[-1] else text)
        if tokenizer.add_bos and ids:
            out.append(ScoreRequest(context_ids=(), target_ids=tuple(ids), moments=moments))
        elif len(ids) >= 2:
            out.append(ScoreRequest(context_ids=tuple(ids[:1]), target_ids=tuple(ids[1:]),
                                    moments=moments))
        else:
            out.append(None)
    return out, scored, cut


def run_pass(model: Model, reqs: Sequence[ScoreRequest | None]) -> list[ScoreResult | None]:
    """The scores of every request (None stays None) through the cache under the config's
    ``cache_dir``, on the backend's one-pass path where it has one."""
    paths = scoring_facts(model.spec["backend"])["score_paths"]
    path = "one_pass" if "one_pass" in paths else paths[0]
    todo = [r for r in reqs if r is not None]
    identity = backend_identity(model.spec, model.model_file)
    cls = BACKENDS.get(model.spec["backend"])
    results = iter(run_scoring(
        todo, backend_name=model.spec["backend"], identity=identity,
        backend_factory=lambda: cls.scorer_from_config(model.spec, model.model_file),
        cache=GenerationCache(Path(model.spec["cache_dir"]) / "scores"), path=path,
        label=f"membership {model.name}"))
    return [None if r is None else next(results) for r in reqs]


@dataclass(frozen=True)
class Pass:
    """The teacher-forced pass over documents: per document its request (None: too short),
    its result, the text of its scored tokens and whether it was cut."""

    requests: list[ScoreRequest | None]
    results: list[ScoreResult | None]
    scored: list[str]
    cut: list[bool]


def document_pass(docs: pd.DataFrame, model: Model, *, max_tokens: int, moments: bool,
                  tokenizer: Tokenizer | None = None) -> Pass:
    """The one pass over ``docs`` (``doc_id``, ``text``) that every score reads."""
    texts = docs["text"].astype(str).tolist()
    reqs, scored, cut = requests(texts, tokenizer or model.tokenizer(),
                                 max_tokens=max_tokens, moments=moments)
    return Pass(reqs, run_pass(model, reqs), scored, cut)


def score_table(docs: pd.DataFrame, model: Model, *, max_tokens: int, moments: bool,
                reference: Model | None = None, passed: Pass | None = None) -> pd.DataFrame:
    """The SCORES table of ``docs`` (``doc_id``, ``text``), from ``passed`` when given (else
    its own pass). The reference model, when given, scores the same token ids (the caller
    checked that it tokenises the same way)."""
    passed = passed or document_pass(docs, model, max_tokens=max_tokens, moments=moments)
    reqs, results, scored, cut = passed.requests, passed.results, passed.scored, passed.cut
    ref_results: list[ScoreResult | None] = [None] * len(reqs)
    if reference is not None:
        ref_reqs = [None if r is None else ScoreRequest(context_ids=r.context_ids,
                                                        target_ids=r.target_ids)
                    for r in reqs]
        ref_results = run_pass(reference, ref_reqs)
    rows = []
    for doc_id, text, res, ref, was_cut in zip(docs["doc_id"].astype(str), scored, results,
                                               ref_results, cut, strict=True):
        row: dict[str, Any] = {"model": model.name, "doc_id": doc_id, "truncated": was_cut,
                               "reference_model": reference.name if reference else None}
        error = ("fewer than 2 tokens: nothing to score" if res is None
                 else None if res.ok else f"{res.error_class}: {res.error}")
        if error is None and reference is not None and (ref is None or not ref.ok):
            error = f"reference {ref.error_class}: {ref.error}" if ref else "reference failed"
        if error is not None:
            rows.append({**row, "status": "failed", "error": error})
            continue
        assert res is not None and res.scores is not None
        sc = res.scores
        ref_loss = None
        if ref is not None and ref.scores is not None:
            ref_loss = loss(ref.scores.logprobs)
        values = document_scores(list(sc.logprobs), text,
                                 mean=list(sc.dist_mean) if moments else None,
                                 std=list(sc.dist_std) if moments else None,
                                 reference_loss=ref_loss)
        rows.append({**row, **values, "status": "scored", "error": None, "path": sc.path,
                     "reference_loss": ref_loss})
    return pd.DataFrame(rows, columns=SCORES.columns)
