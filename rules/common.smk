# Shared helpers: config validation, wildcard constraints and input/params functions.
# Scripts get their config slice through params and never read the global config, so adding a
# model or changing one model's settings reruns only that model's jobs plus the aggregates.

import os
import re
import sys
from pathlib import Path

import copyprobe.config as cpc
from copyprobe.dependencies import model_parts, script_dependencies
from copyprobe.environment import (
    config_digest,
    environment_facts,
    package_files,
    workflow_files,
)
from copyprobe.generation.base import backend_facts, job_threads
from copyprobe.generation.keys import check_api_keys
from copyprobe.models import input_files as model_input_files
from copyprobe.sources import source_input_files
from copyprobe.snakemake_state import (
    config_files,
    configfile_merged,
    jobs_run,
    jobs_to_run,
)
from copyprobe.sources.base import reads_installed
from copyprobe.studies import studies

# Snakemake has read the config files (keeping the last value of a key given twice): read them
# again with copyprobe's loader, which stops at a duplicate key naming the file, line and key.
# Then validate, before any job is scheduled. A bad config ends the run with one line.
try:
    for _configfile in config_files(workflow):
        cpc.read_config_file(_configfile)
    _validated = cpc.validate_config(config)
except cpc.ConfigError as _exc:
    raise SystemExit(f"copyprobe: {_exc}")
config.clear()
config.update(_validated)
# The registered studies (copyprobe.studies): each brings its rule file, targets and pages.
STUDIES = studies()


def study_rule_files():
    """The rule file of every registered study that has one (the Snakefile includes them)."""
    base = Path(workflow.basedir)
    return [str(base / s.rule_file) for s in STUDIES if s.rule_file is not None]


# `--configfile mine.yaml` is merged into the workflow's own config file (Snakemake's rule),
# which surprises a user who meant to run only their file: say what runs, and how not to.
if configfile_merged(workflow):
    print(
        f"copyprobe: --configfile is merged into config/config.yaml: models "
        f"{', '.join(sorted(config['models']))}; datasets "
        f"{', '.join(sorted(config.get('datasets', {})))}; add --replace-workflow-config to "
        "run only "
        "your file",
        file=sys.stderr,
    )


# The API keys of the models that will run, checked once the jobs are planned and before the
# first starts, naming the model and the variable, never a value. Snakemake runs onstart neither
# in a dry run (which sends nothing, so plans and config checks need no secrets) nor when
# nothing is to be done.
onstart:
    check_api_keys(models_to_run())


def models_to_run():
    """The config of every model with a job to run in this invocation (and the entries a study
    runs outside `models`, such as the copyright judge's, when a job of theirs is to run).
    """
    jobs = jobs_to_run(workflow)
    names = {wildcards.get("model") for _, wildcards in jobs}
    out = {m: spec for m, spec in config["models"].items() if m in names}
    rules = {name for name, _ in jobs}
    for study in STUDIES:
        out.update(study.extra_models(config, rules))
    return out


wildcard_constraints:
    shard=r"\d{5}-of-\d{5}",
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    source=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    variant=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    experiment=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    benchmark=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


def source_params(wildcards):
    return cpc.source_spec(config, wildcards.source)


def source_cutoffs(wildcards):
    """The models' cutoffs, for source kinds whose documents depend on them (else empty, so
    that adding a model does not collect other sources again)."""
    return cpc.source_cutoffs(config, wildcards.source)


def source_files(wildcards):
    """The files the source reads (it says which), so that editing one reruns the source."""
    return source_input_files(cpc.source_spec(config, wildcards.source))


def cut_at(wildcards):
    return cpc.prompt_cut_at(config, wildcards.source)


def model_params(wildcards):
    """The model's slice with its variant's overrides applied (copyprobe.config.run_slice)."""
    return cpc.run_slice(config, wildcards.model, wildcards.variant)


def is_remote(wildcards):
    return backend_facts(config["models"][wildcards.model]["backend"])["remote"]


def generate_threads(wildcards):
    """Cores a generate job reserves: the model's n_threads (a default when unset; 1 for API
    clients); the script hands the backend the number Snakemake grants (at most --cores).
    """
    return job_threads(config["models"][wildcards.model])


def api_slots(wildcards):
    """A custom resource: cap concurrent API jobs with --resources llm_api=N."""
    return 1 if is_remote(wildcards) else 0


def generation_shards(wildcards):
    """Shard files of one (model, variant, source), known once its prompts exist (checkpoint)."""
    import pandas as pd
    from copyprobe.generation.shards import shard_count

    source = wildcards.source
    for study in STUDIES:  # the study whose checkpoint makes this source's prompts
        made_by = study.claims_prompts(config, source)
        if made_by is not None:
            prompts = (
                getattr(checkpoints, made_by)
                .get(**study.prompts_wildcards(source, wildcards))
                .output[0]
            )
            break
    else:
        raise ValueError(f"no study makes the prompts of source {source!r}")
    size = config["models"][wildcards.model].get("shard_size")
    n = shard_count(pd.read_parquet(prompts, columns=["status"]), size)
    return [
        f"results/generations/{wildcards.model}/{wildcards.variant}/{wildcards.source}/shards/"
        f"{i:05d}-of-{n:05d}.parquet"
        for i in range(n)
    ]


