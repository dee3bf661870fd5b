"""Rule copyright_score_merge: a (benchmark, model)'s scoring shards as the one scored table,
in the manifest's order, with the provenance of one job plus the shard count."""

from copyprobe.artifacts import provenance, read_meta, read_table, write_table
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.response_scoring import (
    SCORED_RUN,
    merge_metrics_used,
    merge_scored,
    metric_settings,
)
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
paths = list(snakemake.input.shards)
df = merge_scored(read_table(snakemake.input.manifest, COPYRIGHT_MANIFEST),
                  [read_table(p, SCORED_RUN) for p in paths], names=paths)
used = merge_metrics_used([read_meta(p).get("metrics_used", {}) for p in paths], paths)
write_table(df, snakemake.output[0], SCORED_RUN,
            provenance("copyright_score", metric_settings(snakemake.params.metrics),
                       metrics_used=used, shards=len(paths)))
log.info("%d shard(s), %d responses, %d failed, %d judged", len(paths), len(df),
         (df["status"] != "ok").sum(), df["refused"].notna().sum())
