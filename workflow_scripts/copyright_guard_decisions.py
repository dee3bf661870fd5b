"""Rule copyright_guard_decisions: a guarded model's decisions on one benchmark, the tables its
generate jobs wrote (one per shard), in the prompts' order."""

import pandas as pd

from copyprobe.artifacts import provenance, read_table, write_table
from copyprobe.guard.backend import GUARD_DECISIONS
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.model)
df = pd.concat([read_table(path, GUARD_DECISIONS) for path in snakemake.input.shards],
               ignore_index=True)
write_table(df, snakemake.output[0], GUARD_DECISIONS,
            provenance("copyright_guard_decisions", {"guard": spec["guard"]}))
log.info("%s: %s", spec["name"], df["action"].value_counts().to_dict())
