"""Rule extraction_figures: log p_z per split, the (n,p) curves and the extraction map of one
(model, dataset)."""

import pandas as pd

from copyprobe.artifacts import read_table
from copyprobe.extraction.figures import plot_extraction_map, plot_log_pz, plot_np_curves
from copyprobe.extraction.tables import WINDOWS
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
f = dict(snakemake.params.figure)
windows = pd.concat([read_table(p, WINDOWS) for p in snakemake.input.windows])
title = f"{f['model']} on {f['dataset']}"
plot_log_pz(windows, snakemake.output.log_pz, title=title)
plot_np_curves(windows, snakemake.output.np_curves, ns=f["ns"], ps=f["ps"],
               title=title)
plot_extraction_map(windows, snakemake.output.map, title=title,
                    threshold=(f["headline"]["n"], f["headline"]["p"]))
