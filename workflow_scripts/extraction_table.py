"""Rule extraction_table: the extraction study's table across models and datasets (CSV and
Markdown with its notes)."""

import json
from pathlib import Path

from copyprobe.artifacts import write_text
from copyprobe.extraction.tables import extraction_table, table_markdown
from copyprobe.membership.tables import sets_markdown
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
stats = [json.loads(Path(p).read_text()) for p in snakemake.input.stats]
df = extraction_table(stats)
Path(snakemake.output.csv).parent.mkdir(parents=True, exist_ok=True)
df.to_csv(snakemake.output.csv, index=False)
membership = [json.loads(Path(p).read_text()) for p in snakemake.input.membership]
write_text(snakemake.output.md, table_markdown(df) + sets_markdown(membership))
log.info("%d rows", len(df))
