"""Rule longform_table: per model, nv-recall over its documents with a bootstrap interval
(copyprobe.longform.tables.per_model), and beside the exact p_z map where the extraction study
scored the same documents (copyprobe.longform.compare), as CSV and Markdown, with the
per-document rows behind that comparison (rule longform_figure draws them)."""

import pandas as pd

from copyprobe.artifacts import read_table, write_text
from copyprobe.copyright.analysis import to_markdown
from copyprobe.longform import compare
from copyprobe.longform.tables import DOCUMENTS, per_model
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
stats = snakemake.params.statistics
docs = [read_table(p, DOCUMENTS) for p in snakemake.input.documents]
rows = pd.concat(docs, ignore_index=True).to_dict("records") if docs else []
table = per_model(rows, n_boot=stats["n_boot"], seed=stats["seed"]) if rows else pd.DataFrame()
table.to_csv(snakemake.output.csv, index=False)
caption = (f"Per model, nv-recall (the share of a document written out near-verbatim, in "
           f"percent; docs/longform.md) over its documents: mean with its bootstrap interval "
           f"({stats['n_boot']} resamples), median, largest; documents whose every request "
           f"failed are counted but not measured.")
write_text(snakemake.output.md, to_markdown(table, caption))
log.info("%d models", len(table))

threshold = snakemake.params.pz_threshold
both = compare.from_files(pd.DataFrame(rows, columns=DOCUMENTS.columns),
                          list(snakemake.input.blocks), list(snakemake.input.windows),
                          snakemake.params.compared, threshold, snakemake.params.max_windows)
both.to_csv(snakemake.output.agreement_documents, index=False)
agreement = compare.per_model(both)
agreement.to_csv(snakemake.output.agreement_csv, index=False)
caption = (f"Per model that the extraction study scored on the same documents: the long-form "
           f"blocks' book words that lie in windows with exact p_z >= {threshold}, in percent "
           f"(beside the share of all book words in them, the rate by chance), and Spearman's "
           f"rank correlation across documents of nv-recall with mean log p_z per token "
           f"(docs/longform.md).")
write_text(snakemake.output.agreement_md, to_markdown(agreement, caption))
log.info("%d models beside their p_z maps", len(agreement))
