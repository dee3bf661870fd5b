# The copyright-compliance study: each benchmark's manifest and rendered pages, the prompts of
# every model in the study (run through the shared generation rules as the source
# "copyright.<benchmark>", variant "main"), refusal verdicts, task-conditional scores, and the
# paper's tables and figures under results/copyright/<benchmark>/.

import copyprobe.copyright.study as copyright_study


def copyright_benchmark_spec(wildcards):
    return config["copyright"]["benchmarks"][wildcards.benchmark]


def copyright_material_corpora(wildcards):
    """The corpus tables of a benchmark's material sources."""
    return expand(
        "results/corpus/{source}.parquet",
        source=copyright_benchmark_spec(wildcards)["materials"],
    )


def copyright_images_dir(wildcards):
    """Rendered pages are content-addressed files kept with the caches: a benchmark rebuilt
    after a change draws only the pages it has not drawn before."""
    return str(Path(config["cache_dir"]) / "copyright" / "images")


def copyright_judge_params(wildcards):
    """The judge's model entry (None: rule detector only), where its calls are cached, and the
    words of a response it sees."""
    c = config["copyright"]
    return {
        "judge": c["judge"],
        "cache_dir": config["cache_dir"],
        "max_words": c["judge_max_words"],
    }


def copyright_judge_threads(wildcards):
    judge = config["copyright"]["judge"]
    return 1 if judge is None else job_threads(judge)


def copyright_judge_api_slots(wildcards):
    judge = config["copyright"]["judge"]
    return 1 if judge is not None and backend_facts(judge["backend"])["remote"] else 0


def copyright_judge_gpus(wildcards):
    """A GPU for a judge on an hf or vllm backend (SLURM asks for it; locally it is a count)."""
    judge = config["copyright"]["judge"]
    return 1 if judge is not None and backend_facts(judge["backend"])["gpu"] else 0


def copyright_metrics_params(wildcards):
    return config["copyright"]["metrics"]


def copyright_scored_tables(wildcards):
    """Every study model's scored table of one benchmark."""
    return expand(
        "results/copyright/{benchmark}/scored/{model}.parquet",
        benchmark=wildcards.benchmark,
        model=copyright_study.copyright_models(config),
    )


def copyright_all_scored(wildcards):
    """Every benchmark's pooled scored table (the guard's tables span benchmarks)."""
    return expand(
        "results/copyright/{benchmark}/scored.parquet",
        benchmark=config["copyright"]["benchmarks"],
    )


def copyright_model_main(wildcards):
    """A copyright model's slice (its variant main: the study runs no variants)."""
    return cpc.run_slice(config, wildcards.model, cpc.MAIN)


def judge_pattern(on_head):
    """The {benchmark} values of copyright_judge (on_head False) or of copyright_judge_on_head
    (True): all or none, as the judge runs on the head node or not."""
    return NAME if copyright_study.judge_on_head_node(config) == on_head else NEVER



def judge_registry_parts(wildcards):
    """The backends of the copyright judge (none without one)."""
    return model_parts(config["copyright"]["judge"])



def copyright_judge_env(wildcards):
    """The judge's backend's generation environment; without a judge (rule detector only)
    the library's."""
    judge = config["copyright"]["judge"]
    return "../envs/library.yaml" if judge is None else backend_env(judge["backend"])


rule copyright_manifest:
    input:
        corpora=copyright_material_corpora,
        library=library("copyright_manifest"),
    output:
        manifest="results/copyright/{benchmark}/manifest.parquet",
        report="results/copyright/{benchmark}/manifest.report.json",
    log:
        "logs/copyright_manifest/{benchmark}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        spec=copyright_benchmark_spec,
        images_dir=copyright_images_dir,
    script:
        "../workflow_scripts/copyright_manifest.py"


checkpoint copyright_prompts:
    input:
        "results/copyright/{benchmark}/manifest.parquet",
        library=library("copyright_prompts"),
    output:
        "results/prompts/{model}/{variant}/copyright.{benchmark}.parquet",
    log:
        "logs/copyright_prompts/{model}/{variant}/{benchmark}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    script:
        "../workflow_scripts/copyright_prompts.py"


rule copyright_judge:
    input:
        "results/generations/{model}/main/copyright.{benchmark}.parquet",
        library=library("copyright_judge", judge_registry_parts),
    output:
        "results/copyright/{benchmark}/verdicts/{model}.parquet",
    log:
        "logs/copyright_judge/{benchmark}/{model}.log",
    wildcard_constraints:
        # none when the judge runs on the head node (copyright_judge_on_head)
        benchmark=judge_pattern(on_head=False),
    conda:
        copyright_judge_env
    threads: copyright_judge_threads
    resources:
        mem_mb=4000,
        runtime=240,
        llm_api=copyright_judge_api_slots,
        gpu=copyright_judge_gpus,
    params:
        judge=copyright_judge_params,
    script:
        "../workflow_scripts/copyright_judge.py"


# With api_jobs_on_head_node and a remote judge: the judge's jobs as a local rule.
use rule copyright_judge as copyright_judge_on_head with:
    wildcard_constraints:
        benchmark=judge_pattern(on_head=True),
    localrule: True


rule copyright_score:
    input:
        manifest="results/copyright/{benchmark}/manifest.parquet",
        generations="results/generations/{model}/main/copyright.{benchmark}.parquet",
        verdicts="results/copyright/{benchmark}/verdicts/{model}.parquet",
        library=library("copyright_score", NO_MODEL),
    output:
        "results/copyright/{benchmark}/scored/{model}.parquet",
    log:
        "logs/copyright_score/{benchmark}/{model}.log",
    conda:
        "../envs/library.yaml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        metrics=copyright_metrics_params,
    script:
        "../workflow_scripts/copyright_score.py"


rule copyright_tables:
    input:
        runs=copyright_scored_tables,
        library=library("copyright_tables", NO_MODEL),
    output:
        scored="results/copyright/{benchmark}/scored.parquet",
        agreement="results/copyright/{benchmark}/refusal_agreement.json",
        tables=multiext(
            "results/copyright/{benchmark}/tables/",
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
            "results/copyright/{benchmark}/figures/fig6.png",
            caption="../report/copyright_fig6.rst",
            category="Copyright figures",
            subcategory="{benchmark}",
            labels={"figure": "Figure 6"},
        ),
        fig7=report(
            "results/copyright/{benchmark}/figures/fig7.png",
            caption="../report/copyright_fig7.rst",
            category="Copyright figures",
            subcategory="{benchmark}",
            labels={"figure": "Figure 7"},
        ),
        fig8=report(
            "results/copyright/{benchmark}/figures/fig8.png",
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
