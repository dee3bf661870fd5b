# The extraction study: per (model, source) every window of the model's curated documents
# scored (exact p_z, or a Monte Carlo estimate), per (model, dataset) the per-document table,
# the D_pre vs D_post statistics and the figures, and one table across models. The documents
# are MSR's curated D_pre / D_post tables (rule msr_curate) and the shared corpus.

import copyprobe.extraction.paths as extraction_paths

from copyprobe.extraction.inputs import ExtractionInputs
from copyprobe.extraction.study import all_membership as extraction_all_membership
from copyprobe.extraction.study import all_stats as extraction_all_stats

extraction_inputs = ExtractionInputs(config)


# One job per (model, source, shard), reserving cores and resources as a generation job does:
# its scores (and Monte Carlo samples) are cached per window, so a killed job resumes. The
# documents go to shard hash(doc_id) mod extraction.shards; the shards are then merged.
rule extraction_score:
    input:
        corpus=paths.CORPUS,
        curated=extraction_inputs.curated,
        model=paths.MODEL_MANIFEST,
        library=library("extraction_score", shared.model_registry_parts),
    output:
        extraction_paths.WINDOWS_SHARD,
    log:
        "logs/extraction_score/{model}/{source}/{shard}.log",
    benchmark:
        "logs/benchmarks/extraction_score/{model}/{source}/{shard}.tsv"
    conda:
        shared.generate_env
    threads: shared.generate_threads
    resources:
        mem_mb=4000,
        runtime=shared.generation_runtime,
        llm_api=shared.api_slots,
        gpu=shared.generation_gpus,
    params:
        model=extraction_inputs.model_params,
        extraction=extraction_inputs.score_params,
    script:
        "../workflow_scripts/extraction_score.py"


rule extraction_merge:
    input:
        shards=extraction_inputs.window_shards,
        library=library("extraction_merge"),
    output:
        extraction_paths.WINDOWS,
    log:
        "logs/extraction_merge/{model}/{source}.log",
    conda:
        "../envs/library.yaml"
    script:
        "../workflow_scripts/extraction_merge.py"


rule extraction_documents:
    input:
        windows=extraction_inputs.dataset_windows,
        library=library("extraction_documents"),
    output:
        extraction_paths.DOCUMENTS,
    log:
        "logs/extraction_documents/{model}/{dataset}.log",
    conda:
        "../envs/library.yaml"
    params:
        analysis=extraction_inputs.analysis_params,
    script:
        "../workflow_scripts/extraction_documents.py"


rule extraction_stats:
    input:
        documents=extraction_paths.DOCUMENTS,
        windows=extraction_inputs.dataset_windows,
        corpora=extraction_inputs.dataset_corpora,
        library=library("extraction_stats"),
    output:
        extraction_paths.STATS,
    log:
        "logs/extraction_stats/{model}/{dataset}.log",
    conda:
        "../envs/library.yaml"
    params:
        analysis=extraction_inputs.analysis_params,
    script:
        "../workflow_scripts/extraction_stats.py"


# The standard membership scores of a (model, dataset)'s documents, one teacher-forced pass
# per document through the call cache, and D_pre vs D_post on them (statistics.membership_scores);
# this table's rule and MSR's msr_make_table read them.
rule membership_sets:
    input:
        corpora=extraction_inputs.dataset_corpora,
        curated=extraction_inputs.dataset_curated,
        model=paths.MODEL_MANIFEST,
        library=library("membership_sets", shared.model_registry_parts),
    output:
        scores=paths.MEMBERSHIP_SCORES,
        stats=paths.MEMBERSHIP_SETS,
    log:
        "logs/membership_sets/{model}/{dataset}.log",
    conda:
        shared.generate_env
    threads: shared.generate_threads
    resources:
        mem_mb=4000,
        runtime=shared.generation_runtime,
        llm_api=shared.api_slots,
        gpu=shared.generation_gpus,
    params:
        membership=extraction_inputs.membership_params,
    script:
        "../workflow_scripts/membership_sets.py"


rule extraction_figures:
    input:
        windows=extraction_inputs.dataset_windows,
        library=library("extraction_figures"),
    output:
        log_pz=report(
            extraction_paths.FIGURE_LOG_PZ,
            caption="../report/extraction_log_pz.rst",
            category="Extraction figures",
            subcategory="log p_z per split",
            labels={"model": "{model}", "dataset": "{dataset}"},
        ),
        np_curves=report(
            extraction_paths.FIGURE_NP_CURVES,
            caption="../report/extraction_np_curves.rst",
            category="Extraction figures",
            subcategory="(n,p) curves",
            labels={"model": "{model}", "dataset": "{dataset}"},
        ),
        map=report(
            extraction_paths.FIGURE_MAP,
            caption="../report/extraction_map.rst",
            category="Extraction figures",
            subcategory="extraction maps",
            labels={"model": "{model}", "dataset": "{dataset}"},
        ),
    log:
        "logs/extraction_figures/{model}/{dataset}.log",
    conda:
        "../envs/report.yaml"
    params:
        figure=extraction_inputs.figure_params,
    script:
        "../workflow_scripts/extraction_figures.py"


rule extraction_table:
    input:
        stats=extraction_all_stats(config),
        membership=extraction_all_membership(config),
        library=library("extraction_table"),
    output:
        csv=extraction_paths.TABLE_CSV,
        md=extraction_paths.TABLE_MD,
    log:
        "logs/extraction_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/extraction_table.py"
