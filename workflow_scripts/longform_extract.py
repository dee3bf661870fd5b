"""Rule longform_extract: every document of one source through one model, the two phases and
nv-recall (copyprobe.longform), every request through the call cache."""

import json
from pathlib import Path

from copyprobe.artifacts import CORPUS, provenance, read_table, write_table
from copyprobe.generation.base import backend_facts
from copyprobe.longform.engine import Settings, extract_documents
from copyprobe.longform.tables import BLOCKS, DOCUMENTS
from copyprobe.models import ModelFile
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
spec = dict(snakemake.params.model)  # noqa: F821
if not backend_facts(spec["backend"])["remote"]:
    spec["n_threads"] = snakemake.threads  # noqa: F821
manifest = json.loads(Path(snakemake.input.model).read_text())  # noqa: F821
model_file = ModelFile.from_manifest(manifest)
if model_file is not None:
    spec.setdefault("model_id", model_file.path.name)
settings = Settings.from_config(snakemake.params.longform)  # noqa: F821
docs = read_table(snakemake.input.corpus, CORPUS)  # noqa: F821
rows, blocks = extract_documents(docs, spec, model_file, settings,
                                 source=snakemake.wildcards.source)  # noqa: F821
meta = provenance("longform_extract", dict(snakemake.params.longform))  # noqa: F821
write_table(rows, snakemake.output.documents, DOCUMENTS, meta)  # noqa: F821
write_table(blocks, snakemake.output.blocks, BLOCKS, meta)  # noqa: F821
log.info("%d documents: %s", len(rows),
         rows["stopped"].value_counts().to_dict() if len(rows) else {})
