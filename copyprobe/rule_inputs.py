"""The input, params and resource functions of the shared rules (rules/corpus.smk,
generation.smk, reproducibility.smk, report.smk), bound to the workflow's config; Snakemake
calls each with the job's wildcards. The studies' own are in ``copyprobe/<study>/inputs.py``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from copyprobe import config as cpc
from copyprobe import paths
from copyprobe.dependencies import model_parts
from copyprobe.environment import workflow_files
from copyprobe.generation.base import backend_facts, job_threads
from copyprobe.models import input_files as model_input_files
from copyprobe.sources import source_input_files
from copyprobe.sources.base import reads_installed
from copyprobe.studies import ReportPage, Study


def backend_env(backend: str) -> str:
    """The conda environment (relative to rules/) of a job that runs a model of ``backend``:
    the GPU one for a backend that runs its model on a GPU (hf, vllm), the CPU one else."""
    return f"../envs/generation-{'gpu' if backend_facts(backend)['gpu'] else 'cpu'}.yaml"


def one_of(names: Iterable[str]) -> str:
    """A wildcard constraint matching exactly these names."""
    return "|".join(re.escape(name) for name in names)


class SharedInputs:
    """``SharedInputs(config, studies, checkpoints).model_params`` is a params function of
    the generation rules; ``checkpoints`` is the Snakefile's (the studies' prompt makers)."""

    def __init__(self, config: dict[str, Any], studies: Sequence[Study], checkpoints: Any) -> None:
        self.config = config  # the workflow's validated config (the same object)
        self.studies = studies
        self.checkpoints = checkpoints
        self._pages: dict[str, ReportPage] | None = None

    def _model(self, wildcards: Any) -> dict[str, Any]:
        return self.config["models"][wildcards.model]

    # ---- sources
    def source_params(self, wildcards: Any) -> dict[str, Any]:
        return cpc.source_spec(self.config, wildcards.source)

    def source_cutoffs(self, wildcards: Any) -> list[str]:
        """The models' cutoffs, for source kinds whose documents depend on them (else empty, so
        that adding a model does not collect other sources again)."""
        return cpc.source_cutoffs(self.config, wildcards.source)

    def source_files(self, wildcards: Any) -> list[str]:
        """The files the source reads (it says which), so that editing one reruns the source."""
        return source_input_files(cpc.source_spec(self.config, wildcards.source))

    def source_registry_parts(self, wildcards: Any) -> dict[str, list[str]]:
        """The source kind the job collects."""
        return {"source": [cpc.source_spec(self.config, wildcards.source)["kind"]]}

    def corpus_env(self, wildcards: Any) -> str | None:
        """The library's environment; none for a source that reads the Python distributions
        installed where it runs (installed_licences, package_docs), so that its documents are
        those of the Python Snakemake runs in, with or without --sdm conda."""
        spec = cpc.source_spec(self.config, wildcards.source)
        return None if reads_installed(spec) else "../envs/library.yaml"

    def cut_at(self, wildcards: Any) -> str | None:
        return cpc.prompt_cut_at(self.config, wildcards.source)

    # ---- models
    def model_file_spec(self, wildcards: Any) -> dict[str, Any] | None:
        return self._model(wildcards).get("model_file")

    def model_file_inputs(self, wildcards: Any) -> list[str]:
        """The files a model's weights are made from: replacing one reruns prepare_model, whose
        new sha256 changes every cache key of that model (no answer of the old weights is
        reused); or the files a study's job makes them from (a model trained in the
        workflow), so that the model's jobs wait for that job."""
        made = [f for s in self.studies for f in s.model_inputs(self.config, wildcards.model)]
        return [*model_input_files(self.model_file_spec(wildcards)), *made]

    def model_registry_parts(self, wildcards: Any) -> dict[str, list[str]]:
        """The backends and backend wrappers of the job's model (and their studies)."""
        return model_parts(self._model(wildcards))

    # ---- generation
    def model_params(self, wildcards: Any) -> dict[str, Any]:
        """The model's slice with its variant's overrides applied (copyprobe.config.run_slice)."""
        return cpc.run_slice(self.config, wildcards.model, wildcards.variant)

    def generate_threads(self, wildcards: Any) -> int:
        """Cores a generate job reserves: the model's n_threads (a default when unset; 1 for
        API clients); the script hands the backend the number Snakemake grants (at most
        --cores)."""
        return job_threads(self._model(wildcards))

    def api_slots(self, wildcards: Any) -> int:
        """A custom resource: cap concurrent API jobs with --resources llm_api=N."""
        return 1 if backend_facts(self._model(wildcards)["backend"])["remote"] else 0

    def generation_gpus(self, wildcards: Any) -> int:
        """GPUs a generate job asks for (the standard `gpu` resource, which the SLURM executor
        plugin passes to sbatch as --gpus): 1 for a backend that runs its model on a GPU (hf,
        vllm), 0 for the others."""
        return 1 if backend_facts(self._model(wildcards)["backend"])["gpu"] else 0

    @staticmethod
    def generation_runtime(wildcards: Any, attempt: int) -> int:
        """Minutes a generate job asks for: 4 hours, twice that on its second attempt and so
        on, so that a shard resubmitted after its time limit (it resumes from its cached
        answers) gets more time."""
        return 240 * attempt

    def generate_env(self, wildcards: Any) -> str:
        return backend_env(self._model(wildcards)["backend"])

    def prompts_owner(self, source: str) -> Study:
        """The study that makes the prompts table of a generation source: the one whose
        ``prompts_prefix`` the source's name starts with, else, for a corpus source, the one
        that makes the corpus sources' prompts."""
        owners = {s.prompts_prefix: s for s in self.studies if s.prompts_prefix is not None}
        for prefix, study in owners.items():
            if prefix and source.startswith(prefix):
                return study
        if "" in owners and source in self.config["sources"]:
            return owners[""]
        raise ValueError(f"no study makes the prompts of source {source!r}")

    def prompts_table(self, wildcards: Any) -> str:
        """The prompts table a generate job reads: at the path of the study that makes it."""
        return self.prompts_owner(wildcards.source).prompts_table(wildcards.source, wildcards)

    def generation_shards(self, wildcards: Any) -> list[str]:
        """Shard files of one (model, variant, source), known once its prompts exist (the
        checkpoint of the study that makes them)."""
        return self.shards_of(wildcards.model, wildcards.variant, wildcards.source)

    def shards_of(self, model: str, variant: str, source: str,
                  pattern: str = paths.GENERATION_SHARD) -> list[str]:
        """The shard files (or a shard sidecar's, ``pattern``) of one (model, variant,
        source), known once its prompts exist (the owner's checkpoint)."""
        import pandas as pd

        from copyprobe.generation.shards import shard_count

        run = {"model": model, "variant": variant, "source": source}
        owner = self.prompts_owner(source)
        maker = getattr(self.checkpoints, owner.prompts_checkpoint)
        prompts = maker.get(**owner.prompts_wildcards(source, run)).output[0]
        n = shard_count(pd.read_parquet(prompts, columns=["status"]),
                        self.config["models"][model].get("shard_size"))
        return [paths.shard_path(model, variant, source, i, n, pattern) for i in range(n)]

    # ---- the environment table
    def environment_workflow_files(self, basedir: str) -> list[str]:
        """Snakefile, rule files and workflow scripts (relative to the working directory, so
        that the table names them the same wherever the workflow lies)."""
        return [os.path.relpath(Path(basedir) / f) for f in workflow_files(basedir)]

    def environment_model_manifests(self) -> list[str]:
        return [paths.MODEL_MANIFEST.format(model=m) for m in self.config["models"]]

    # ---- the report's pages (rule report_page: one job per page)
    def report_pages(self) -> dict[str, ReportPage]:
        """Every page of the report, by path: the environment table's and each study's."""
        if self._pages is None:
            self._pages = {paths.ENVIRONMENT_PAGE: ReportPage(
                paths.ENVIRONMENT, "environment", "Reproducibility",
                {"table": "versions and hashes"})}
            for study in self.studies:
                self._pages.update(study.report_pages(self.config))
        return self._pages

    def report_page_names(self) -> str:
        """The ``{page}`` wildcard's constraint: exactly the pages there are."""
        prefix, suffix = paths.REPORT_PAGE.split("{page}")
        names = []
        for page in self.report_pages():
            if not (page.startswith(prefix) and page.endswith(suffix)):
                raise ValueError(f"report page {page!r} is not of the form {paths.REPORT_PAGE}")
            names.append(page.removeprefix(prefix).removesuffix(suffix))
        return one_of(names)

    def report_page(self, wildcards: Any) -> ReportPage:
        return self.report_pages()[paths.REPORT_PAGE.format(page=wildcards.page)]

    def report_table(self, wildcards: Any) -> str:
        return self.report_page(wildcards).table

    def report_caption_params(self, wildcards: Any) -> dict[str, str]:
        """What report/report_page.rst reads: the section that captions the page, and the
        page's facts (its benchmark, model, ...)."""
        page = self.report_page(wildcards)
        return {"caption": page.caption, **page.facts}

    def report_category(self, wildcards: Any) -> str:
        return self.report_page(wildcards).category

    def report_subcategory(self, wildcards: Any) -> str | None:
        return self.report_page(wildcards).subcategory

    def report_labels(self, wildcards: Any) -> dict[str, str]:
        return dict(self.report_page(wildcards).labels)
