"""Rule membership_documents: a ground-truth run's documents (doc_id, text) from its source's
corpus, each cut to the run's words (copyprobe.membership.runs)."""

from copyprobe.artifacts import CORPUS, provenance, read_table, write_table
from copyprobe.membership.runs import DOCUMENTS, run_documents
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
run = dict(snakemake.params.run)
docs = run_documents(read_table(snakemake.input.corpus, CORPUS), run["words"])
write_table(docs, snakemake.output[0], DOCUMENTS,
            provenance("membership_documents", {"source": run["source"], "words": run["words"]}))
log.info("%d documents of source %s", len(docs), run["source"])
