# The Many-Shot Regurgitation study: curation, prompts, matches, statistics, figures and
# tables. Every per-model step runs once per variant ({variant}: "main", or a named override of
# the decoding, the MSR settings or the thresholds k); experiments draw variants into the
# paper's ablation figures, Table 2 and settings comparisons.

import copyprobe.msr.config as msr_config
import copyprobe.msr.experiments as cpx
import copyprobe.msr.study as msr_study


def msr_params(wildcards):
    return cpc.run_slice(config, wildcards.model, wildcards.variant)["msr"]


def matching_params(wildcards):
    """The thresholds k of a (model, variant): k_max auto resolved."""
    return cpx.run_matching(config, wildcards.model, wildcards.variant)


def run_settings(wildcards):
    """Decoding, MSR settings and thresholds of a (model, variant), kept in its stats JSON."""
    return cpx.run_settings(config, wildcards.model, wildcards.variant)



def curation_params(wildcards):
    return {"cutoff": config["models"][wildcards.model]["cutoff"], **config["curation"]}


def model_curated(wildcards):
    """The curated table of every source the model runs on."""
    return expand(
        "results/curated/{model}/{source}.parquet",
        model=wildcards.model,
        source=msr_config.model_sources(config, wildcards.model),
    )


def model_corpora(wildcards):
    return expand(
        "results/corpus/{source}.parquet",
        source=msr_config.model_sources(config, wildcards.model),
    )


def curation_report_params(wildcards):
    """The model's cutoff, the curation and blind-baseline settings, and its datasets."""
    return {
        "cutoff": config["models"][wildcards.model]["cutoff"],
        "curation": config["curation"],
        "statistics": config["statistics"],
        "datasets": {
            d: config["datasets"][d]
            for d in msr_config.model_datasets(config, wildcards.model)
        },
    }


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


