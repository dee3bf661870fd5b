"""Rule longform_table: per model, nv-recall over its documents with a bootstrap interval
(copyprobe.longform.tables.per_model), as CSV and Markdown."""

import pandas as pd

from copyprobe.artifacts import read_table
from copyprobe.copyright.analysis import to_markdown
from copyprobe.longform.tables import DOCUMENTS, per_model
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
stats = snakemake.params.statistics  # noqa: F821
docs = [read_table(p, DOCUMENTS) for p in snakemake.input.documents]  # noqa: F821
rows = pd.concat(docs, ignore_index=True).to_dict("records") if docs else []
table = per_model(rows, n_boot=stats["n_boot"], seed=stats["seed"]) if rows else pd.DataFrame()
table.to_csv(snakemake.output.csv, index=False)  # noqa: F821
caption = (f"Per model, nv-recall (the share of a document written out near-verbatim, "
           f"docs/longform.md) over its documents: mean with its bootstrap interval "
           f"({stats['n_boot']} resamples), median, largest; documents whose every request "
           f"failed are counted but not measured.")
with open(snakemake.output.md, "w", encoding="utf-8") as f:  # noqa: F821
    f.write(to_markdown(table, caption))
log.info("%d models", len(table))
