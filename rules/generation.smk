# Shared generation layer: one job per shard of a (model, variant, source)'s prompts, then a
# merge. Any study's prompts table (results/prompts/...) runs through these rules.


rule generate:
    input:
        prompts="results/prompts/{model}/{variant}/{source}.parquet",
        model="results/models/{model}.json",
        library=library("generate", model_registry_parts),
    output:
        "results/generations/{model}/{variant}/{source}/shards/{shard}.parquet",
    log:
        main="logs/generate/{model}/{variant}/{source}/{shard}.log",
        # the failed requests (Parquet): Snakemake keeps logs of failed jobs
        failures="logs/generate/{model}/{variant}/{source}/{shard}.failures.parquet",
    benchmark:
        "logs/benchmarks/generate/{model}/{variant}/{source}/{shard}.tsv"
    threads: generate_threads
    resources:
        mem_mb=4000,
        runtime=generation_runtime,
        llm_api=api_slots,
        gpu=generation_gpus,
    params:
        model=model_params,
    script:
        "../workflow_scripts/generate.py"


rule merge_generations:
    input:
        shards=generation_shards,
        library=library("merge_generations", model_registry_parts),
    output:
        "results/generations/{model}/{variant}/{source}.parquet",
    log:
        "logs/merge_generations/{model}/{variant}/{source}.log",
    script:
        "../workflow_scripts/merge_generations.py"
