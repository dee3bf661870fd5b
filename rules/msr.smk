# The Many-Shot Regurgitation study: prompts, matches, statistics, figures and the table.


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


rule plot_figures:
    input:
        stats="results/stats/{model}/{dataset}.json",
    output:
        fk=report(
            "results/figures/{model}/{dataset}_fk.png",
            caption="../resources/report/fk.rst",
            category="f_k per model",
        ),
        per_document=report(
            "results/figures/{model}/{dataset}_per_document.png",
            caption="../resources/report/per_document.rst",
            category="per-document longest match",
        ),
    log:
        "logs/plot_figures/{model}/{dataset}.log",
    script:
        "../workflow_scripts/plot_figures.py"


rule make_table:
    input:
        all_stats(),
    output:
        csv="results/tables/msr_table.csv",
        md="results/tables/msr_table.md",
    log:
        "logs/make_table/all.log",
    localrule: True
    script:
        "../workflow_scripts/make_table.py"
