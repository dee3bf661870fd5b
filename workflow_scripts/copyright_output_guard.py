"""Rule copyright_output_guard: an output-guarded model's answers on one benchmark, as the
output check over its source model's generations (no model call), and what each check found."""

from pathlib import Path

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.guard.compare import OUTPUT_CHECKS, apply_output_guard
from copyprobe.guard.pipeline import build_output_guard
from copyprobe.guard.study import output_block
from copyprobe.spans.index import SpanIndex
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params.output
model, source = snakemake.wildcards.model, p["source_model"]
block = dict(output_block(p["guard"]))  # as the guarded model's own check: the same settings
with SpanIndex.open(Path(snakemake.input.index).parent) as index:
    generations, checks = apply_output_guard(
        read_table(snakemake.input.generations, GENERATIONS),
        build_output_guard(block, index), model=model, source_model=source)
meta = provenance("copyright_output_guard", {"output": block, "source_model": source,
                                             "index": snakemake.input.index})
write_table(generations, snakemake.output.generations, GENERATIONS, meta)
write_table(checks, snakemake.output.checks, OUTPUT_CHECKS, meta)
log.info("%s from %s: %s", model, source, checks["output_action"].value_counts().to_dict())
