"""The workflow with an API model (the ``openai`` backend against a real loopback server):
sharding, and no trace of the API key in any artifact, log or Snakemake metadata."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from copyprobe.artifacts import GENERATIONS, read_table

pytestmark = pytest.mark.slow
KEY_ENV = "COPYPROBE_WORKFLOW_TEST_KEY"
PLANTED = "sk-workflow-planted-0123456789abcdef0123456789"


def test_api_model_shards_and_never_leaks_the_key(tmp_path, workflow_copy, fault_server_module):
    fs = fault_server_module
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


UNSET_ENV = "COPYPROBE_WORKFLOW_TEST_UNSET_KEY"


def test_a_wrong_port_fails_fast_naming_the_endpoint_and_keeps_the_failures(tmp_path,
                                                                          workflow_copy):
    """What a new user hit: an ``openai`` model pointed at a port where nothing listens (a
    local server without a key). The missing key stops a real run before any job (a dry run
    plans without it); with ``api_key_optional`` the generate job stops after the first
    refused attempts, its log and stderr say where and why, and the failed rows survive in the
    rule's failures log."""
    import socket

    from copyprobe.artifacts import read_table

    wd = workflow_copy(tmp_path, documents=3, folder="docs")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    model = {"backend": "openai", "base_url": url, "api_key_env": UNSET_ENV,
             "model_id": "local-model", "cutoff": "2026-06-30"}
    cfg = {"cache_dir": str(wd / "cache"), "statistics": {"n_boot": 200},
           "sources": {"docs": {"kind": "local", "path": "docs"}},
           "datasets": {"docs": ["docs"]}, "models": {"local": model}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != UNSET_ENV}

    def snakemake(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args],
                              cwd=wd, env=env, capture_output=True, text=True, timeout=600)

    try:
        assert snakemake("--dry-run").returncode == 0
        no_key = snakemake()
        assert no_key.returncode != 0
        assert (f"model 'local' (backend openai): environment variable {UNSET_ENV} is not set"
                in no_key.stderr)
        assert "api_key_optional: true" in no_key.stderr
        assert not (wd / "results").exists()  # no job started
        # a run that needs none of that model's jobs needs no key
        assert snakemake("results/corpus/docs.parquet").returncode == 0

        cfg["models"]["local"]["api_key_optional"] = True
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
        proc = snakemake()
    finally:
        sock.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    where = f"local-model at {url}/chat/completions: cannot connect: connection refused"
    report = "3 of 3 requests failed (100.0% > max_failure_share 5.0%)"
    logs = wd / "logs/generate/local/main/docs"
    log = (logs / "00000-of-00001.log").read_text()
    # the reason is in the job's log, which Snakemake prints (--show-failed-logs, the default
    # profile); the job writes errors to its log only, so the console shows it once
    assert log.count(report) == 1 and out.count(report) == 1
    # a server on this machine that reports no slot count is sent one request at a time, so
    # the first wave that could not connect is that one request
    assert where in log and "stopping: the first 1 request(s) could not connect" in log
    failures = read_table(logs / "00000-of-00001.failures.parquet", GENERATIONS)
    assert len(failures) == 3 and (failures["status"] == "failed").all()
    assert failures["error"].str.contains(where, regex=False).all()
    # no retry ladder: the one request sent was tried once, the other two were never sent
    assert sorted(failures["attempts"]) == [0, 0, 1]
    assert not (wd / "results/generations/local/main/docs/shards/00000-of-00001.parquet").exists()
