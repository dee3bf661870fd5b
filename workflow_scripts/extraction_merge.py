"""Rule extraction_merge: a (model, source)'s scoring shards as one WINDOWS table."""

from copyprobe.artifacts import provenance, read_table, write_table
from copyprobe.extraction.window_scoring import merge_window_shards
from copyprobe.extraction.tables import WINDOWS
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
shards = [read_table(p, WINDOWS) for p in snakemake.input.shards]
df = merge_window_shards(shards)
write_table(df, snakemake.output[0], WINDOWS,
            provenance("extraction_merge", {}, shards=len(shards)))
log.info("%d shard(s), %d rows", len(shards), len(df))
