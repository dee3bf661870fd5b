# Pages for `snakemake --report`: HTML twins of the Markdown tables and of the environment
# table. The report shows images and HTML inline and offers other files (CSV, Markdown,
# Parquet) only as downloads; each twin carries its table's notes and a caption.


rule report_msr_table:
    input:
        tables="results/tables/msr_table.md",
        library=library("report_pages"),
    output:
        report(
            "results/report/msr/msr_table.html",
            caption="../report/msr_table.rst",
            category="MSR tables",
            labels={"table": "results of every model (Table 1)"},
        ),
    log:
        "logs/report_msr_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_sweep_table:
    input:
        tables="results/tables/sweep_{experiment}.md",
        library=library("report_pages"),
    output:
        report(
            "results/report/msr/sweep_{experiment}.html",
            caption="../report/sweep_table.rst",
            category="MSR tables",
            labels={"table": "sweep {experiment} (Table 2)"},
        ),
    log:
        "logs/report_sweep_table/{experiment}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_comparison_table:
    input:
        tables="results/tables/comparisons.md",
        library=library("report_pages"),
    output:
        report(
            "results/report/msr/comparisons.html",
            caption="../report/comparisons.rst",
            category="MSR tables",
            labels={"table": "settings comparisons"},
        ),
    log:
        "logs/report_comparison_table/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_curation:
    input:
        tables="results/curation/{model}.md",
        library=library("report_pages"),
    output:
        report(
            "results/report/curation/{model}.html",
            caption="../report/curation.rst",
            category="Curation",
            labels={"model": "{model}"},
        ),
    log:
        "logs/report_curation/{model}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_copyright_tables:
    input:
        tables=multiext(
            "results/copyright/{benchmark}/tables/",
            "table1.md",
            "by_notice_form.md",
            "by_category.md",
            "table5.md",
            "over_refusal.md",
        ),
        library=library("report_pages"),
    output:
        report(
            "results/report/copyright/{benchmark}/table1.html",
            caption="../report/copyright_table1.rst",
            category="Copyright tables",
            subcategory="{benchmark}",
            labels={"table": "Table 1: similarity and refusal per notice form"},
        ),
        report(
            "results/report/copyright/{benchmark}/by_notice_form.html",
            caption="../report/copyright_by_notice_form.rst",
            category="Copyright tables",
            subcategory="{benchmark}",
            labels={"table": "per notice form and task"},
        ),
        report(
            "results/report/copyright/{benchmark}/by_category.html",
            caption="../report/copyright_by_category.rst",
            category="Copyright tables",
            subcategory="{benchmark}",
            labels={"table": "per material category"},
        ),
        report(
            "results/report/copyright/{benchmark}/table5.html",
            caption="../report/copyright_table5.rst",
            category="Copyright tables",
            subcategory="{benchmark}",
            labels={"table": "Table 5: similarity against refusal"},
        ),
        report(
            "results/report/copyright/{benchmark}/over_refusal.html",
            caption="../report/copyright_over_refusal.rst",
            category="Copyright tables",
            subcategory="{benchmark}",
            labels={"table": "over-refusal of benign requests"},
        ),
    log:
        "logs/report_copyright_tables/{benchmark}.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_guard_tables:
    input:
        tables=multiext(
            "results/copyright/guard/",
            "table2.md",
            "table6.md",
            "ablation.md",
            "latency.md",
        ),
        library=library("report_pages"),
    output:
        report(
            "results/report/copyright/guard/table2.html",
            caption="../report/guard_table2.rst",
            category="Copyright tables",
            subcategory="guard",
            labels={"table": "Table 2: guarded against unguarded"},
        ),
        report(
            "results/report/copyright/guard/table6.html",
            caption="../report/guard_table6.rst",
            category="Copyright tables",
            subcategory="guard",
            labels={"table": "Table 6: guard decisions"},
        ),
        report(
            "results/report/copyright/guard/ablation.html",
            caption="../report/guard_ablation.rst",
            category="Copyright tables",
            subcategory="guard",
            labels={"table": "ablation of the guard's parts"},
        ),
        report(
            "results/report/copyright/guard/latency.html",
            caption="../report/guard_latency.rst",
            category="Copyright tables",
            subcategory="guard",
            labels={"table": "latency the guard adds"},
        ),
    log:
        "logs/report_guard_tables/all.log",
    localrule: True
    conda:
        "../envs/report.yaml"
    script:
        "../workflow_scripts/report_pages.py"


rule report_environment:
    input:
        tables=ENVIRONMENT_TABLE,
        library=library("report_pages"),
    output:
        report(
            "results/report/environment.html",
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
