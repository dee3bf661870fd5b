"""Rule make_comparison_table: one row per settings comparison (model, experiment)."""

import json
from pathlib import Path

from copyprobe.artifacts import write_text
from copyprobe.msr.tables import comparison_rows
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
comparisons = [json.loads(Path(p).read_text()) for p in snakemake.input.comparisons]  # noqa: F821
df = comparison_rows(comparisons)
df.insert(0, "model", [c["model_a"] for c in comparisons])
df.insert(0, "experiment", [c["experiment"] for c in comparisons])
write_text(snakemake.output.csv, df.to_csv(index=False))  # noqa: F821
notes = sorted({c["paper"]["direction"] for c in comparisons})
md = df.drop(columns=["direction"]).to_markdown(index=False)
write_text(snakemake.output.md, md + "\n\nDirection: " + "; ".join(notes) + "\n")  # noqa: F821
log.info("%d comparisons", len(df))
