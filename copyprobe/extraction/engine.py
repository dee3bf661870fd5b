"""A model's scoring job, bound to its engine: the tokenizer windows are cut in, and the
callables :func:`copyprobe.extraction.window_scoring.score_documents` takes (exact scores through the
score runner, Monte Carlo samples through the generation runner), with the call cache under
the config's ``cache_dir``. Shared by rule extraction_score and ``copyprobe
extraction-map``; the model is loaded only when a request is not cached."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.extraction.window_scoring import score_documents
from copyprobe.generation.base import BACKENDS, Decoding
from copyprobe.generation.cache import GenerationCache
from copyprobe.generation.runner import (
    RunSettings,
    SharedBackend,
    backend_identity,
    build_backend,
    run_generation,
)
from copyprobe.generation.logprob_runner import run_scoring
from copyprobe.generation.logprob_scoring import Tokenizer, can_score, load_tokenizer
from copyprobe.models import ModelFile


def mc_decoding(mc: Mapping[str, Any], suffix_tokens: int) -> Decoding:
    """The sampling of a Monte Carlo estimate: its temperature, top_p, top_k and seed, and
    room for the suffix's tokens and ``extra_tokens`` more."""
    return Decoding(temperature=float(mc["temperature"]), top_p=float(mc["top_p"]),
                    top_k=int(mc["top_k"]), seed=int(mc["seed"]),
                    max_tokens=int(suffix_tokens) + int(mc["extra_tokens"]))


def load_scorer(spec: Mapping[str, Any], model_file: ModelFile | None) -> Any:
    """The backend loaded for scoring: the class's ``scorer_from_config`` where it has one
    (llama.cpp scores on an instance with the logits of every position), else the backend
    as generation loads it."""
    cls = BACKENDS.get(spec["backend"])
    load = getattr(cls, "scorer_from_config", None) or cls.from_config
    return load(spec, model_file)


def score_with_model(docs: pd.DataFrame, spec: Mapping[str, Any],
                     manifest: Mapping[str, Any], settings: Mapping[str, Any]) -> pd.DataFrame:
    """The WINDOWS table of ``docs`` for a model's slice ``spec``, its prepared model file
    (``manifest``, as rule prepare_model writes it) and its job ``settings``."""
    model_file = ModelFile.from_manifest(manifest)
    spec = dict(spec)
    if model_file is not None:
        spec.setdefault("model_id", model_file.path.name)
    cache_dir = Path(spec["cache_dir"])
    identity = backend_identity(spec, model_file)
    name = str(spec["name"])

    def exact(requests: list[Any]) -> list[Any]:
        return run_scoring(requests, backend_name=spec["backend"], identity=identity,
                           backend_factory=lambda: load_scorer(spec, model_file),
                           cache=GenerationCache(cache_dir / "scores"),
                           path=settings["path"], label=f"score {name}")

    mc = settings["monte_carlo"]
    decoding = mc_decoding(mc, settings["windows"]["suffix_tokens"])
    run = dataclasses.replace(RunSettings.from_config(spec), max_tokens_per_reference_word=None)

    shared = SharedBackend(lambda: build_backend(spec, model_file))

    def generate(prompts: pd.DataFrame, samples: int) -> pd.DataFrame:
        df, _ = run_generation(prompts, model=name, backend_name=spec["backend"],
                               identity=identity, backend_factory=shared.get,
                               decoding=decoding, cache=GenerationCache(cache_dir / "generations"),
                               settings=run, samples=samples, shard="extraction")
        return df

    try:
        tokenizer = window_tokenizer(spec, model_file, settings["method"])
        return score_documents(docs, tokenizer, settings, model=name, exact=exact,
                               generate=generate)
    finally:
        shared.close()


def window_tokenizer(spec: Mapping[str, Any], model_file: ModelFile | None,
                     method: str) -> Tokenizer:
    """The tokenizer windows are cut in: the model's own, or, for a Monte Carlo model whose
    backend has none (an API such as OpenAI's chat models, whose tokenizer is not served),
    whitespace-delimited words (:class:`WordTokenizer`: the window lengths then count words)."""
    if method == "monte_carlo" and not can_score(spec):
        return WordTokenizer()
    return load_tokenizer(spec, model_file)


def window_unit(spec: Mapping[str, Any], method: str) -> str:
    """``"tokens"``, or ``"words"`` where :func:`window_tokenizer` cuts in words."""
    return "words" if method == "monte_carlo" and not can_score(spec) else "tokens"


class WordTokenizer:
    """Words as tokens, for models whose tokenizer is not available: a token is a run of
    non-space characters with the whitespace before it, so detokenising a window gives back
    its text exactly. Ids index the pieces seen so far (per instance)."""

    add_bos = False

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []

    def tokenize(self, text: str) -> list[int]:
        out = []
        for piece in re.findall(r"\s*\S+", text):
            if piece not in self._ids:
                self._ids[piece] = len(self._pieces)
                self._pieces.append(piece)
            out.append(self._ids[piece])
        return out

    def detokenize(self, ids: Sequence[int]) -> str:
        return "".join(self._pieces[i] for i in ids)

