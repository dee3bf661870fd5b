"""Rule extraction_merge: a (model, source)'s scoring shards as one WINDOWS table."""

from copyprobe.artifacts import provenance, read_table, write_table
from copyprobe.extraction.score import merge_window_shards
from copyprobe.extraction.tables import WINDOWS
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
shards = [read_table(p, WINDOWS) for p in snakemake.input.shards]  # noqa: F821
df = merge_window_shards(shards)
write_table(df, snakemake.output[0], WINDOWS,  # noqa: F821
            provenance("extraction_merge", {}, shards=len(shards)))
log.info("%d shard(s), %d rows", len(shards), len(df))
