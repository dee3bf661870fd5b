"""Rule longform_table: per model, nv-recall over its documents with a bootstrap interval
(copyprobe.longform.tables.per_model), as CSV and Markdown."""

import pandas as pd

from copyprobe.artifacts import read_table
from copyprobe.copyright.analysis import to_markdown
from copyprobe.longform.tables import DOCUMENTS, per_model
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
stats = snakemake.params.statistics
docs = [read_table(p, DOCUMENTS) for p in snakemake.input.documents]
rows = pd.concat(docs, ignore_index=True).to_dict("records") if docs else []
table = per_model(rows, n_boot=stats["n_boot"], seed=stats["seed"]) if rows else pd.DataFrame()
table.to_csv(snakemake.output.csv, index=False)
caption = (f"Per model, nv-recall (the share of a document written out near-verbatim, "
           f"docs/longform.md) over its documents: mean with its bootstrap interval "
           f"({stats['n_boot']} resamples), median, largest; documents whose every request "
           f"failed are counted but not measured.")
with open(snakemake.output.md, "w", encoding="utf-8") as f:
    f.write(to_markdown(table, caption))
log.info("%d models", len(table))
