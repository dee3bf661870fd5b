"""Rule report_page: the HTML twin of a Markdown table (or of the environment table), for
Snakemake's report, which shows HTML inline."""

from pathlib import Path

from copyprobe.artifacts import write_text
from copyprobe.report_pages import environment_page, markdown_page
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
source, target = snakemake.input.table, snakemake.output[0]
kind = Path(source).suffix
if kind == ".md":
    write_text(target, markdown_page(source))
elif kind == ".parquet":
    write_text(target, environment_page(source))
else:
    raise ValueError(f"{source}: no HTML page for a {kind or 'suffix-less'} file")
log.info("%s -> %s", source, target)
