"""Rule copyright_manifest: a benchmark's manifest (one row per material, notice form, task and
query), its rendered pages and its build report."""

from copyprobe.artifacts import CORPUS, provenance, read_table, write_json, write_table
from copyprobe.copyright.benchmark import build_benchmark
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.spec)
corpora = [read_table(p, CORPUS) for p in snakemake.input.corpora]
df, report = build_benchmark(corpora, spec, images_dir=snakemake.params.images_dir,
                             names=spec["materials"])
write_table(df, snakemake.output.manifest, COPYRIGHT_MANIFEST,
            provenance("copyright_manifest", spec))
write_json(snakemake.output.report, report)
log.info("%d rows (%d materials, %d images); rows per form %s", report["rows"],
         report["materials"], report["images"], report["rows_per_form"])
for m in report["materials_without_original_notice"]:
    log.info("no original notice (no text_original/image_original rows): %s", m["material_id"])
