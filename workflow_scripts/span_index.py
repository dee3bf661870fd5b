"""Rule span_index: the index's manifest, written once every shard validates."""

from copyprobe.spans.workflow import finalize
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params
finalize(p.out_dir, unit=p.unit, tokenizer=p.tokenizer)
log.info("index %s: manifest %s", p.out_dir, snakemake.output[0])
