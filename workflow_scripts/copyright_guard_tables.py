"""Rule copyright_guard_tables: guarded and unguarded models side by side over every benchmark:
Table 2 (refusal with and without the guard), Table 6 (over-refusal) and the ablation."""

from pathlib import Path

import pandas as pd

from copyprobe.artifacts import read_table
from copyprobe.copyright.response_scoring import SCORED_RUN
from copyprobe.guard.backend import GUARD_DECISIONS
from copyprobe.guard.evaluation import write_guard_tables
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = snakemake.params.guard
stats = snakemake.params.statistics
frames = []
for path in snakemake.input.scored:
    benchmark = Path(path).parent.name
    frames.append(read_table(path, SCORED_RUN).assign(benchmark=benchmark,
                                                      rights=p["rights"][benchmark]))
scored = pd.concat(frames, ignore_index=True)
decisions = pd.concat([read_table(d, GUARD_DECISIONS)
                       for d in snakemake.input.decisions], ignore_index=True)
write_guard_tables(scored, p["pairs"], p["guards"], Path(snakemake.output[0]).parent,
                   decisions=decisions, n_boot=stats["n_boot"], seed=stats["seed"])
log.info("guarded models and their bases: %s", p["pairs"])
