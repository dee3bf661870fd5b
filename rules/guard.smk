# The guard (CopyGuard) in the copyright study: the decision sidecar of each guarded model's
# generations, and the tables that set guarded models beside their bases (Table 2, Table 6, the
# ablation, the latency of each check) under results/copyright/guard/.

import copyprobe.guard.paths as guard_paths
import copyprobe.copyright.paths as copyright_paths

from copyprobe.guard.inputs import GuardInputs

guard_inputs = GuardInputs(config)


# A guarded model's generate jobs on a benchmark write the guard's decisions beside their shard
# (output `guard`: the jobs that call the guard make them), merged per benchmark.
if guard_inputs.generated_models:

    use rule generate as copyright_guarded_generate with:
        output:
            paths.GENERATION_SHARD,
            guard=guard_paths.DECISIONS_SHARD,
        wildcard_constraints:
            model=one_of(guard_inputs.generated_models),
            source=r"copyright\.[A-Za-z0-9][A-Za-z0-9_.-]*",

    ruleorder: copyright_guarded_generate > generate

    if set(guard_inputs.generated_models) & set(cpc.head_node_models(config)):

        use rule copyright_guarded_generate as copyright_guarded_generate_on_head with:
            wildcard_constraints:
                model=one_of(
                    set(guard_inputs.generated_models)
                    & set(cpc.head_node_models(config))
                ),
                source=r"copyright\.[A-Za-z0-9][A-Za-z0-9_.-]*",
            localrule: True

        ruleorder: copyright_guarded_generate_on_head > copyright_guarded_generate > generate_on_head


# The merge of a guarded model's decision shards (none without a guarded model that a
# generate job runs).
rule copyright_guard_decisions:
    input:
        shards=guard_inputs.decision_shards(shared),
        library=library("copyright_guard_decisions", NO_MODEL),
    output:
        guard_paths.DECISIONS,
    log:
        "logs/copyright_guard_decisions/{benchmark}/{model}.log",
    wildcard_constraints:
        model=one_of(guard_inputs.generated_models),
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        model=guard_inputs.model_main,
    script:
        "../workflow_scripts/copyright_guard_decisions.py"


rule copyright_guard_tables:
    input:
        scored=guard_inputs.all_scored,
        decisions=guard_inputs.all_decisions,
        library=library("copyright_guard_tables", NO_MODEL),
    output:
        multiext(
            guard_paths.TABLES,
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
        guard=guard_inputs.tables_params,
        statistics=config["statistics"],
    script:
        "../workflow_scripts/copyright_guard_tables.py"


# Guards compared (copyprobe.guard.compare): the output-guarded models (an output block) call no
# model; their generations are the output check run over their source's generations (the base,
# or the same guard without the output block), then judged and scored like any model's.
if guard_inputs.output_models:

    rule copyright_output_guard:
        input:
            generations=guard_inputs.output_source_generations,
            index=guard_inputs.output_index,
            library=library("copyright_output_guard", NO_MODEL),
        output:
            generations=copyright_paths.GENERATIONS,
            checks=guard_paths.OUTPUT_CHECKS,
        log:
            "logs/copyright_output_guard/{benchmark}/{model}.log",
        wildcard_constraints:
            model=one_of(guard_inputs.output_models),
        conda:
            "../envs/library.yaml"
        resources:
            mem_mb=4000,
        params:
            output=guard_inputs.output_params,
        script:
            "../workflow_scripts/copyright_output_guard.py"

    ruleorder: copyright_output_guard > merge_generations

    # An output-guarded model's decisions: no generate job ran its requests, so this rule
    # decides them (the input side; the output check's findings are its checks table).
    rule copyright_output_guard_decisions:
        input:
            prompts=guard_paths.PROMPTS,
            generations=copyright_paths.GENERATIONS,
            library=library(
                "copyright_output_guard_decisions", shared.model_registry_parts
            ),
        output:
            guard_paths.DECISIONS,
        log:
            "logs/copyright_output_guard_decisions/{benchmark}/{model}.log",
        wildcard_constraints:
            model=one_of(guard_inputs.output_models),
        localrule: True
        conda:
            "../envs/library.yaml"
        params:
            model=guard_inputs.model_main,
        script:
            "../workflow_scripts/copyright_output_guard_decisions.py"

    rule copyright_guards_compared:
        input:
            unpack(guard_inputs.compared),
            library=library("copyright_guards_compared", NO_MODEL),
        output:
            multiext(guard_paths.COMPARED, "csv", "md", "png"),
        log:
            "logs/copyright_guards_compared/all.log",
        localrule: True
        conda:
            "../envs/report.yaml"
        params:
            compared=guard_inputs.compared_params,
            statistics=config["statistics"],
        script:
            "../workflow_scripts/copyright_guards_compared.py"
