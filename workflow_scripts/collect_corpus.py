"""Rule collect_corpus: run one source and write its corpus and skipped tables."""

from copyprobe.artifacts import CORPUS, MANIFEST, SKIPPED, provenance, write_table
from copyprobe.sources import SourceError, build_source
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
source = snakemake.wildcards.source  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
try:
    result = build_source(source, spec, snakemake.params.cutoffs).load(source)  # noqa: F821
except SourceError as exc:  # unusable input: the message names the file, row or key
    log.error("source %s: %s", source, exc)
    raise SystemExit(1) from None
meta = provenance("collect_corpus", spec, source=source)
write_table(result.corpus, snakemake.output.corpus, CORPUS, meta)  # noqa: F821
write_table(result.skipped, snakemake.output.skipped, SKIPPED, meta)  # noqa: F821
write_table(result.manifest, snakemake.output.manifest, MANIFEST, meta)  # noqa: F821
log.info("source %s: %d documents, %d skipped", source, len(result.corpus), len(result.skipped))
for row in result.skipped.itertuples():
    log.info("skipped %s: %s", row.ref, row.reason)
