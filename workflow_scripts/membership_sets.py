"""Rule membership_sets: the standard membership scores of one (model, dataset)'s
curated documents (one cached teacher-forced pass each) and D_pre vs D_post on them, with
dataset inference (copyprobe.membership.sets)."""

import json
from pathlib import Path

import pandas as pd

from copyprobe.artifacts import CORPUS, CURATED, provenance, read_table, write_json, write_table
from copyprobe.extraction.window_scoring import read_documents
from copyprobe.generation.base import backend_facts
from copyprobe.membership.engine import SCORES
from copyprobe.membership.sets import score_date_split
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
params = dict(snakemake.params.membership)
spec = dict(params["model"])
if not backend_facts(spec["backend"])["remote"]:
    spec["n_threads"] = snakemake.threads
manifest = json.loads(Path(snakemake.input.model).read_text())
corpus = pd.concat([read_table(p, CORPUS) for p in snakemake.input.corpora])
docs = pd.concat([read_documents(corpus, read_table(p, CURATED))
                  for p in snakemake.input.curated])
result, table = score_date_split(docs, spec, manifest, params["statistics"])
prov = provenance("membership_sets", params["statistics"])
write_table(table, snakemake.output.scores, SCORES, prov)
result.update(model=snakemake.wildcards.model, dataset=snakemake.wildcards.dataset,
              provenance=prov)
write_json(snakemake.output.stats, result)
if "skipped" in result:
    log.warning("%s", result["skipped"])
for note in result.get("notes", []):
    log.info("note: %s", note)
