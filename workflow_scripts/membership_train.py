"""Rule membership_train: the base model fine-tuned on the run's insertion plan
(copyprobe.membership.train): insertion.parquet, model/, train.json and, last, model.yaml."""

import json
from pathlib import Path

from copyprobe.artifacts import read_table
from copyprobe.membership.runs import DOCUMENTS, train_run, uses_gpu
from copyprobe.models import ModelFile
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
run = dict(snakemake.params.run)
base = dict(snakemake.params.base)
if not uses_gpu(base):
    base["n_threads"] = snakemake.threads
manifest = json.loads(Path(snakemake.input.base).read_text())
docs = read_table(snakemake.input.documents, DOCUMENTS)
record = train_run(run, docs, base, ModelFile.from_manifest(manifest),
                   Path(snakemake.output.model_yaml).parent,
                   documents=str(snakemake.input.documents))
log.info("%s: %s; %d steps, %d tokens in %.1f s (%s tokens/s)%s", base["name"],
         record["outcome"], record["steps"], record["tokens_trained"], record["seconds"],
         record["tokens_per_second"],
         f", resumed from step {record['resumed_from_step']}" if record["resumed_from_step"]
         else "")
