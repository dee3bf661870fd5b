"""run_scoring with the real llama.cpp scorer: a rerun is answered from the cache without
loading the model, a run killed part-way resumes where it stopped, a NaN log-probability is a
failure that is never cached (the one mock: llama.cpp cannot be made to return NaN)."""

from __future__ import annotations

import math

import pytest

from copyprobe.generation.base import BackendError
from copyprobe.generation.cache import GenerationCache
from copyprobe.generation.llamacpp import LlamaCppBackend
from copyprobe.generation.logprob_runner import run_scoring, score_key
from copyprobe.generation.logprob_scoring import ScoreRequest, TokenScores
from copyprobe.prompt import Prompt

pytestmark = pytest.mark.slow

SPEC = {"n_ctx": 256, "n_threads": 1}


@pytest.fixture(scope="module")
def scorer(smollm2_file):
    backend = LlamaCppBackend.scorer_from_config(SPEC, smollm2_file)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def requests(scorer):
    ids = scorer.tokenize("The harbour master kept a log of every ship. Each entry named the "
                          "tide. The log filled three shelves by winter, and the next one too.")
    reqs = [ScoreRequest(context_ids=tuple(ids[:k]), target_ids=tuple(ids[k:k + 4]))
            for k in (4, 8, 12)]
    return [*reqs, ScoreRequest(prompt=Prompt("completion", text="The harbour"),
                                target=" master kept a log")]


class _Shared:
    """The module's scorer behind a factory: counts the requests it scores, can stop the run
    after some (as a kill would), and is not closed by the runner."""

    def __init__(self, backend, stop_after: int | None = None) -> None:
        self.backend, self.stop_after, self.scored = backend, stop_after, 0
        self.max_score_batch = 1

    def score_batch(self, reqs, *, path=None):
        if self.stop_after is not None and self.scored >= self.stop_after:
            raise KeyboardInterrupt
        self.scored += len(reqs)
        return self.backend.score_batch(reqs, path=path)

    def close(self) -> None:
        pass


def _run(reqs, cache, factory, path="one_pass"):
    identity = {"model": "smollm2-test"}
    return run_scoring(reqs, backend_name="llamacpp", identity=identity,
                       backend_factory=factory, cache=cache, path=path)


def _no_load():
    raise AssertionError("the model was loaded for a fully cached run")


def test_rerun_comes_from_the_cache_without_loading(scorer, requests, tmp_path):
    cache = GenerationCache(tmp_path / "cache")
    shared = _Shared(scorer)
    first = _run(requests, cache, lambda: shared)
    assert all(r.ok and not r.from_cache for r in first) and shared.scored == len(requests)
    again = _run(requests, cache, _no_load)
    assert all(r.from_cache for r in again)
    assert [r.scores for r in again] == [r.scores for r in first]
    # the path is part of the key: stepwise is computed anew
    step = _run(requests[:1], cache, lambda: _Shared(scorer), path="stepwise")
    assert not step[0].from_cache and step[0].scores.path == "stepwise"
    assert step[0].key != first[0].key


def test_a_killed_run_resumes_where_it_stopped(scorer, requests, tmp_path):
    cache = GenerationCache(tmp_path / "cache")
    with pytest.raises(KeyboardInterrupt):
        _run(requests, cache, lambda: _Shared(scorer, stop_after=2))
    resumed = _Shared(scorer)
    out = _run(requests, cache, lambda: resumed)
    assert [r.from_cache for r in out] == [True, True, False, False]
    assert resumed.scored == 2 and all(r.ok for r in out)


class _NaNBackend:
    """Answers every request with a NaN at its second target token."""

    max_score_batch = 4

    def score_batch(self, reqs, *, path=None):
        return [TokenScores(token_ids=(1, 2), logprobs=(-0.5, math.nan), argmax=(True, False),
                            path="one_pass", n_context_tokens=3) for _ in reqs]

    def close(self) -> None:
        pass


def test_nan_is_a_failure_never_cached(scorer, requests, tmp_path):
    cache = GenerationCache(tmp_path / "cache")
    out = _run(requests[:2], cache, _NaNBackend)
    assert [r.ok for r in out] == [False, False]
    assert {r.error_class for r in out} == {"NonFiniteLogprob"} and "[1]" in out[0].error
    key = score_key(backend="llamacpp", identity={"model": "smollm2-test"},
                    request=requests[0], path="one_pass")
    assert cache.get(key) is None
    # the next run scores them for real
    real = _run(requests[:2], cache, lambda: _Shared(scorer))
    assert all(r.ok and not r.from_cache and r.scores.finite for r in real)


def test_a_permanent_error_is_a_failed_result(scorer, tmp_path):
    too_long = ScoreRequest(context_ids=(42,) * 300, target_ids=(43,))  # n_ctx 256
    out = _run([too_long], GenerationCache(tmp_path / "cache"), lambda: _Shared(scorer))
    assert not out[0].ok and out[0].error_class == "ContextLengthError"
    assert out[0].attempts == 1
    assert isinstance(scorer.score_batch([too_long])[0], BackendError)
