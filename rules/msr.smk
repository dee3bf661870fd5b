# The Many-Shot Regurgitation study: curation, prompts, matches, statistics, figures and
# tables. Every per-model step runs once per variant ({variant}: "main", or a named override of
# the decoding, the MSR settings or the thresholds k); experiments draw variants into the
# paper's ablation figures, Table 2 and settings comparisons.

import copyprobe.msr.paths as msr_paths

from copyprobe.extraction.inputs import print_table as print_extraction_table
from copyprobe.membership.inputs import print_tables as print_membership_tables
from copyprobe.msr.inputs import MSRInputs, print_table
from copyprobe.msr.study import all_comparisons, all_stats

msr_inputs = MSRInputs(config)


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    experiment=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


rule curate:
    input:
        paths.CORPUS,
        library=library("curate"),
    output:
        msr_paths.CURATED,
    log:
        "logs/curate/{model}/{source}.log",
    conda:
        "../envs/library.yaml"
    params:
        curation=msr_inputs.curation_params,
    script:
        "../workflow_scripts/curate.py"


rule curation_report:
    input:
        curated=msr_inputs.model_curated,
        corpora=msr_inputs.model_corpora,
        library=library("curation_report"),
    output:
        table=msr_paths.CURATION_TABLE,
        md=msr_paths.CURATION_REPORT,
    log:
        "logs/curation_report/{model}.log",
    conda:
        "../envs/library.yaml"
    params:
        report=msr_inputs.curation_report_params,
    script:
        "../workflow_scripts/curation_report.py"


checkpoint build_prompts:
    input:
        corpus=paths.CORPUS,
        curated=msr_paths.CURATED,
        library=library("build_prompts"),
    output:
        paths.PROMPTS,
    log:
        "logs/build_prompts/{model}/{variant}/{source}.log",
    wildcard_constraints:
        # the copyright benchmarks' prompts are made by copyright_prompts
        source=r"(?!copyright\.)[A-Za-z0-9][A-Za-z0-9_.-]*",
    conda:
        "../envs/library.yaml"
    params:
        msr=msr_inputs.msr_params,
        cut_at=shared.cut_at,
    script:
        "../workflow_scripts/build_prompts.py"


rule count_matches:
    input:
        prompts=paths.PROMPTS,
        generations=paths.GENERATIONS,
        library=library("count_matches"),
    output:
        msr_paths.MATCHES,
    log:
        "logs/count_matches/{model}/{variant}/{source}.log",
    conda:
        "../envs/library.yaml"
    params:
        matching=msr_inputs.matching_params,
    script:
        "../workflow_scripts/count_matches.py"


rule compute_stats:
    input:
        matches=msr_inputs.dataset_matches,
        corpora=msr_inputs.dataset_corpora,
        library=library("compute_stats"),
    output:
        msr_paths.STATS,
    log:
        "logs/compute_stats/{model}/{variant}/{dataset}.log",
    conda:
        "../envs/library.yaml"
    params:
        statistics=config["statistics"],
        matching=msr_inputs.matching_params,
        settings=msr_inputs.run_settings,
    script:
        "../workflow_scripts/compute_stats.py"


rule plot_figures:
    input:
        stats=msr_paths.STATS,
        library=library("plot_figures"),
    output:
        fk=report(
            msr_paths.FIGURE_FK,
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
            msr_paths.FIGURE_PER_DOCUMENT,
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
            msr_paths.FIGURE_HELM,
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
        stats=msr_inputs.dataset_models_stats,
        library=library("plot_models"),
    output:
        report(
            msr_paths.MODELS_FIGURE,
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
        stats=msr_inputs.experiment_stats,
        library=library("plot_experiment"),
    output:
        report(
            msr_paths.EXPERIMENT_FIGURE,
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
        experiment=msr_inputs.experiment_params,
    script:
        "../workflow_scripts/plot_experiment.py"


rule make_sweep_table:
    input:
        stats=msr_inputs.sweep_stats,
        library=library("make_sweep_table"),
    output:
        csv=msr_paths.SWEEP_CSV,
        md=msr_paths.SWEEP_MD,
    log:
        "logs/make_sweep_table/{experiment}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        experiment=msr_inputs.experiment_params,
    script:
        "../workflow_scripts/make_sweep_table.py"


rule compare_settings:
    input:
        stats=msr_inputs.experiment_stats,
        library=library("compare_settings"),
    output:
        msr_paths.COMPARISON,
    log:
        "logs/compare_settings/{experiment}/{model}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        experiment=msr_inputs.experiment_params,
    script:
        "../workflow_scripts/compare_settings.py"


rule make_comparison_table:
    input:
        comparisons=all_comparisons(config),
        library=library("make_comparison_table"),
    output:
        csv=msr_paths.COMPARISONS_CSV,
        md=msr_paths.COMPARISONS_MD,
    log:
        "logs/make_comparison_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/make_comparison_table.py"


rule make_table:
    input:
        stats=all_stats(config),
        library=library("make_table"),
    output:
        csv=msr_paths.TABLE_CSV,
        md=msr_paths.TABLE_MD,
    log:
        "logs/make_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/make_table.py"


# Attribution (msr.attribution): each run's generations against a span index (rules/spans.smk):
# spans copied from documents other than the prompt's own, and D_post generations with spans of
# D_pre documents; the table over every run.
if config["msr"]["attribution"] is not None:
    from copyprobe.msr.inputs import AttributionInputs

    msr_attribution_inputs = AttributionInputs(config)

    rule msr_attribution:
        input:
            generations=msr_attribution_inputs.generations,
            prompts=msr_attribution_inputs.prompts,
            curated=msr_attribution_inputs.curated,
            index=msr_attribution_inputs.index,
            library=library("msr_attribution"),
        output:
            spans=msr_paths.ATTRIBUTION_SPANS,
            summary=msr_paths.ATTRIBUTION_SUMMARY,
        log:
            "logs/msr_attribution/{model}/{variant}/{dataset}.log",
        conda:
            "../envs/library.yaml"
        resources:
            mem_mb=4000,
        params:
            attribution=msr_attribution_inputs.params,
        script:
            "../workflow_scripts/msr_attribution.py"

    rule msr_attribution_table:
        input:
            spans=msr_attribution_inputs.runs("spans"),
            summaries=msr_attribution_inputs.runs("summary"),
            library=library("msr_attribution_table"),
        output:
            csv=msr_paths.ATTRIBUTION_CSV,
            md=msr_paths.ATTRIBUTION_MD,
        log:
            "logs/msr_attribution_table/all.log",
        localrule: True
        conda:
            "../envs/report.yaml"
        params:
            attribution=msr_attribution_inputs.table_params(),
        script:
            "../workflow_scripts/msr_attribution_table.py"


onsuccess:
    # one handler for the workflow (Snakemake keeps the last defined): every study's table
    _jobs = list(jobs_run(workflow))
    print_table(_jobs)
    print_extraction_table(_jobs)
    print_membership_tables(_jobs)
