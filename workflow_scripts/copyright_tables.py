"""Rule copyright_tables: every study model's scores of one benchmark pooled, the paper's
tables (CSV + Markdown) and Figures 6-8, and the rule detector's agreement with the judge."""

from pathlib import Path

import pandas as pd

from copyprobe.artifacts import provenance, read_table, write_json, write_table
from copyprobe.copyright.analysis import write_tables
from copyprobe.copyright.figures import write_figures
from copyprobe.copyright.response_scoring import SCORED_RUN, agreement_report
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
stats = snakemake.params.statistics
scored = pd.concat([read_table(p, SCORED_RUN) for p in snakemake.input.runs],
                   ignore_index=True)
out = snakemake.output
write_table(scored, out.scored, SCORED_RUN,
            provenance("copyright_tables", {"models": sorted(scored["model"].unique())}))
write_tables(scored, Path(out.tables[0]).parent, n_boot=stats["n_boot"], seed=stats["seed"])
write_figures(scored, Path(out.fig6).parent)
write_json(out.agreement, agreement_report(scored))
log.info("%d responses of %d models", len(scored), scored["model"].nunique())
