# The copyright-compliance study: each benchmark's manifest and rendered pages, the prompts of
# every model in the study (results/copyright/<benchmark>/prompts/, run through the shared
# generation rules as the source "copyright.<benchmark>", variant "main"), refusal verdicts, task-conditional scores, and the
# paper's tables and figures under results/copyright/<benchmark>/.

import copyprobe.copyright.paths as copyright_paths

from copyprobe.copyright.inputs import CopyrightInputs
from copyprobe.copyright.study import judge_on_head_node

copyright_inputs = CopyrightInputs(config)


wildcard_constraints:
    benchmark=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


rule copyright_manifest:
    input:
        corpora=copyright_inputs.material_corpora,
        released=copyright_inputs.released_images,
        library=library("copyright_manifest"),
    output:
        manifest=copyright_paths.MANIFEST,
        report=copyright_paths.MANIFEST_REPORT,
    log:
        "logs/copyright_manifest/{benchmark}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        spec=copyright_inputs.benchmark_spec,
        images_dir=copyright_inputs.images_dir,
    script:
        "../workflow_scripts/copyright_manifest.py"


checkpoint copyright_prompts:
    input:
        copyright_paths.MANIFEST,
        library=library("copyright_prompts"),
    output:
        copyright_paths.PROMPTS,
    log:
        "logs/copyright_prompts/{model}/{variant}/{benchmark}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    script:
        "../workflow_scripts/copyright_prompts.py"


rule copyright_judge:
    input:
        copyright_paths.GENERATIONS,
        library=library("copyright_judge", copyright_inputs.judge_registry_parts),
    output:
        copyright_paths.VERDICTS,
    log:
        "logs/copyright_judge/{benchmark}/{model}.log",
    conda:
        copyright_inputs.judge_env
    threads: copyright_inputs.judge_threads
    resources:
        mem_mb=4000,
        runtime=240,
        llm_api=copyright_inputs.judge_api_slots,
        gpu=copyright_inputs.judge_gpus,
    params:
        judge=copyright_inputs.judge_params,
    script:
        "../workflow_scripts/copyright_judge.py"


# With api_jobs_on_head_node and a remote judge: the judge's jobs as a local rule (ruleorder
# gives them all to it).
if judge_on_head_node(config):

    use rule copyright_judge as copyright_judge_on_head with:
        localrule: True

    ruleorder: copyright_judge_on_head > copyright_judge


# One job per (benchmark, model), or with copyright.scoring.shards: N one job per shard (the
# rows of every N-th material, in parallel, on SLURM as elsewhere; a GPU when the metrics run
# on CUDA), whose tables a local job merges into the same scored table.
rule copyright_score:
    input:
        manifest=copyright_paths.MANIFEST,
        generations=copyright_paths.GENERATIONS,
        verdicts=copyright_paths.VERDICTS,
        library=library("copyright_score", NO_MODEL),
    output:
        copyright_inputs.score_output,
    log:
        copyright_inputs.score_log,
    conda:
        copyright_inputs.score_env
    threads: 2
    resources:
        mem_mb=4000,
        gpu=copyright_inputs.score_gpus,
    params:
        metrics=copyright_inputs.metrics_params,
    script:
        "../workflow_scripts/copyright_score.py"


if copyright_inputs.score_shards > 1:

    rule copyright_score_merge:
        input:
            manifest=copyright_paths.MANIFEST,
            shards=copyright_inputs.scored_shards,
            library=library("copyright_score_merge", NO_MODEL),
        output:
            copyright_paths.SCORED,
        log:
            "logs/copyright_score_merge/{benchmark}/{model}.log",
        localrule: True
        conda:
            "../envs/library.yaml"
        params:
            metrics=copyright_inputs.metrics_params,
        script:
            "../workflow_scripts/copyright_score_merge.py"


rule copyright_tables:
    input:
        runs=copyright_inputs.scored_tables,
        library=library("copyright_tables", NO_MODEL),
    output:
        scored=copyright_paths.POOLED,
        agreement=copyright_paths.AGREEMENT,
        tables=multiext(
            copyright_paths.TABLES,
            "table1.csv",
            "table1.md",
            "by_notice_form.csv",
            "by_notice_form.md",
            "by_category.csv",
            "by_category.md",
            "table5.csv",
            "table5.md",
            "over_refusal.csv",
            "over_refusal.md",
        ),
        fig6=report(
            copyright_paths.FIG6,
            caption="../report/copyright_fig6.rst",
            category="Copyright figures",
            subcategory="{benchmark}",
            labels={"figure": "Figure 6"},
        ),
        fig7=report(
            copyright_paths.FIG7,
            caption="../report/copyright_fig7.rst",
            category="Copyright figures",
            subcategory="{benchmark}",
            labels={"figure": "Figure 7"},
        ),
        fig8=report(
            copyright_paths.FIG8,
            caption="../report/copyright_fig8.rst",
            category="Copyright figures",
            subcategory="{benchmark}",
            labels={"figure": "Figure 8"},
        ),
    log:
        "logs/copyright_tables/{benchmark}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        statistics=config["statistics"],
    script:
        "../workflow_scripts/copyright_tables.py"


# Attribution (copyright.attribution): which materials each response reproduces verbatim, over
# the benchmark's span index copyright-<benchmark> (rules/spans.smk).
rule copyright_attribution:
    input:
        manifest=copyright_paths.MANIFEST,
        generations=copyright_paths.GENERATIONS,
        index=copyright_inputs.attribution_index,
        library=library("copyright_attribution", NO_MODEL),
    output:
        spans=copyright_paths.ATTRIBUTION_SPANS,
        summary=copyright_paths.ATTRIBUTION_SUMMARY,
        table=copyright_paths.ATTRIBUTION_MD,
    log:
        "logs/copyright_attribution/{benchmark}/{model}.log",
    conda:
        "../envs/library.yaml"
    resources:
        mem_mb=4000,
    params:
        attribution=copyright_inputs.attribution_params,
    script:
        "../workflow_scripts/copyright_attribution.py"
