"""Rule longform_figure: per model, nv-recall of each document against the extraction study's
mean log p_z per token of it, with the model's Spearman rho (copyprobe.longform.figures)."""

import pandas as pd

from copyprobe.longform.compare import per_model
from copyprobe.longform.figures import plot_vs_pz
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
rows = pd.read_csv(snakemake.input.documents)
legend = plot_vs_pz(rows, per_model(rows), snakemake.output.figure)
log.info("%d documents: %s", len(rows), "; ".join(legend) or "none")
