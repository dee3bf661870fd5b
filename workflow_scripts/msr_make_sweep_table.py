"""Rule msr_make_sweep_table: paper-mode statistics per setting of a sweep, per model (the MSR
paper's Table 2 for the input-length ablation)."""

import json
from pathlib import Path

import pandas as pd

from copyprobe.artifacts import write_text
from copyprobe.msr.tables import sweep_markdown, sweep_table
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
e = dict(snakemake.params.experiment)
results = [json.loads(Path(p).read_text()) for p in snakemake.input.stats]
labels = e["labels"]
# The inputs are model by model, each in the experiment's order of settings.
tables, sections = [], [f"# {e['title']}", ""]
for i in range(0, len(results), len(labels)):
    chunk = results[i:i + len(labels)]
    model = chunk[0]["model"]
    df = sweep_table(dict(zip(labels, chunk, strict=True)), e["parameter"])
    df.insert(0, "model", model)
    df.insert(0, "dataset", e["dataset"])
    tables.append(df)
    sections += [f"## {model}", "", sweep_markdown(df.drop(columns=["dataset", "model"]))]
out = pd.concat(tables, ignore_index=True)
write_text(snakemake.output.csv, out.to_csv(index=False))
write_text(snakemake.output.md, "\n".join(sections))
log.info("%s: %d rows", e["name"], len(out))
