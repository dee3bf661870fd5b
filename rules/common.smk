# Shared helpers: config validation, wildcard constraints and input/params functions.
# Scripts get their config slice through params and never read the global config, so adding a
# model or changing one model's settings reruns only that model's jobs plus the aggregates.

import os
import re
import sys
from pathlib import Path

import copyprobe.config as cpc
import copyprobe.experiments as cpx
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
from copyprobe.sources.base import reads_installed

# Snakemake has read the config files (keeping the last value of a key given twice): read them
# again with copyprobe's loader, which stops at a duplicate key naming the file, line and key.
# Then validate, before any job is scheduled. A bad config ends the run with one line.
try:
    for _configfile in workflow.configfiles:
        cpc.read_config_file(_configfile)
    _validated = cpc.validate_config(config)
except cpc.ConfigError as _exc:
    raise SystemExit(f"copyprobe: {_exc}")
config.clear()
config.update(_validated)

# `--configfile mine.yaml` is merged into the workflow's own config file (Snakemake's rule),
# which surprises a user who meant to run only their file: say what runs, and how not to.
if (
    workflow.is_main_process
    and workflow.config_settings.configfiles
    and not workflow.config_settings.replace_workflow_config
    and len(workflow.configfiles) > len(workflow.config_settings.configfiles)
):
    print(
        f"copyprobe: --configfile is merged into config/config.yaml: models "
        f"{', '.join(sorted(config['models']))}; datasets "
        f"{', '.join(sorted(config['datasets']))}; add --replace-workflow-config to run only "
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
    """The config of every model with a job to run in this invocation (the copyright judge's
    entry too, as "copyright.judge", when a judge job is to run)."""
    jobs = list(workflow.dag.needrun_jobs())
    names = {getattr(job.wildcards, "model", None) for job in jobs}
    out = {m: spec for m, spec in config["models"].items() if m in names}
    judge = config["copyright"]["judge"]
    judge_rules = {"copyright_judge", "copyright_judge_on_head"}
    if judge is not None and any(job.rule.name in judge_rules for job in jobs):
        out["copyright.judge"] = judge
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
    """The model's slice with its variant's decoding and MSR overrides applied."""
    return cpx.run_slice(config, wildcards.model, wildcards.variant)


def msr_params(wildcards):
    return cpx.run_slice(config, wildcards.model, wildcards.variant)["msr"]


def matching_params(wildcards):
    """The thresholds k of a (model, variant): k_max auto resolved."""
    return cpx.run_matching(config, wildcards.model, wildcards.variant)


def run_settings(wildcards):
    """Decoding, MSR settings and thresholds of a (model, variant), kept in its stats JSON."""
    return cpx.run_settings(config, wildcards.model, wildcards.variant)


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
    if source.startswith(cpc.COPYRIGHT_PREFIX):
        prompts = checkpoints.copyright_prompts.get(
            model=wildcards.model,
            variant=wildcards.variant,
            benchmark=source.removeprefix(cpc.COPYRIGHT_PREFIX),
        ).output[0]
    else:
        prompts = checkpoints.build_prompts.get(**wildcards).output[0]
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


def curation_params(wildcards):
    return {"cutoff": config["models"][wildcards.model]["cutoff"], **config["curation"]}


def model_curated(wildcards):
    """The curated table of every source the model runs on."""
    return expand(
        "results/curated/{model}/{source}.parquet",
        model=wildcards.model,
        source=cpc.model_sources(config, wildcards.model),
    )


def model_corpora(wildcards):
    return expand(
        "results/corpus/{source}.parquet",
        source=cpc.model_sources(config, wildcards.model),
    )


def curation_report_params(wildcards):
    """The model's cutoff, the curation and blind-baseline settings, and its datasets."""
    return {
        "cutoff": config["models"][wildcards.model]["cutoff"],
        "curation": config["curation"],
        "statistics": config["statistics"],
        "datasets": {
            d: config["datasets"][d]
            for d in cpc.model_datasets(config, wildcards.model)
        },
    }


def all_curation_reports():
    return [
        f"results/curation/{m}.{ext}"
        for m in cpc.msr_models(config)
        for ext in ("parquet", "md")
    ]


def dataset_members(wildcards):
    return config["datasets"][wildcards.dataset]


def dataset_matches(wildcards):
    return expand(
        "results/matches/{model}/{variant}/{source}.parquet",
        model=wildcards.model,
        variant=wildcards.variant,
        source=dataset_members(wildcards),
    )


def dataset_corpora(wildcards):
    return expand("results/corpus/{source}.parquet", source=dataset_members(wildcards))


def all_stats():
    """The stats JSON of every (model, variant, dataset) run."""
    return [f"results/stats/{m}/{v}/{d}.json" for m, v, d in cpx.runs(config)]


def dataset_models_stats(wildcards):
    """Figures 1 and 2: every model's main run on one dataset."""
    return [
        f"results/stats/{m}/{cpx.MAIN}/{wildcards.dataset}.json"
        for m in config["models"]
        if wildcards.dataset in cpx.run_datasets(config, m, cpx.MAIN)
    ]


def experiment_stats(wildcards):
    """The stats JSON of an experiment's variants of one model, in the experiment's order."""
    e = config["experiments"][wildcards.experiment]
    return [
        f"results/stats/{wildcards.model}/{v}/{e['dataset']}.json"
        for v in cpx.experiment_variants(e)
    ]


def experiment_params(wildcards):
    """What the aggregate scripts of an experiment need: kind, labels, parameter, title."""
    e = config["experiments"][wildcards.experiment]
    return {
        "name": wildcards.experiment,
        "kind": e["kind"],
        "dataset": e["dataset"],
        "labels": cpx.experiment_labels(e),
        "parameter": e.get("parameter", "setting"),
        "split": e.get("split", "pre"),
        "title": e.get("title", f"{wildcards.experiment} on {e['dataset']}"),
    }


def experiments_of(kind):
    return [n for n, e in config["experiments"].items() if e["kind"] == kind]


def experiment_figures():
    return [
        f"results/figures/experiments/{n}/{m}.png"
        for n in config["experiments"]
        for m in cpx.experiment_models(config, n)
    ]


def sweep_stats(wildcards):
    """Every model's stats of one sweep, model by model in the experiment's order."""
    e = config["experiments"][wildcards.experiment]
    return [
        f"results/stats/{m}/{v}/{e['dataset']}.json"
        for m in cpx.experiment_models(config, wildcards.experiment)
        for v in cpx.experiment_variants(e)
    ]


def all_comparisons():
    return [
        f"results/comparisons/{n}/{m}.json"
        for n in experiments_of("comparison")
        for m in cpx.experiment_models(config, n)
    ]


def all_targets():
    figures = [
        f"results/figures/{m}/{v}/{d}_{kind}.png"
        for m, v, d in cpx.runs(config)
        for kind in ("fk", "per_document", "helm")
    ]
    datasets = sorted({d for _, _, d in cpx.runs(config)})
    models = [f"results/figures/{d}_fk_models.png" for d in datasets]
    sweeps = [
        f"results/tables/sweep_{n}.{ext}"
        for n in experiments_of("sweep")
        for ext in ("csv", "md")
    ]
    comparisons = ["results/tables/comparisons.csv", "results/tables/comparisons.md"]
    msr_table = ["results/tables/msr_table.csv", "results/tables/msr_table.md"]
    return [
        *(msr_table if cpx.runs(config) else []),
        *figures,
        *models,
        *experiment_figures(),
        *sweeps,
        *(comparisons if all_comparisons() else []),
        *all_curation_reports(),
        *copyright_targets(),
        "results/reproducibility/environment.parquet",
    ]


def print_table():
    """After a successful run that (re)made the results table, print it (Markdown)."""
    made = workflow.dag.needrun_jobs(exclude_finished=False)
    if any(job.rule.name == "make_table" for job in made):
        table = Path("results/tables/msr_table.md")
        if table.is_file():
            print(f"\n{table}:\n\n{table.read_text()}", flush=True)


# ---- the copyright study ------------------------------------------------------------------


def copyright_benchmark_spec(wildcards):
    return config["copyright"]["benchmarks"][wildcards.benchmark]


def copyright_material_corpora(wildcards):
    """The corpus tables of a benchmark's material sources."""
    return expand(
        "results/corpus/{source}.parquet",
        source=copyright_benchmark_spec(wildcards)["materials"],
    )


def copyright_images_dir(wildcards):
    """Rendered pages are content-addressed files kept with the caches: a benchmark rebuilt
    after a change draws only the pages it has not drawn before."""
    return str(Path(config["cache_dir"]) / "copyright" / "images")


def copyright_judge_params(wildcards):
    """The judge's model entry (None: rule detector only), where its calls are cached, and the
    words of a response it sees."""
    c = config["copyright"]
    return {
        "judge": c["judge"],
        "cache_dir": config["cache_dir"],
        "max_words": c["judge_max_words"],
    }


def copyright_judge_threads(wildcards):
    judge = config["copyright"]["judge"]
    return 1 if judge is None else job_threads(judge)


def copyright_judge_api_slots(wildcards):
    judge = config["copyright"]["judge"]
    return 1 if judge is not None and backend_facts(judge["backend"])["remote"] else 0


def copyright_judge_gpus(wildcards):
    """A GPU for a judge on an hf or vllm backend (SLURM asks for it; locally it is a count)."""
    judge = config["copyright"]["judge"]
    return 1 if judge is not None and backend_facts(judge["backend"])["gpu"] else 0


def copyright_metrics_params(wildcards):
    return config["copyright"]["metrics"]


def copyright_scored_tables(wildcards):
    """Every study model's scored table of one benchmark."""
    return expand(
        "results/copyright/{benchmark}/scored/{model}.parquet",
        benchmark=wildcards.benchmark,
        model=cpc.copyright_models(config),
    )


def copyright_all_scored(wildcards):
    """Every benchmark's pooled scored table (the guard's tables span benchmarks)."""
    return expand(
        "results/copyright/{benchmark}/scored.parquet",
        benchmark=config["copyright"]["benchmarks"],
    )


def copyright_model_main(wildcards):
    """A copyright model's slice (its variant main: the study runs no variants)."""
    return cpx.run_slice(config, wildcards.model, cpx.MAIN)


def copyright_all_guard_decisions(wildcards):
    """The decision sidecar of every guarded model of the pairs, on every benchmark."""
    return expand(
        "results/copyright/{benchmark}/guard_decisions/{model}.parquet",
        benchmark=config["copyright"]["benchmarks"],
        model=cpc.guard_pairs(config),
    )


def copyright_guard_params(wildcards):
    """Guarded models and their bases, their guard blocks, each benchmark's rights status."""
    pairs = cpc.guard_pairs(config)
    return {
        "pairs": pairs,
        "guards": {m: config["models"][m]["guard"] for m in pairs},
        "rights": {
            b: spec["rights"] for b, spec in config["copyright"]["benchmarks"].items()
        },
    }


def copyright_targets():
    out = []
    for b in config["copyright"]["benchmarks"]:
        out += [
            f"results/copyright/{b}/tables/table1.md",
            f"results/copyright/{b}/figures/fig6.png",
            f"results/copyright/{b}/refusal_agreement.json",
        ]
    if config["copyright"]["benchmarks"] and cpc.guard_pairs(config):
        out.append("results/copyright/guard/table2.md")
    return out


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


def copyright_judge_env(wildcards):
    """The judge's backend's generation environment; without a judge (rule detector only)
    the library's."""
    judge = config["copyright"]["judge"]
    return "../envs/library.yaml" if judge is None else backend_env(judge["backend"])


# ---- API jobs on the head node (config key api_jobs_on_head_node)
# A rule is local or not as a whole, so the jobs that run on the head node have rules of their
# own (generate_on_head, copyright_judge_on_head: the same scripts and outputs); these
# wildcard patterns send each job to exactly one of the pair.
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
NEVER = r"(?!)"


def model_pattern(on_head):
    """The {model} values of generate (on_head False) or of generate_on_head (True)."""
    names = "|".join(re.escape(m) for m in cpc.head_node_models(config))
    if on_head:
        return f"(?:{names})" if names else NEVER
    # any name but those (a listed name followed by more name characters is another name)
    return f"(?!(?:{names})(?![A-Za-z0-9_.-])){NAME}" if names else NAME


def judge_pattern(on_head):
    """The {benchmark} values of copyright_judge (on_head False) or of copyright_judge_on_head
    (True): all or none, as the judge runs on the head node or not."""
    return NAME if cpc.judge_on_head_node(config) == on_head else NEVER


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


def judge_registry_parts(wildcards):
    """The backends of the copyright judge (none without one)."""
    return model_parts(config["copyright"]["judge"])


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


def report_targets():
    """The HTML page of every table among all_targets(), so that the report made for the
    default target shows each table that the run makes."""
    made = set(all_targets())
    pages = {
        "results/tables/msr_table.md": "results/report/msr/msr_table.html",
        "results/tables/comparisons.md": "results/report/msr/comparisons.html",
        "results/copyright/guard/table2.md": "results/report/copyright/guard/table2.html",
        ENVIRONMENT_TABLE: "results/report/environment.html",
    }
    for n in experiments_of("sweep"):
        pages[f"results/tables/sweep_{n}.md"] = f"results/report/msr/sweep_{n}.html"
    for m in cpc.msr_models(config):
        pages[f"results/curation/{m}.md"] = f"results/report/curation/{m}.html"
    for b in config["copyright"]["benchmarks"]:
        pages[f"results/copyright/{b}/tables/table1.md"] = (
            f"results/report/copyright/{b}/table1.html"
        )
    return [page for table, page in pages.items() if table in made]
