"""Rule span_index_prepare_<name>: the engine's step-1 files and docs.parquet of every shard."""

from copyprobe.spans.workflow import prepare
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
p = snakemake.params  # noqa: F821
prepare(list(snakemake.input.corpora), p.out_dir, unit=p.unit, shards=p.shards,  # noqa: F821
        tokenizer=p.tokenizer)
log.info("index %s: %d shard(s) prepared from %s", p.index, p.shards,
         ", ".join(snakemake.input.corpora))  # noqa: F821
