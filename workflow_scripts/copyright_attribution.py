"""Rule copyright_attribution: one model's responses to one benchmark against the benchmark's
span index: the materials each reproduces, its coverage, the table by task and notice form."""

from copyprobe.artifacts import GENERATIONS, SPANS, provenance, read_table, write_table, write_text
from copyprobe.copyright.attribution import (
    COPYRIGHT_ATTRIBUTION,
    attribute_responses,
    table_markdown,
    task_form_table,
)
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.spans.workflow import open_index
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
a = dict(snakemake.params.attribution)
inp = snakemake.input
model = snakemake.wildcards.model
index = open_index(inp.index, unit=a["unit"])
digest = index.digest
try:
    spans, att = attribute_responses(read_table(inp.generations, GENERATIONS),
                                     read_table(inp.manifest, COPYRIGHT_MANIFEST), index,
                                     min_words=a["min_words"], max_docs=a["max_docs"],
                                     name=a["index"], benchmark=a["benchmark"])
finally:
    index.close()
meta = provenance("copyright_attribution", a, index_digest=digest)
write_table(spans, snakemake.output.spans, SPANS, meta)
write_table(att, snakemake.output.summary, COPYRIGHT_ATTRIBUTION, meta)
write_text(snakemake.output.table, table_markdown(
    task_form_table([att]), benchmark=a["benchmark"], model=model,
    min_words=a["min_words"], index=a["index"]))
ok = att[att["status"] == "ok"]
log.info("%d responses (%d failed): %d reproduce a material, %d their own", len(att),
         len(att) - len(ok), int((ok["materials"].map(len) > 0).sum()),
         int(ok["reproduces_own_material"].sum()))
