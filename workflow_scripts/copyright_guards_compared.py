"""Rule copyright_guards_compared: no guard, reminder only, input guard, output guard and both
on each benchmark and base, one table and one figure (copyprobe.guard.compare)."""

from pathlib import Path

from copyprobe.guard.compare import guards_compared, read_compared_inputs, write_guards_compared
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params.compared
stats = snakemake.params.statistics
inp = snakemake.input
scored, decisions, checks = read_compared_inputs(
    inp.scored, inp.generations, inp.decisions, inp.output_checks, p["rights"])
df = guards_compared(scored, p["rows"], decisions=decisions, output_checks=checks,
                     sources=p["sources"], n_boot=stats["n_boot"], seed=stats["seed"])
write_guards_compared(df, Path(snakemake.output[0]).parent)
log.info("rows per base: %s", {b: [k for k, _ in r] for b, r in p["rows"].items()})
