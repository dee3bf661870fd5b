"""Rule collect_corpus: run one source and write its corpus, skipped and manifest tables."""

from copyprobe.sources import SourceError
from copyprobe.sources.collect import collect, write_result
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
source = snakemake.wildcards.source
spec = dict(snakemake.params.spec)
try:
    result = collect(source, spec, snakemake.params.cutoffs)
except SourceError as exc:  # unusable input or server: the message names the file, row or URL
    log.error("source %s: %s", source, exc)
    raise SystemExit(1) from None
write_result(result, source, spec, **dict(snakemake.output))
log.info("source %s: %d documents, %d skipped", source, len(result.corpus), len(result.skipped))
for row in result.skipped.itertuples():
    log.info("skipped %s: %s", row.ref, row.reason)
