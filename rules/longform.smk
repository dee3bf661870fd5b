# The long-form study: per (model, source) every document of the source's corpus extracted
# (the probe with Best-of-N attempts, continuation turns, nv-recall), and one table across
# models. Every request is a cached call, so a killed job resumes where it stopped.

import copyprobe.extraction.paths as longform_pz_paths
import copyprobe.longform.paths as longform_paths

from copyprobe.config import model_slice as longform_model_slice
from copyprobe.longform.study import compared as longform_compared
from copyprobe.longform.study import runs as longform_runs


# One job per (model, source), reserving cores and resources as a generation job does.
rule longform_extract:
    input:
        corpus=paths.CORPUS,
        model=paths.MODEL_MANIFEST,
        library=library("longform_extract", shared.model_registry_parts),
    output:
        documents=longform_paths.DOCUMENTS,
        blocks=longform_paths.BLOCKS,
    log:
        "logs/longform_extract/{model}/{source}.log",
    conda:
        shared.generate_env
    threads: shared.generate_threads
    resources:
        mem_mb=4000,
        runtime=shared.generation_runtime,
        llm_api=shared.api_slots,
        gpu=shared.generation_gpus,
    params:
        model=lambda wildcards: longform_model_slice(config, wildcards.model),
        longform=config["longform"],
    script:
        "../workflow_scripts/longform_extract.py"


rule longform_table:
    input:
        documents=[
            longform_paths.DOCUMENTS.format(model=m, source=s)
            for m, s in longform_runs(config)
        ],
        # where the extraction study scored the same documents: its p_z windows, and ours
        blocks=[
            longform_paths.BLOCKS.format(model=m, source=s)
            for m, s in longform_compared(config)
        ],
        windows=[
            longform_pz_paths.WINDOWS.format(model=m, source=s)
            for m, s in longform_compared(config)
        ],
        library=library("longform_table"),
    output:
        csv=longform_paths.TABLE_CSV,
        md=longform_paths.TABLE_MD,
        agreement_csv=longform_paths.AGREEMENT_CSV,
        agreement_md=longform_paths.AGREEMENT_MD,
        agreement_documents=longform_paths.AGREEMENT_DOCUMENTS,
    log:
        "logs/longform_table.log",
    conda:
        "../envs/library.yaml"
    params:
        statistics=config["statistics"],
        pz_threshold=config["longform"]["pz_threshold"],
        max_windows=config["extraction"]["max_windows_per_document"],
        compared=longform_compared(config),
    script:
        "../workflow_scripts/longform_table.py"


# Per model, nv-recall of each document beside its exact p_z map's mean log p_z per token.
rule longform_figure:
    input:
        documents=longform_paths.AGREEMENT_DOCUMENTS,
        library=library("longform_figure"),
    output:
        figure=report(
            longform_paths.FIGURE_VS_PZ,
            caption="../report/longform_vs_pz.rst",
            category="Long-form figures",
            labels={"figure": "nv-recall beside the p_z map"},
        ),
    log:
        "logs/longform_figure.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/longform_figure.py"
