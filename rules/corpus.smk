# Shared: documents from sources, and model files.


rule collect_corpus:
    input:
        shared.source_files,
        library=library("collect_corpus", shared.source_registry_parts),
    output:
        corpus=paths.CORPUS,
        skipped=paths.CORPUS_SKIPPED,
        manifest=paths.CORPUS_MANIFEST,
    log:
        "logs/collect_corpus/{source}.log",
    localrule: True
    conda:
        shared.corpus_env
    params:
        spec=shared.source_params,
        cutoffs=shared.source_cutoffs,
    script:
        "../workflow_scripts/collect_corpus.py"


rule prepare_model:
    input:
        shared.model_file_inputs,
        library=library("prepare_model"),
    output:
        paths.MODEL_MANIFEST,
    log:
        "logs/prepare_model/{model}.log",
    localrule: True
    conda:
        "../envs/generation-cpu.yaml"
    params:
        model_file=shared.model_file_spec,
        cache_dir=config["cache_dir"],
    script:
        "../workflow_scripts/prepare_model.py"
