"""Rule msr_curate: D_pre / D_post for one model and source."""

import datetime as dt

from copyprobe.artifacts import CORPUS, CURATED, provenance, read_table, write_table
from copyprobe.curation import curate
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = dict(snakemake.params.curation)
corpus = read_table(snakemake.input[0], CORPUS)
out = curate(corpus, model=snakemake.wildcards.model,
             cutoff=dt.date.fromisoformat(p["cutoff"]), margin_days=p["margin_days"],
             margin_before_days=p["margin_before_days"], margin_after_days=p["margin_after_days"],
             min_words=p["min_words"], max_words=p["max_words"], dedup=p["dedup"])
write_table(out, snakemake.output[0], CURATED, provenance("msr_curate", p))
if len(out) < len(corpus):
    log.info("%d corpus rows are other models' versions (as_of another cutoff): left out",
             len(corpus) - len(out))
kept = out[out["kept"]]
log.info("%d documents: %d pre, %d post, %d excluded", len(out), (kept["split"] == "pre").sum(),
         (kept["split"] == "post").sum(), (~out["kept"]).sum())
for code, n in out.loc[~out["kept"], "exclusion"].value_counts().items():
    log.info("excluded %d: %s", n, code)
