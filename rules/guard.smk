# The guard (CopyGuard) in the copyright study: the decision sidecar of each guarded model's
# generations, and the tables that set guarded models beside their bases (Table 2, Table 6, the
# ablation, the latency of each check) under results/copyright/guard/.

import copyprobe.guard.study as guard_study


def copyright_all_guard_decisions(wildcards):
    """The decision sidecar of every guarded model of the pairs, on every benchmark."""
    return expand(
        "results/copyright/{benchmark}/guard_decisions/{model}.parquet",
        benchmark=config["copyright"]["benchmarks"],
        model=guard_study.guard_pairs(config),
    )


def copyright_guard_params(wildcards):
    """Guarded models and their bases, their guard blocks, each benchmark's rights status."""
    pairs = guard_study.guard_pairs(config)
    return {
        "pairs": pairs,
        "guards": {m: config["models"][m]["guard"] for m in pairs},
        "rights": {
            b: spec["rights"] for b, spec in config["copyright"]["benchmarks"].items()
        },
    }


rule copyright_guard_decisions:
    input:
        prompts="results/prompts/{model}/main/copyright.{benchmark}.parquet",
        # after the generation, which stored every decision: read back, not checked again
        generations="results/generations/{model}/main/copyright.{benchmark}.parquet",
        library=library("copyright_guard_decisions", model_registry_parts),
    output:
        "results/copyright/{benchmark}/guard_decisions/{model}.parquet",
    log:
        "logs/copyright_guard_decisions/{benchmark}/{model}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        model=copyright_model_main,
    script:
        "../workflow_scripts/copyright_guard_decisions.py"


rule copyright_guard_tables:
    input:
        scored=copyright_all_scored,
        decisions=copyright_all_guard_decisions,
        library=library("copyright_guard_tables", NO_MODEL),
    output:
        multiext(
            "results/copyright/guard/",
            "table2.csv",
            "table2.md",
            "table6.csv",
            "table6.md",
            "ablation.csv",
            "ablation.md",
            "latency.csv",
            "latency.md",
        ),
    log:
        "logs/copyright_guard_tables/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        guard=copyright_guard_params,
        statistics=config["statistics"],
    script:
        "../workflow_scripts/copyright_guard_tables.py"
