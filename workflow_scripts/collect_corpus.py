"""Rule collect_corpus: run one source and write its corpus, skipped and manifest tables."""

from copyprobe.sources import SourceError
from copyprobe.sources.collect import collect, write_result
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
source = snakemake.wildcards.source  # noqa: F821
spec = dict(snakemake.params.spec)  # noqa: F821
try:
    result = collect(source, spec, snakemake.params.cutoffs)  # noqa: F821
except SourceError as exc:  # unusable input or server: the message names the file, row or URL
    log.error("source %s: %s", source, exc)
    raise SystemExit(1) from None
write_result(result, source, spec, **dict(snakemake.output))  # noqa: F821
log.info("source %s: %d documents, %d skipped", source, len(result.corpus), len(result.skipped))
for row in result.skipped.itertuples():
    log.info("skipped %s: %s", row.ref, row.reason)
