"""Rule membership_given: a run of a model trained elsewhere (copyprobe.membership.runs): its
truth, checked against the run's documents, as the plan; its entry as model.yaml."""

from pathlib import Path

from copyprobe.artifacts import read_table
from copyprobe.membership.cli import read_truth
from copyprobe.membership.runs import DOCUMENTS, given_model
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
run = dict(snakemake.params.run)
base = dict(snakemake.params.base)
docs = read_table(snakemake.input.documents, DOCUMENTS)
truth = read_truth(snakemake.input.truth, docs)
given_model(run["model"], base, truth, str(snakemake.input.truth),
            Path(snakemake.output.model_yaml).parent)
log.info("%s: %d members of %d documents (given)", run["model"], int(truth["member"].sum()),
         len(truth))
