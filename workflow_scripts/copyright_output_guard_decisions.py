"""Rule copyright_output_guard_decisions: what the guard decides on each of an output-guarded
model's requests on one benchmark (no generate job ran them: its answers are the output check's
over its source's)."""

from copyprobe.artifacts import PROMPTS, provenance, read_table, write_table
from copyprobe.guard.backend import GUARD_DECISIONS, guard_decisions
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.model)
df = guard_decisions(read_table(snakemake.input.prompts, PROMPTS), spec)
write_table(df, snakemake.output[0], GUARD_DECISIONS,
            provenance("copyright_output_guard_decisions", {"guard": spec["guard"]}))
log.info("%s: %s", spec["name"], df["action"].value_counts().to_dict())
