"""Adding a study is one package, one registry entry and one rule file: a toy study from
tests/studies/toystudy, registered here, is validated, planned, run and given its command
with no edit to copyprobe.config, copyprobe.cli or rules/common.smk. And the core on its own
(no study registered) validates and plans a config without any study block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import copyprobe.studies
from copyprobe.config import ConfigError, load_schema, model_slice, validate_config
from copyprobe.registry import Registry
from copyprobe.studies import STUDIES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from toystudy.study import ToyStudy  # noqa: E402

#: A config that names no study: one source, one model of a remote backend (no model file).
BARE = {"sources": {"docs": {"kind": "local", "path": "docs"}},
        "models": {"api": {"backend": "openai", "model_id": "m", "api_key_env": "TOY_KEY",
                           "api_key_optional": True, "studies": ["toy"]}}}
#: Run Snakemake with the registry as the test sets it: "builtin+toy" or "none".
RUN = """
import sys
import copyprobe.studies as s
from copyprobe.registry import Registry
sys.path.insert(0, {here!r})
from toystudy.study import ToyStudy
if sys.argv[1] == "none":
    s.STUDIES = Registry("study")
else:
    s.STUDIES.register("toy")(ToyStudy)
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[2:]]
main()
"""


def _registry(*extra: tuple[str, type]) -> Registry:
    fresh: Registry = Registry("study")
    for name in STUDIES.names():
        fresh.register(name)(STUDIES.get(name))
    for name, cls in extra:
        fresh.register(name)(cls)
    return fresh


@pytest.fixture()
def with_toy(monkeypatch):
    monkeypatch.setattr(copyprobe.studies, "STUDIES", _registry(("toy", ToyStudy)))


def test_a_registered_study_brings_its_schema_checks_and_slice(with_toy):
    schema = load_schema()
    assert "toy" in schema["properties"]
    model = schema["properties"]["models"]["additionalProperties"]["properties"]
    assert "toy_repeat" in model and "toy" in model["studies"]["items"]["enum"]
    cfg = validate_config({**BARE, "toy": {"greeting": "hi"},
                           "models": {"api": {**BARE["models"]["api"], "toy_repeat": 3}}})
    assert cfg["toy"] == {"greeting": "hi"}
    assert model_slice(cfg, "api")["toy"] == {"repeat": 3}
    with pytest.raises(ConfigError, match="config key 'toy.greeting': must not be blank"):
        validate_config({**BARE, "toy": {"greeting": " "}})
    with pytest.raises(ConfigError, match=r"unknown config key 'toy.colour'"):
        validate_config({**BARE, "toy": {"colour": "red"}})


def test_without_the_study_its_block_is_an_unknown_key():
    with pytest.raises(ConfigError, match=r"unknown config key 'toy'"):
        validate_config({**BARE, "toy": {}})


def test_the_core_alone_validates_a_config_without_any_study_block(monkeypatch):
    monkeypatch.setattr(copyprobe.studies, "STUDIES", Registry("study"))
    bare = {**BARE, "models": {"api": {k: v for k, v in BARE["models"]["api"].items()
                                       if k != "studies"}}}
    cfg = validate_config(bare)
    assert sorted(cfg) == ["api_jobs_on_head_node", "cache_dir", "curation", "models",
                           "prices", "sources", "spans", "statistics"]
    assert "studies" not in cfg["models"]["api"]


def test_a_registered_study_adds_its_command(with_toy):
    from copyprobe.cli import main

    assert main(["toy-greet", "--greeting", "hey"]) == 0


def _snakemake(wd: Path, registry: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", RUN.format(here=str(HERE)), registry,
                           "--snakefile", str(ROOT / "Snakefile"), "--cores", "1",
                           "--configfile", "toy.yaml", "--replace-workflow-config", *args],
                          cwd=wd, capture_output=True, text=True, timeout=300, env=env)


def _jobs(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """The dry run's job counts per rule (its summary table)."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        parts = line.split()
        if (len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total")
                and not parts[0].endswith(":")):
            counts[parts[0]] = int(parts[1])
    return counts


@pytest.fixture()
def wd(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(
        {**BARE, "toy": {"greeting": "hi"},
         "models": {"api": {**BARE["models"]["api"], "toy_repeat": 2}}}))
    return tmp_path


def test_the_workflow_plans_and_runs_the_toy_study(wd: Path):
    plan = _jobs(_snakemake(wd, "builtin+toy", "--dry-run"))
    # the toy's rule beside the core's environment table and its page (and the model it names)
    assert plan == {"greet": 1, "prepare_model": 1, "environment": 1, "report_page": 1,
                    "all": 1}
    proc = _snakemake(wd, "builtin+toy", "results/toy/api.txt")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (wd / "results" / "toy" / "api.txt").read_text() == "hi api\nhi api\n"


def test_the_workflow_plans_a_config_without_any_study(wd: Path):
    bare = {**BARE, "models": {"api": {k: v for k, v in BARE["models"]["api"].items()
                                       if k != "studies"}}}
    (wd / "toy.yaml").write_text(yaml.safe_dump(bare))
    plan = _jobs(_snakemake(wd, "none", "--dry-run"))
    assert plan == {"prepare_model": 1, "environment": 1, "report_page": 1, "all": 1}
