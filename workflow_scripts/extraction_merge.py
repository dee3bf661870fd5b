"""Rule extraction_merge: a (model, source)'s scoring shards as one WINDOWS table, in their
unit (copyprobe.extraction.score)."""

from copyprobe.extraction.score import merge_window_files
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
df = merge_window_files(snakemake.input.shards, snakemake.output[0])  # noqa: F821
log.info("%d shard(s), %d rows", len(snakemake.input.shards), len(df))  # noqa: F821
