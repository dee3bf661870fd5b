"""Rule curate: D_pre / D_post for one model and source."""

import datetime as dt

from copyprobe.artifacts import CORPUS, CURATED, provenance, read_table, write_table
from copyprobe.curation import curate
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
p = dict(snakemake.params.curation)  # noqa: F821
corpus = read_table(snakemake.input[0], CORPUS)  # noqa: F821
out = curate(corpus, model=snakemake.wildcards.model,  # noqa: F821
             cutoff=dt.date.fromisoformat(p["cutoff"]), margin_days=p["margin_days"],
             min_words=p["min_words"], max_words=p["max_words"])
write_table(out, snakemake.output[0], CURATED, provenance("curate", p))  # noqa: F821
kept = out[out["kept"]]
log.info("%d documents: %d pre, %d post, %d excluded", len(out), (kept["split"] == "pre").sum(),
         (kept["split"] == "post").sum(), (~out["kept"]).sum())
for reason, n in out.loc[~out["kept"], "reason"].value_counts().items():
    log.info("excluded %d: %s", n, reason)
