"""Rule msr_compare_settings: two variants of one model compared with the paper-mode statistics
over their f_k vectors of one split (the MSR paper's temperature ablation)."""

import json
from pathlib import Path

from copyprobe.artifacts import provenance, write_json
from copyprobe.msr.analysis import compare_settings
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
e = dict(snakemake.params.experiment)
a, b = (json.loads(Path(p).read_text()) for p in snakemake.input.stats)
label_a, label_b = e["labels"]
result = compare_settings(a, b, label_a=label_a, label_b=label_b, split=e["split"])
result["experiment"] = e["name"]
result["provenance"] = provenance("msr_compare_settings", e)
write_json(snakemake.output[0], result)
log.info("%s / %s: %s", e["name"], snakemake.wildcards.model,
         result["paper"]["verdict"])
