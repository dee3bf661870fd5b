"""Rule msr_make_comparison_table: one row per settings comparison (model, experiment)."""

import json
from pathlib import Path

from copyprobe.artifacts import write_text
from copyprobe.msr.tables import comparison_rows
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
comparisons = [json.loads(Path(p).read_text()) for p in snakemake.input.comparisons]
df = comparison_rows(comparisons)
df.insert(0, "model", [c["model_a"] for c in comparisons])
df.insert(0, "experiment", [c["experiment"] for c in comparisons])
write_text(snakemake.output.csv, df.to_csv(index=False))
notes = sorted({c["paper"]["direction"] for c in comparisons})
md = df.drop(columns=["direction"]).to_markdown(index=False)
write_text(snakemake.output.md, md + "\n\nDirection: " + "; ".join(notes) + "\n")
log.info("%d comparisons", len(df))
