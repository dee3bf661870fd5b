"""Rule extraction_stats: D_pre vs D_post on the per-document measures of one (model,
dataset), beside the blind text-only baseline, and the table's summary."""

import pandas as pd

from copyprobe.artifacts import CORPUS, provenance, read_table, write_json
from copyprobe.extraction.stats import dataset_stats
from copyprobe.extraction.tables import WINDOWS, documents_spec
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
a = dict(snakemake.params.analysis)
docs = read_table(snakemake.input.documents, documents_spec(a["ns"], a["ps"]))
windows = pd.concat([read_table(p, WINDOWS) for p in snakemake.input.windows])
corpus = pd.concat([read_table(p, CORPUS) for p in snakemake.input.corpora])
result = dataset_stats(docs, windows, corpus, model=snakemake.wildcards.model,
                       dataset=snakemake.wildcards.dataset, analysis=a)
result["provenance"] = provenance("extraction_stats", a)
write_json(snakemake.output[0], result)
for note in result["comparison"].get("notes", []):
    log.info("note: %s", note)
