"""Rule merge_generations: assemble a (model, source)'s shard tables into one table."""

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.generation.shards import merge_shards
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
df = merge_shards([read_table(p, GENERATIONS) for p in snakemake.input.shards])
write_table(df, snakemake.output[0], GENERATIONS,
            provenance("merge_generations", {"shards": len(snakemake.input.shards)}))
log.info("%d shards, %d rows, %d failed", len(snakemake.input.shards), len(df),
         (df["status"] != "ok").sum())
