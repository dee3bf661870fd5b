"""The workflow with an API model (the ``openai`` backend against a real loopback server):
sharding, and no trace of the API key in any artifact, log or Snakemake metadata."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from copyprobe.artifacts import GENERATIONS, read_table

pytestmark = pytest.mark.slow
KEY_ENV = "COPYPROBE_WORKFLOW_TEST_KEY"
PLANTED = "sk-workflow-planted-0123456789abcdef0123456789"


def _fault_server_module(root: Path):
    path = root / "tests" / "servers" / "fault_server.py"
    spec = importlib.util.spec_from_file_location("copyprobe_wf_fault_server", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_api_model_shards_and_never_leaks_the_key(tmp_path, root, workflow_copy):
    fs = _fault_server_module(root)
    wd = workflow_copy(tmp_path, documents=5, folder="docs")
    with fs.FaultServer(latency=0.05) as srv:
        srv.fail_next("429", 2, retry_after=0.05)
        cfg = {
            "cache_dir": str(wd / "cache"),
            "statistics": {"n_boot": 200},
            "sources": {"docs": {"kind": "local", "path": "docs"}},
            "datasets": {"docs": ["docs"]},
            "models": {"api": {
                "backend": "openai", "base_url": srv.base_url, "api_key_env": KEY_ENV,
                "model_id": "test-model", "cutoff": "2026-06-30", "shard_size": 2,
                "requests": {"max_concurrency": 4, "base_delay": 0.01},
                "price": {"input_per_million": 1.0, "output_per_million": 2.0}}},
        }
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
        env = {**os.environ, KEY_ENV: PLANTED}
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=wd,
                              env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-5000:]
        assert srv.last.api_key == PLANTED
        assert srv.total_requests == 5 + 2  # five documents, two rate-limited retries

        # A second model whose every request fails permanently: its generation job writes
        # nothing it could score, reports the failures and fails the run; the first model's
        # results stay.
        srv.fail_when(lambda rec: rec.body.get("model") == "bad-model", "400_context",
                      times=100)
        cfg["models"]["bad"] = {**cfg["models"]["api"], "model_id": "bad-model"}
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
        bad = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=wd,
                             env=env, capture_output=True, text=True, timeout=600)
        assert bad.returncode != 0
        assert "requests failed" in bad.stderr and "max_failure_share" in bad.stderr
        assert "ContextLengthError" in bad.stderr
        assert PLANTED not in bad.stdout + bad.stderr
    shards = sorted((wd / "results/generations/api/main/docs/shards").glob("*.parquet"))
    assert [p.name for p in shards] == ["00000-of-00003.parquet", "00001-of-00003.parquet",
                                        "00002-of-00003.parquet"]
    gens = read_table(wd / "results/generations/api/main/docs.parquet", GENERATIONS)
    assert len(gens) == 5 and (gens["status"] == "ok").all()
    assert (gens["cost_usd"] > 0).all() and gens["attempts"].sum() == 7
    assert PLANTED not in proc.stdout + proc.stderr
    assert (wd / "results/tables/msr_table.csv").is_file()
    leaks = [p for p in wd.rglob("*") if p.is_file() and PLANTED.encode() in p.read_bytes()]
    assert leaks == []
    # the variable's name may appear (config); its value must not
    assert any((wd / ".snakemake").rglob("*"))
