"""Rule longform_extract: every document of one source through one model, the two phases and
nv-recall (copyprobe.longform), every request through the call cache."""

import json
from pathlib import Path

from copyprobe.artifacts import CORPUS, provenance, read_table, write_table
from copyprobe.generation.base import backend_facts
from copyprobe.longform.engine import Settings, extract_documents
from copyprobe.longform.tables import BLOCKS, DOCUMENTS
from copyprobe.models import ModelFile
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.model)
if not backend_facts(spec["backend"])["remote"]:
    spec["n_threads"] = snakemake.threads
manifest = json.loads(Path(snakemake.input.model).read_text())
model_file = ModelFile.from_manifest(manifest)
if model_file is not None:
    spec.setdefault("model_id", model_file.path.name)
settings = Settings.from_config(snakemake.params.longform)
docs = read_table(snakemake.input.corpus, CORPUS)
rows, blocks = extract_documents(docs, spec, model_file, settings,
                                 source=snakemake.wildcards.source)
meta = provenance("longform_extract", dict(snakemake.params.longform))
write_table(rows, snakemake.output.documents, DOCUMENTS, meta)
write_table(blocks, snakemake.output.blocks, BLOCKS, meta)
log.info("%d documents: %s", len(rows),
         rows["stopped"].value_counts().to_dict() if len(rows) else {})