def dataset_models_stats(wildcards):
    """Figures 1 and 2: every model's main run on one dataset."""
    return [
        f"results/stats/{m}/{cpc.MAIN}/{wildcards.dataset}.json"
        for m in config["models"]
        if wildcards.dataset in cpx.run_datasets(config, m, cpc.MAIN)
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


def sweep_stats(wildcards):
    """Every model's stats of one sweep, model by model in the experiment's order."""
    e = config["experiments"][wildcards.experiment]
    return [
        f"results/stats/{m}/{v}/{e['dataset']}.json"
        for m in cpx.experiment_models(config, wildcards.experiment)
        for v in cpx.experiment_variants(e)
    ]


def print_table():
    """After a successful run that (re)made the results table, print it (Markdown)."""
    if any(name == "make_table" for name, _ in jobs_run(workflow)):
        table = Path("results/tables/msr_table.md")
        if table.is_file():
            print(f"\n{table}:\n\n{table.read_text()}", flush=True)


rule curate:
    input:
        "results/corpus/{source}.parquet",
        library=library("curate"),
    output:
        "results/curated/{model}/{source}.parquet",
    log:
        "logs/curate/{model}/{source}.log",
    conda:
        "../envs/library.yaml"
    params:
        curation=curation_params,
    script:
        "../workflow_scripts/curate.py"


rule curation_report:
    input:
        curated=model_curated,
        corpora=model_corpora,
        library=library("curation_report"),
    output:
        table="results/curation/{model}.parquet",
        md="results/curation/{model}.md",
    log:
        "logs/curation_report/{model}.log",
    conda:
        "../envs/library.yaml"
    params:
        report=curation_report_params,
    script:
        "../workflow_scripts/curation_report.py"


checkpoint build_prompts:
    input:
        corpus="results/corpus/{source}.parquet",
        curated="results/curated/{model}/{source}.parquet",
        library=library("build_prompts"),
    output:
        "results/prompts/{model}/{variant}/{source}.parquet",
    log:
        "logs/build_prompts/{model}/{variant}/{source}.log",
    wildcard_constraints:
        # the copyright benchmarks' prompts are made by copyright_prompts
        source=r"(?!copyright\.)[A-Za-z0-9][A-Za-z0-9_.-]*",
    conda:
        "../envs/library.yaml"
    params:
        msr=msr_params,
        cut_at=cut_at,
    script:
        "../workflow_scripts/build_prompts.py"


rule count_matches:
    input:
        prompts="results/prompts/{model}/{variant}/{source}.parquet",
        generations="results/generations/{model}/{variant}/{source}.parquet",
        library=library("count_matches"),
    output:
        "results/matches/{model}/{variant}/{source}.parquet",
    log:
        "logs/count_matches/{model}/{variant}/{source}.log",
    conda:
        "../envs/library.yaml"
    params:
        matching=matching_params,
    script:
        "../workflow_scripts/count_matches.py"


rule compute_stats:
    input:
        matches=dataset_matches,
        corpora=dataset_corpora,
        library=library("compute_stats"),
    output:
        "results/stats/{model}/{variant}/{dataset}.json",
    log:
        "logs/compute_stats/{model}/{variant}/{dataset}.log",
    conda:
        "../envs/library.yaml"
    params:
        statistics=config["statistics"],
        matching=matching_params,
        settings=run_settings,
    script:
        "../workflow_scripts/compute_stats.py"


rule plot_figures:
    input:
        stats="results/stats/{model}/{variant}/{dataset}.json",
        library=library("plot_figures"),
    output:
        fk=report(
            "results/figures/{model}/{variant}/{dataset}_fk.png",
            caption="../report/fk.rst",
            category="MSR figures",
            subcategory="f_k per model",
            labels={
                "model": "{model}",
                "variant": "{variant}",
                "dataset": "{dataset}",
            },
        ),
        per_document=report(
            "results/figures/{model}/{variant}/{dataset}_per_document.png",
            caption="../report/per_document.rst",
            category="MSR figures",
            subcategory="per-document longest match",
            labels={
                "model": "{model}",
                "variant": "{variant}",
                "dataset": "{dataset}",
            },
        ),
        helm=report(
            "results/figures/{model}/{variant}/{dataset}_helm.png",
            caption="../report/helm.rst",
            category="MSR figures",
            subcategory="HELM prefix and edit similarity",
            labels={
                "model": "{model}",
                "variant": "{variant}",
                "dataset": "{dataset}",
            },
        ),
    log:
        "logs/plot_figures/{model}/{variant}/{dataset}.log",
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/plot_figures.py"


rule plot_models:
    input:
        stats=dataset_models_stats,
        library=library("plot_models"),
    output:
        report(
            "results/figures/{dataset}_fk_models.png",
            caption="../report/fk_models.rst",
            category="MSR figures",
            subcategory="f_k of every model",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/plot_models/{dataset}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        title="f_k per model on {dataset} (paper mode)",
    script:
        "../workflow_scripts/plot_models.py"


rule plot_experiment:
    input:
        stats=experiment_stats,
        library=library("plot_experiment"),
    output:
        report(
            "results/figures/experiments/{experiment}/{model}.png",
            caption="../report/experiment.rst",
            category="MSR figures",
            subcategory="experiments",
            labels={"experiment": "{experiment}", "model": "{model}"},
        ),
    log:
        "logs/plot_experiment/{experiment}/{model}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        experiment=experiment_params,
    script:
        "../workflow_scripts/plot_experiment.py"


rule make_sweep_table:
    input:
        stats=sweep_stats,
        library=library("make_sweep_table"),
    output:
        csv="results/tables/sweep_{experiment}.csv",
        md="results/tables/sweep_{experiment}.md",
    log:
        "logs/make_sweep_table/{experiment}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        experiment=experiment_params,
    script:
        "../workflow_scripts/make_sweep_table.py"


rule compare_settings:
    input:
        stats=experiment_stats,
        library=library("compare_settings"),
    output:
        "results/comparisons/{experiment}/{model}.json",
    log:
        "logs/compare_settings/{experiment}/{model}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        experiment=experiment_params,
    script:
        "../workflow_scripts/compare_settings.py"


rule make_comparison_table:
    input:
        comparisons=msr_study.all_comparisons(config),
        library=library("make_comparison_table"),
    output:
        csv="results/tables/comparisons.csv",
        md="results/tables/comparisons.md",
    log:
        "logs/make_comparison_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/make_comparison_table.py"


rule make_table:
    input:
        stats=msr_study.all_stats(config),
        library=library("make_table"),
    output:
        csv="results/tables/msr_table.csv",
        md="results/tables/msr_table.md",
    log:
        "logs/make_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/make_table.py"


onsuccess:
    print_table()
