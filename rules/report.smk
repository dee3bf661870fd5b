# Pages for `snakemake --report`: the HTML twin of every Markdown table and of the environment
# table, one job per page. The report shows images and HTML inline and offers other files (CSV,
# Markdown, Parquet) only as downloads; each twin carries its table's notes.
# Which pages there are, and for each its table, caption section, category, subcategory and
# labels, the studies declare (Study.report_pages); the input functions look the page up.
# The one caption template, report/report_page.rst, dispatches on the page's caption section
# (params.page), which Snakemake's report renders with the job's params and config.


rule report_page:
    input:
        table=shared.report_table,
        library=library("report_pages"),
    output:
        report(
            paths.REPORT_PAGE,
            caption="../report/report_page.rst",
            category=shared.report_category,
            subcategory=shared.report_subcategory,
            labels=shared.report_labels,
        ),
    log:
        "logs/report_page/{page}.log",
    wildcard_constraints:
        page=shared.report_page_names(),
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        page=shared.report_caption_params,
    script:
        "../workflow_scripts/report_pages.py"
