"""Rule compute_stats: every statistic for one model (one variant) on one dataset."""

import pandas as pd

from copyprobe.artifacts import CORPUS, MATCHES, provenance, read_table, write_json
from copyprobe.msr.analysis import analyse
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
m, s = dict(snakemake.params.matching), dict(snakemake.params.statistics)  # noqa: F821
settings = dict(snakemake.params.settings)  # noqa: F821
matches = pd.concat([read_table(p, MATCHES) for p in snakemake.input.matches])  # noqa: F821
corpus = pd.concat([read_table(p, CORPUS) for p in snakemake.input.corpora])  # noqa: F821
result = analyse(matches, corpus, model=snakemake.wildcards.model,  # noqa: F821
                 dataset=snakemake.wildcards.dataset, k_min=m["k_min"],  # noqa: F821
                 k_max=m["k_max"], statistics=s, settings=settings)
result["provenance"] = provenance("compute_stats", {**m, **s, "variant": settings["variant"]})
write_json(snakemake.output[0], result)  # noqa: F821
log.info("%s [%s] / %s: paper %s; per-document %s", result["model"], settings["variant"],
         result["dataset"], result["paper"]["verdict"], result["per_document"]["verdict"])
for note in result["notes"]:
    log.info("note: %s", note)
