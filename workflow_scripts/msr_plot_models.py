"""Rule msr_plot_models: f_k of every model on one dataset (the MSR paper's Figures 1 and 2)."""

import json
from pathlib import Path

from copyprobe.msr.figures import plot_fk_models
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
results = [json.loads(Path(p).read_text()) for p in snakemake.input.stats]
plot_fk_models(results, snakemake.output[0], title=snakemake.params.title)
log.info("%d models: %s", len(results), ", ".join(r["model"] for r in results))
