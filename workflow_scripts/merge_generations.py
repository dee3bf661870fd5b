"""Rule merge_generations: assemble a (model, source)'s shard tables into one table."""

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.generation.shards import merge_shards
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
df = merge_shards([read_table(p, GENERATIONS) for p in snakemake.input.shards])  # noqa: F821
write_table(df, snakemake.output[0], GENERATIONS,  # noqa: F821
            provenance("merge_generations", {"shards": len(snakemake.input.shards)}))  # noqa: F821
log.info("%d shards, %d rows, %d failed", len(snakemake.input.shards), len(df),  # noqa: F821
         (df["status"] != "ok").sum())
