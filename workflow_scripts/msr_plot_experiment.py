"""Rule msr_plot_experiment: f_k of one model's variants in an experiment (the MSR paper's
Figures 3 and 4; a comparison's two settings)."""

import json
from pathlib import Path

from copyprobe.msr.figures import plot_fk_sweep
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
e = dict(snakemake.params.experiment)
model = snakemake.wildcards.model
results = [json.loads(Path(p).read_text()) for p in snakemake.input.stats]
by_label = dict(zip(e["labels"], results, strict=True))
plot_fk_sweep(by_label, snakemake.output[0], title=f"{e['title']}: {model}",
              parameter=e["parameter"])
log.info("%s / %s: %s", e["name"], model, ", ".join(by_label))
