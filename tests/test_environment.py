"""The environment table: versions and hashes a run's results were made with."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.artifacts import read_table, write_table
from copyprobe.dependencies import PACKAGE_DIR
from copyprobe.environment import (
    ENVIRONMENT,
    KINDS,
    config_digest,
    environment_facts,
    environment_table,
    package_files,
    workflow_files,
)

ROOT = Path(__file__).resolve().parents[1]


def test_facts_name_python_platform_and_every_dependency():
    facts = environment_facts()
    by = {(f["kind"], f["name"]): f["version"] for f in facts}
    assert by[("python", platform.python_implementation())] == platform.python_version()
    assert by[("platform", "machine")] == platform.machine()
    assert by[("package", "pandas")] == pd.__version__
    assert by[("package", "snakemake")].startswith("9.")
    # an extra that is not installed here is listed without a version
    assert ("package", "vllm") in by
    assert all(f["sha256"] is None for f in facts)


def test_config_digest_ignores_key_order_and_sees_values():
    a = config_digest({"models": {"m": {"backend": "llamacpp"}}, "cache_dir": "c"})
    b = config_digest({"cache_dir": "c", "models": {"m": {"backend": "llamacpp"}}})
    c = config_digest({"cache_dir": "d", "models": {"m": {"backend": "llamacpp"}}})
    assert a == b != c and len(a) == 64


def test_package_and_workflow_files():
    files = package_files(relative_to=PACKAGE_DIR.parent)
    assert "copyprobe/environment.py" in files and "copyprobe/data/config_schema.yaml" in files
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    wf = workflow_files(ROOT)
    assert {"Snakefile", "rules/common.smk", "rules/reproducibility.smk",
            "workflow_scripts/environment.py"} <= set(wf)
    assert not any(f.startswith("tests/") for f in wf)


def test_the_table_hashes_files_and_reads_model_manifests(tmp_path):
    lib = PACKAGE_DIR / "registry.py"
    wf = tmp_path / "Snakefile"
    wf.write_text("rule all:\n")
    manifest = tmp_path / "smol.json"
    manifest.write_text(json.dumps({"path": "/x.gguf", "sha256": "ab" * 32, "size": 1,
                                    "origin": "test"}))
    remote = tmp_path / "api.json"
    remote.write_text(json.dumps({"path": None, "sha256": None, "size": None,
                                  "origin": "remote"}))
    df = environment_table(environment_facts(), library=[str(lib)], workflow=[str(wf)],
                           config_sha256="cd" * 32, models={"smol": manifest, "api": remote})
    write_table(df, tmp_path / "env.parquet", ENVIRONMENT, {})
    back = read_table(tmp_path / "env.parquet", ENVIRONMENT)
    assert set(back["kind"]) == set(KINDS)
    rows = {(k, n): (_none(v), _none(s)) for k, n, v, s in back.itertuples(index=False)}
    assert rows[("library_module", "copyprobe/registry.py")] == (
        None, hashlib.sha256(lib.read_bytes()).hexdigest())
    assert rows[("workflow_file", str(wf))][1] == hashlib.sha256(b"rule all:\n").hexdigest()
    assert rows[("config", "resolved config")] == (None, "cd" * 32)
    assert rows[("model_file", "smol")] == (None, "ab" * 32)
    assert rows[("model_file", "api")] == (None, None)
    assert rows[("python", platform.python_implementation())][0] == \
        ".".join(map(str, sys.version_info[:3]))


def _none(value):
    """A null read back from Parquet (pandas gives NaN for a missing string) as None."""
    return None if pd.isna(value) else value


def test_an_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown kind.*'secret'"):
        environment_table([{"kind": "secret", "name": "x", "version": None, "sha256": None}],
                          library=[], workflow=[], config_sha256="0" * 64, models={})


def test_the_all_extra_adds_no_second_copyprobe_row(monkeypatch):
    """pyproject's `all` extra requires copyprobe[workflow,...]: copyprobe keeps one row."""
    import copyprobe.environment as environment

    monkeypatch.setattr(environment.importlib.metadata, "requires",
                        lambda name: ["pandas>=2.1", 'copyprobe[workflow,local]; extra == "all"'])
    names = [f["name"] for f in environment_facts() if f["kind"] == "package"]
    assert names == ["copyprobe", "pandas"]
