"""Rule copyright_prompts: one model's prompts table for a benchmark (the generation layer's
input): one chat prompt per manifest row, with the rendered pages as image parts."""

from copyprobe.artifacts import PROMPTS, provenance, read_table, write_table
from copyprobe.copyright.benchmark import manifest_prompts
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
w = snakemake.wildcards
df = manifest_prompts(read_table(snakemake.input[0], COPYRIGHT_MANIFEST),
                      model=w.model, source=f"copyright.{w.benchmark}")
write_table(df, snakemake.output[0], PROMPTS,
            provenance("copyright_prompts", {"benchmark": w.benchmark}))
log.info("%d prompts for %s", len(df), w.model)
