# Shared generation layer: one job per shard of a (model, source)'s prompts, then a merge.
# Any study's prompts table (results/prompts/...) runs through these rules.


rule generate:
    input:
        prompts="results/prompts/{model}/{source}.parquet",
        model="results/models/{model}.json",
    output:
        "results/generations/{model}/{source}/shards/{shard}.parquet",
    log:
        main="logs/generate/{model}/{source}/{shard}.log",
        # the failed requests (Parquet): Snakemake keeps logs of failed jobs
        failures="logs/generate/{model}/{source}/{shard}.failures.parquet",
    benchmark:
        "logs/benchmarks/generate/{model}/{source}/{shard}.tsv"
    params:
        model=model_params,
    threads: generate_threads
    resources:
        mem_mb=4000,
        runtime=240,
        llm_api=api_slots,
    script:
        "../workflow_scripts/generate.py"


rule merge_generations:
    input:
        generation_shards,
    output:
        "results/generations/{model}/{source}.parquet",
    log:
        "logs/merge_generations/{model}/{source}.log",
    script:
        "../workflow_scripts/merge_generations.py"
