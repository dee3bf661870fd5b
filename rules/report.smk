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
