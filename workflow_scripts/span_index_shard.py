"""Rule span_index_shard: one shard's suffix array, reused from the store when its documents
are unchanged."""

from copyprobe.spans.workflow import build_shard_stored
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params
how = build_shard_stored(p.shard_dir, p.build["store"], cpus=snakemake.threads,
                         mem_gb=p.build["mem_gb"], builder=p.build["builder"])
log.info("shard %s: %s", p.shard_dir, how)
