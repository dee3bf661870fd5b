"""Rule span_index_prepare_<name>: the engine's step-1 files and docs.parquet of every shard."""

from copyprobe.spans.workflow import prepare
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params
prepare(list(snakemake.input.corpora), p.out_dir, unit=p.unit, shards=p.shards,
        tokenizer=p.tokenizer)
log.info("index %s: %d shard(s) prepared from %s", p.index, p.shards,
         ", ".join(snakemake.input.corpora))
