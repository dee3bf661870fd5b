"""Facts about backends that the workflow asks for: how many cores a generation job uses."""

from __future__ import annotations

from copyprobe.config import load_schema
from copyprobe.generation.base import DEFAULT_LOCAL_THREADS, job_threads


def test_job_threads_follow_the_models_n_threads():
    assert job_threads({"backend": "llamacpp", "n_threads": 6}) == 6
    assert job_threads({"backend": "hf", "n_threads": 3}) == 3
    assert job_threads({"backend": "llamacpp", "n_threads": None}) == DEFAULT_LOCAL_THREADS
    assert job_threads({"backend": "llamacpp"}) == DEFAULT_LOCAL_THREADS
    # an API client waits on the network: one core, whatever n_threads says
    assert job_threads({"backend": "openai", "n_threads": 8}) == 1
    assert job_threads({"backend": "openai_batch"}) == 1


def test_the_default_is_documented_in_the_schema():
    props = load_schema()["properties"]["models"]["additionalProperties"]["properties"]
    assert f"null = {DEFAULT_LOCAL_THREADS};" in props["n_threads"]["description"]
