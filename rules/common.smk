# Config loading and validation, wildcard constraints, and the workflow's targets; the rules'
# input and params functions live in the library (copyprobe/rule_inputs.py and each study's
# inputs.py).
# Scripts get their config slice through params and never read the global config, so adding a
# model or changing one model's settings reruns only that model's jobs plus the aggregates.

import sys
from pathlib import Path

import copyprobe.config as cpc
import copyprobe.paths as paths
from copyprobe.code_stamps import stamp_name, write_stamp
from copyprobe.dependencies import model_parts, script_dependencies
from copyprobe.environment import config_digest, environment_facts, package_files
from copyprobe.generation.keys import check_api_keys
from copyprobe.rule_inputs import SharedInputs, one_of
from copyprobe.snakemake_state import (
    config_files,
    configfile_merged,
    jobs_run,
    jobs_to_run,
)
from copyprobe.studies import print_tables, studies

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
# The input, params and resource functions of the shared rules (copyprobe.rule_inputs).
shared = SharedInputs(config, STUDIES, checkpoints)


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
    variant=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


# ---- library dependencies
def library(script, parts=None):
    """A stamp of the copyprobe files that workflow_scripts/<script>.py imports, directly or
    through other modules and registries (copyprobe/code_stamps.py): a named input of the
    script's rule, rewritten when one of those files changes, so that the edit reruns the
    rule's jobs (Snakemake tracks only the script's own file). ``parts(wildcards)`` names the
    registry parts a job uses (a model's backends; a mapping: the same for every job); without
    it, every part a reached registry declares counts. An input function, so only rules with
    jobs in the plan are analysed (the files found once per script and parts, the stamp
    checked per job)."""
    path = Path(workflow.basedir) / "workflow_scripts" / f"{script}.py"

    def stamp(wildcards):
        chosen = parts(wildcards) if callable(parts) else parts
        return write_stamp(
            stamp_name(script, chosen),
            script_dependencies(path, chosen, relative_to="."),
        )

    return stamp


def package_stamp(wildcards):
    """A stamp of every copyprobe file (the environment table hashes them all)."""
    return write_stamp("package", package_files(relative_to="."))


def workflow_stamp(wildcards):
    """A stamp of the workflow's own files (Snakefile, rules, scripts), for the same table."""
    return write_stamp("workflow", shared.environment_workflow_files(workflow.basedir))


# The parts of rules that run no model: their scripts reach the generation registries only
# through the modules they share with the rules that do.
NO_MODEL = model_parts(None)


# ---- targets
def all_targets():
    """What each study makes for the default target, and the environment table."""
    return [
        *(path for study in STUDIES for path in study.targets(config)),
        paths.ENVIRONMENT,
    ]


def report_targets():
    """The HTML page of every table that the default target makes (each study names those
    of its tables; rule report_page makes them), so that the report made for the default
    target shows each table of the run."""
    return list(shared.report_pages())
