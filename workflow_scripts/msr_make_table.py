"""Rule msr_make_table: the results table (CSV and Markdown) over every model, variant and dataset.

A run of a variant other than "main" is listed as ``model [variant]``."""

import json
from pathlib import Path

from copyprobe.artifacts import write_text
from copyprobe.membership.tables import sets_markdown
from copyprobe.msr.tables import table_rows, to_markdown
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])


def labelled(result: dict) -> dict:
    variant = result.get("settings", {}).get("variant", "main")
    return result if variant == "main" else {**result, "model": f"{result['model']} [{variant}]"}


results = [labelled(json.loads(Path(p).read_text())) for p in snakemake.input.stats]
df = table_rows(results)
write_text(snakemake.output.csv, df.to_csv(index=False))
membership = [json.loads(Path(p).read_text()) for p in snakemake.input.membership]
write_text(snakemake.output.md, to_markdown(df) + sets_markdown(membership))
log.info("table with %d rows", len(df))
