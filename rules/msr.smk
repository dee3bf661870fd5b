checkpoint build_prompts:
    input:
        corpus="results/corpus/{source}.parquet",
        curated="results/curated/{model}/{source}.parquet",
    output:
        "results/prompts/{model}/{source}.parquet",
    log:
        "logs/build_prompts/{model}/{source}.log",
    params:
        msr=msr_params,
        cut_at=cut_at,
    script:
        "../workflow_scripts/build_prompts.py"


rule generate:
    input:
        prompts="results/prompts/{model}/{source}.parquet",
        model="results/models/{model}.json",
    output:
        "results/generations/{model}/{source}/shards/{shard}.parquet",
    log:
        "logs/generate/{model}/{source}/{shard}.log",
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


rule count_matches:
    input:
        prompts="results/prompts/{model}/{source}.parquet",
        generations="results/generations/{model}/{source}.parquet",
    output:
        "results/matches/{model}/{source}.parquet",
    log:
        "logs/count_matches/{model}/{source}.log",
    params:
        matching=config["matching"],
    script:
        "../workflow_scripts/count_matches.py"


rule compute_stats:
    input:
        matches=dataset_matches,
        corpora=dataset_corpora,
    output:
        "results/stats/{model}/{dataset}.json",
    log:
        "logs/compute_stats/{model}/{dataset}.log",
    params:
        statistics=config["statistics"],
        matching=config["matching"],
    script:
        "../workflow_scripts/compute_stats.py"
