# Pages for `snakemake --report`: the HTML twin of the environment table (each study's rule
# file makes the twins of its own Markdown tables). The report shows images and HTML inline
# and offers other files (CSV, Markdown, Parquet) only as downloads; each twin carries its
# table's notes and a caption.


rule report_environment:
    input:
        tables=paths.ENVIRONMENT,
        library=library("report_pages"),
    output:
        report(
            paths.ENVIRONMENT_PAGE,
            caption="../report/environment.rst",
            category="Reproducibility",
            labels={"table": "versions and hashes"},
        ),
    log:
        "logs/report_environment/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"
