"""What copyprobe reads of a running Snakemake workflow, in one place.

Snakemake offers no public API for these; each function reads one internal and has its test
(tests/test_snakemake_state.py), so a Snakemake upgrade that moves one fails there. The
argument is the ``workflow`` object of a Snakefile; nothing here imports Snakemake.
"""

from __future__ import annotations

from typing import Any


def _job(job: Any) -> tuple[str, dict[str, str]]:
    wildcards = job.wildcards
    return job.rule.name, {key: wildcards[key] for key in wildcards.keys()}


def jobs_to_run(workflow: Any) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job the plan will run (in ``onstart``: before the first)."""
    return [_job(job) for job in workflow.dag.needrun_jobs()]


def jobs_run(workflow: Any) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job this invocation planned, finished ones included (in
    ``onsuccess``: the jobs that ran)."""
    return [_job(job) for job in workflow.dag.needrun_jobs(exclude_finished=False)]


def config_files(workflow: Any) -> list[str]:
    """Every config file Snakemake read: ``--configfile``'s and the Snakefile's
    ``configfile:`` (read even under ``--replace-workflow-config``, which then replaces it)."""
    return [str(f) for f in workflow.configfiles]


def configfile_merged(workflow: Any) -> bool:
    """Whether ``--configfile`` files were merged into the Snakefile's own ``configfile:``
    (no ``--replace-workflow-config``); False in the processes a job runs in."""
    settings = workflow.config_settings
    return bool(workflow.is_main_process and settings.configfiles
                and not settings.replace_workflow_config
                and len(workflow.configfiles) > len(settings.configfiles))
