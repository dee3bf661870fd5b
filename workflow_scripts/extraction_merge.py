"""Rule extraction_merge: a (model, source)'s scoring shards as one WINDOWS table, in their
unit (copyprobe.extraction.window_scoring)."""

from copyprobe.extraction.window_scoring import merge_window_files
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
df = merge_window_files(snakemake.input.shards, snakemake.output[0])
log.info("%d shard(s), %d rows", len(snakemake.input.shards), len(df))
