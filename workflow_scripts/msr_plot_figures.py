"""Rule msr_plot_figures: f_k, per-document and HELM figures for one model (variant) and dataset."""

import json
from pathlib import Path

from copyprobe.msr.figures import plot_fk, plot_helm, plot_per_document
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
result = json.loads(Path(snakemake.input.stats).read_text())
plot_fk(result, snakemake.output.fk)
plot_per_document(result, snakemake.output.per_document)
plot_helm(result, snakemake.output.helm)
