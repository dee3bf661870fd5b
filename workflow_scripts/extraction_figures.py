"""Rule extraction_figures: log p_z per split, the (n,p) curves and the extraction map of one
(model, dataset), the map's axis in the windows' unit (copyprobe.extraction.figures)."""

from copyprobe.extraction.figures import plot_study_figures
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
f = dict(snakemake.params.figure)
figs = plot_study_figures(snakemake.input.windows, dict(snakemake.output.items()),
                          f, title=f"{f['model']} on {f['dataset']}")
log.info("extraction map: x axis %r", figs["map"].axes[-1].get_xlabel())
