"""Rule msr_attribution_table: results/tables/msr_attribution.{csv,md} over every run."""

from copyprobe.artifacts import read_table, write_text
from copyprobe.msr.attribution import (
    MSR_ATTRIBUTION,
    MSR_SPANS,
    attribution_table,
    table_markdown,
)
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
a = snakemake.params.attribution
table = attribution_table([read_table(p, MSR_ATTRIBUTION) for p in snakemake.input.summaries],
                          [read_table(p, MSR_SPANS) for p in snakemake.input.spans])
write_text(snakemake.output.csv, table.to_csv(index=False))
write_text(snakemake.output.md, table_markdown(
    table, min_words=a["min_words"], max_docs=a["max_docs"], index=a["index"]))
log.info("%d rows, %d post-to-pre leaks", len(table), int(table["post_to_pre_leaks"].sum()))
