# The guard (CopyGuard) in the copyright study: the decision sidecar of each guarded model's
# generations, and the tables that set guarded models beside their bases (Table 2, Table 6, the
# ablation, the latency of each check) under results/copyright/guard/.

import copyprobe.guard.paths as guard_paths
import copyprobe.copyright.paths as copyright_paths

from copyprobe.guard.inputs import GuardInputs

guard_inputs = GuardInputs(config)


rule copyright_guard_decisions:
    input:
        prompts=guard_paths.PROMPTS,
        # after the generation, which stored every decision: read back, not checked again
        generations=copyright_paths.GENERATIONS,
        library=library("copyright_guard_decisions", shared.model_registry_parts),
    output:
        guard_paths.DECISIONS,
    log:
        "logs/copyright_guard_decisions/{benchmark}/{model}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        model=copyright_inputs.model_main,
    script:
        "../workflow_scripts/copyright_guard_decisions.py"


rule copyright_guard_tables:
    input:
        scored=copyright_inputs.all_scored,
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
