"""Rule msr_compute_stats: every statistic for one model (one variant) on one dataset."""

import pandas as pd

from copyprobe.artifacts import CORPUS, MATCHES, provenance, read_table, write_json
from copyprobe.msr.analysis import analyse
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
m, s = dict(snakemake.params.matching), dict(snakemake.params.statistics)
settings = dict(snakemake.params.settings)
matches = pd.concat([read_table(p, MATCHES) for p in snakemake.input.matches])
corpus = pd.concat([read_table(p, CORPUS) for p in snakemake.input.corpora])
result = analyse(matches, corpus, model=snakemake.wildcards.model,
                 dataset=snakemake.wildcards.dataset, k_min=m["k_min"],
                 k_max=m["k_max"], statistics=s, settings=settings)
result["provenance"] = provenance("msr_compute_stats", {**m, **s, "variant": settings["variant"]})
write_json(snakemake.output[0], result)
log.info("%s [%s] / %s: paper %s; per-document %s", result["model"], settings["variant"],
         result["dataset"], result["paper"]["verdict"], result["per_document"]["verdict"])
for note in result["notes"]:
    log.info("note: %s", note)
