# Shared generation layer: one job per shard of a (model, variant, source)'s prompts, then a
# merge. Any study's prompts table runs through these rules (each at its study's own path:
# SharedInputs.prompts_owner).


rule generate:
    input:
        prompts=shared.prompts_table,
        model=paths.MODEL_MANIFEST,
        library=library("generate", shared.model_registry_parts),
    output:
        paths.GENERATION_SHARD,
    log:
        main="logs/generate/{model}/{variant}/{source}/{shard}.log",
        # the failed requests (Parquet): Snakemake keeps logs of failed jobs
        failures="logs/generate/{model}/{variant}/{source}/{shard}.failures.parquet",
    benchmark:
        "logs/benchmarks/generate/{model}/{variant}/{source}/{shard}.tsv"
    conda:
        shared.generate_env
    threads: shared.generate_threads
    resources:
        mem_mb=4000,
        runtime=shared.generation_runtime,
        llm_api=shared.api_slots,
        gpu=shared.generation_gpus,
    params:
        model=shared.model_params,
    script:
        "../workflow_scripts/generate.py"


# With api_jobs_on_head_node, the shards of remote-backend models: the same jobs as a local
# rule (a rule is local or not as a whole), which a cluster executor runs on the machine
# Snakemake runs on (still holding llm_api). Both rules make those shards; ruleorder gives
# them to the local one.
if cpc.head_node_models(config):

    use rule generate as generate_on_head with:
        wildcard_constraints:
            model=one_of(cpc.head_node_models(config)),
        localrule: True

    ruleorder: generate_on_head > generate


rule merge_generations:
    input:
        shards=shared.generation_shards,
        library=library("merge_generations", shared.model_registry_parts),
    output:
        paths.GENERATIONS,
    log:
        "logs/merge_generations/{model}/{variant}/{source}.log",
    conda:
        "../envs/library.yaml"
    script:
        "../workflow_scripts/merge_generations.py"
