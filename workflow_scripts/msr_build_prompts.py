"""Rule msr_build_prompts: MSR segmentation and prompts for one model and source."""

from copyprobe.artifacts import CORPUS, CURATED, PROMPTS, provenance, read_table, write_table
from copyprobe.msr.prompts import build_prompts
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
msr = dict(snakemake.params.msr)
cut_at = snakemake.params.cut_at
out = build_prompts(read_table(snakemake.input.corpus, CORPUS),
                    read_table(snakemake.input.curated, CURATED),
                    model=snakemake.wildcards.model, msr=msr, cut_at=cut_at)
write_table(out, snakemake.output[0], PROMPTS,
            provenance("msr_build_prompts", {**msr, "cut_at": cut_at}))
log.info("%d prompts ready, %d skipped", (out["status"] == "ready").sum(),
         (out["status"] == "skipped").sum())
for row in out[out["status"] == "skipped"].itertuples():
    log.info("skipped %s: %s", row.doc_id, row.reason)
