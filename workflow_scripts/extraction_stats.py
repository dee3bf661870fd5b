"""Rule extraction_stats: D_pre vs D_post on the per-document measures of one (model,
dataset), beside the blind text-only baseline, and the table's summary."""

import pandas as pd

from copyprobe.artifacts import CORPUS, provenance, read_table, write_json
from copyprobe.extraction.stats import dataset_stats
from copyprobe.extraction.tables import WINDOWS, documents_spec
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
a = dict(snakemake.params.analysis)  # noqa: F821
docs = read_table(snakemake.input.documents, documents_spec(a["ns"], a["ps"]))  # noqa: F821
windows = pd.concat([read_table(p, WINDOWS) for p in snakemake.input.windows])  # noqa: F821
corpus = pd.concat([read_table(p, CORPUS) for p in snakemake.input.corpora])  # noqa: F821
result = dataset_stats(docs, windows, corpus, model=snakemake.wildcards.model,  # noqa: F821
                       dataset=snakemake.wildcards.dataset, analysis=a)  # noqa: F821
result["provenance"] = provenance("extraction_stats", a)
write_json(snakemake.output[0], result)  # noqa: F821
for note in result["comparison"].get("notes", []):
    log.info("note: %s", note)