def model_file_spec(wildcards):
    return config["models"][wildcards.model].get("model_file")


def model_file_inputs(wildcards):
    """The files a model's weights are made from: replacing one reruns prepare_model, whose new
    sha256 changes every cache key of that model (no answer of the old weights is reused).
    """
    return model_input_files(model_file_spec(wildcards))


# ---- cluster resources
def generation_gpus(wildcards):
    """GPUs a generate job asks for (the standard `gpu` resource, which the SLURM executor
    plugin passes to sbatch as --gpus): 1 for a backend that runs its model on a GPU (hf,
    vllm), 0 for the others."""
    return (
        1 if backend_facts(config["models"][wildcards.model]["backend"])["gpu"] else 0
    )


def generation_runtime(wildcards, attempt):
    """Minutes a generate job asks for: 4 hours, twice that on its second attempt and so on,
    so that a shard resubmitted after its time limit (it resumes from its cached answers) gets
    more time."""
    return 240 * attempt


# ---- software environments (envs/; used with --sdm conda)
def backend_env(backend):
    """The conda environment of a job that runs a model of ``backend``: the GPU one for a
    backend that runs its model on a GPU (hf, vllm), the CPU one for the others."""
    return (
        f"../envs/generation-{'gpu' if backend_facts(backend)['gpu'] else 'cpu'}.yaml"
    )


def corpus_env(wildcards):
    """The library's environment; none for a source that reads the Python distributions
    installed where it runs (installed_licences, package_docs), so that its documents are
    those of the Python Snakemake runs in, with or without --sdm conda."""
    spec = cpc.source_spec(config, wildcards.source)
    return None if reads_installed(spec) else "../envs/library.yaml"


def generate_env(wildcards):
    return backend_env(config["models"][wildcards.model]["backend"])


# ---- API jobs on the head node (config key api_jobs_on_head_node; docs/slurm.md)
def one_of(names):
    """A wildcard constraint matching exactly these names."""
    return "|".join(re.escape(name) for name in names)


# ---- library dependencies
def library(script, parts=None):
    """The copyprobe files that workflow_scripts/<script>.py imports, directly or through
    other modules and registries: a named input of the script's rule, so that editing one
    reruns the rule's jobs (Snakemake tracks only the script's own file). ``parts(wildcards)``
    names the registry parts a job uses (a model's backends; a mapping: the same for every
    job); without it, every part a reached registry declares counts. An input function, so
    only rules with jobs in the plan are analysed (once per script and parts)."""
    path = Path(workflow.basedir) / "workflow_scripts" / f"{script}.py"

    def files(wildcards):
        chosen = parts(wildcards) if callable(parts) else parts
        return script_dependencies(path, chosen, relative_to=".")

    return files


# The parts of rules that run no model: their scripts reach the generation registries only
# through the modules they share with the rules that do.
NO_MODEL = model_parts(None)


def model_registry_parts(wildcards):
    """The backends and backend wrappers of the job's model."""
    return model_parts(config["models"][wildcards.model])


def source_registry_parts(wildcards):
    """The source kind the job collects."""
    return {"source": [cpc.source_spec(config, wildcards.source)["kind"]]}


# ---- the environment table
def environment_library_files():
    """Every file of the copyprobe package that runs (modules and package data)."""
    return package_files(relative_to=".")


def environment_workflow_files():
    """Snakefile, rule files and workflow scripts (relative to the working directory, so
    that the table names them the same wherever the workflow lies)."""
    base = Path(workflow.basedir)
    return [os.path.relpath(base / f) for f in workflow_files(base)]


def environment_model_manifests():
    return expand("results/models/{model}.json", model=config["models"])


# ---- the report's HTML pages (rules/report.smk)
# the versions and hashes of what a run used (columns kind, name, version, sha256)
ENVIRONMENT_TABLE = "results/reproducibility/environment.parquet"


# ---- targets
def all_targets():
    """What each study makes for the default target, and the environment table."""
    return [
        *(path for study in STUDIES for path in study.targets(config)),
        ENVIRONMENT_TABLE,
    ]


def report_targets():
    """The HTML page of every table among all_targets(), so that the report made for the
    default target shows each table that the run makes."""
    made = set(all_targets())
    pages = {ENVIRONMENT_TABLE: "results/report/environment.html"}
    for study in STUDIES:
        pages.update(study.report_pages(config))
    return [page for table, page in pages.items() if table in made]
