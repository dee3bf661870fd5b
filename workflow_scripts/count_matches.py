"""Rule count_matches: paper-mode and word-mode matches for one model and source."""

from copyprobe.artifacts import GENERATIONS, MATCHES, PROMPTS, provenance, read_table, write_table
from copyprobe.msr.scoring import score
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
m = dict(snakemake.params.matching)  # noqa: F821
out = score(read_table(snakemake.input.prompts, PROMPTS),  # noqa: F821
            read_table(snakemake.input.generations, GENERATIONS),  # noqa: F821
            k_min=m["k_min"], k_max=m["k_max"])
write_table(out, snakemake.output[0], MATCHES, provenance("count_matches", m))  # noqa: F821
ok = out[out["status"] == "ok"]
log.info("%d generations scored, %d failed; longest word match: max %s, median %s", len(ok),
         (out["status"] != "ok").sum(), ok["word_longest"].max(), ok["word_longest"].median())
