"""Fixtures of the scoring tests: the packaged SmolLM2 through transformers, loaded once per
session (dequantising the GGUF takes ~25 s), and windows cut in its tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def smollm2_hf(smollm2_file):
    """HFBackend on the SmolLM2 GGUF (float32, batches of 4), shared by the scoring tests."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from copyprobe.generation.hf import HFBackend

    backend = HFBackend.from_config({"batch_size": 4}, smollm2_file)  # torch threads: its default
    yield backend
    backend.close()


def cut_windows(ids: list[int], n: int, prefix: int = 50, suffix: int = 50) -> list[tuple]:
    """Up to ``n`` (context_ids, target_ids) windows of ``ids``, side by side."""
    step = prefix + suffix
    return [(tuple(ids[s:s + prefix]), tuple(ids[s + prefix:s + step]))
            for s in range(0, len(ids) - step + 1, step)][:n]


@pytest.fixture(scope="session")
def window_texts() -> list[str]:
    """The packaged control documents (invented texts in the repository), longest first."""
    folder = ROOT / "resources" / "control_documents"
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))]
    return sorted(texts, key=len, reverse=True)


@pytest.fixture(scope="session")
def windows_of():
    """:func:`cut_windows`."""
    return cut_windows
