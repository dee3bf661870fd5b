"""Rule msr_count_matches: paper-mode and word-mode matches for one model and source."""

from copyprobe.artifacts import GENERATIONS, MATCHES, PROMPTS, provenance, read_table, write_table
from copyprobe.msr.match_scoring import score
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
m = dict(snakemake.params.matching)
out = score(read_table(snakemake.input.prompts, PROMPTS),
            read_table(snakemake.input.generations, GENERATIONS),
            k_min=m["k_min"], k_max=m["k_max"])
write_table(out, snakemake.output[0], MATCHES, provenance("msr_count_matches", m))
ok = out[out["status"] == "ok"]
log.info("%d generations scored, %d failed; longest word match: max %s, median %s", len(ok),
         (out["status"] != "ok").sum(), ok["word_longest"].max(), ok["word_longest"].median())
