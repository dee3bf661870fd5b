"""Rule extraction_documents: per document of one (model, dataset), the windows' (n,p)
verdicts summarised (fractions, longest runs, largest p_z) with its split."""

import pandas as pd

from copyprobe.artifacts import provenance, read_table, write_table
from copyprobe.extraction.tables import WINDOWS, documents_spec, documents_table
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
a = dict(snakemake.params.analysis)
windows = pd.concat([read_table(p, WINDOWS) for p in snakemake.input.windows])
docs = documents_table(windows, model=snakemake.wildcards.model,
                       dataset=snakemake.wildcards.dataset, ns=a["ns"], ps=a["ps"])
write_table(docs, snakemake.output[0], documents_spec(a["ns"], a["ps"]),
            provenance("extraction_documents", a))
log.info("%d documents: %s", len(docs), docs["split"].value_counts().to_dict())
