"""Rule msr_attribution: one (model, variant, dataset)'s generations against the span index:
every span, and per generation its coverage, cross-document spans and post-to-pre leak."""

import pandas as pd

from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
from copyprobe.msr.attribution import MSR_ATTRIBUTION, MSR_SPANS, attribute_run
from copyprobe.spans.workflow import open_index
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
a = dict(snakemake.params.attribution)
inp = snakemake.input
generations = pd.concat([read_table(p, GENERATIONS) for p in inp.generations],
                        ignore_index=True)
prompts = pd.concat([read_table(p, PROMPTS) for p in inp.prompts], ignore_index=True)
curated = pd.concat([read_table(p) for p in inp.curated], ignore_index=True)
index = open_index(inp.index, unit=a["unit"])
digest = index.digest
try:
    spans, summary = attribute_run(generations, prompts, curated, index,
                                   min_words=a["min_words"], max_docs=a["max_docs"],
                                   name=a["index"], dataset=a["dataset"], variant=a["variant"])
finally:
    index.close()
meta = provenance("msr_attribution", a, index_digest=digest)
write_table(spans, snakemake.output.spans, MSR_SPANS, meta)
write_table(summary, snakemake.output.summary, MSR_ATTRIBUTION, meta)
ok = summary[summary["status"] == "ok"]
log.info("%d generations (%d failed): %d spans, %d cross-document, %d post-to-pre leaks; "
         "median find %.1f ms", len(summary), len(summary) - len(ok), len(spans),
         int(spans["cross_doc"].sum()), int(ok["post_to_pre_leak"].fillna(False).sum()),
         1000 * (ok["find_s"].median() if len(ok) else 0.0))
