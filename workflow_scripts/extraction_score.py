"""Rule extraction_score: every window of one model's curated documents of one source (those
of the job's shard), scored exactly or estimated by Monte Carlo, through the call cache
(copyprobe.extraction)."""

import json
import sys
from pathlib import Path

from copyprobe.artifacts import CORPUS, CURATED, provenance, read_table, write_table
from copyprobe.extraction.engine import score_with_model, window_unit
from copyprobe.extraction.window_scoring import failure_report, read_documents, shard_documents
from copyprobe.extraction.tables import WINDOWS
from copyprobe.generation.base import backend_facts
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.model)
settings = dict(snakemake.params.extraction)
if not backend_facts(spec["backend"])["remote"]:
    spec["n_threads"] = snakemake.threads
manifest = json.loads(Path(snakemake.input.model).read_text())
docs = read_documents(read_table(snakemake.input.corpus, CORPUS),
                      read_table(snakemake.input.curated, CURATED))
docs = shard_documents(docs, snakemake.wildcards.shard)
df = score_with_model(docs, spec, manifest, settings)
status = df["status"].value_counts().to_dict()
unit = window_unit(spec, settings["method"])  # tokens, or words where the server has none
write_table(df, snakemake.output[0], WINDOWS,
            provenance("extraction_score", settings, status=status, unit=unit,
                       shard=snakemake.wildcards.shard))
log.info("%d documents, windows (lengths in %s): %s", len(docs), unit, status)
for row in df[df["status"] == "skipped"].itertuples():
    log.info("skipped %s: %s", row.doc_id, row.error)
for cls, n in df.loc[df["status"] == "failed", "error_class"].value_counts().items():
    log.warning("failed %d window(s): %s", n, cls)
report = failure_report(df, spec.get("requests", {}).get("max_failure_share", 0.05))
if report is not None:
    # as rule generate: logged to the job's log (--show-failed-logs prints it), then a plain
    # exit status; the scores received are cached, so a rerun asks only for the others
    log.error(report)
    sys.exit(1)
