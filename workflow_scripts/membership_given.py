"""Rule membership_given: a run of a model trained elsewhere (copyprobe.membership.runs): its
truth, checked against the run's documents, as the plan; its entry as model.yaml."""

from pathlib import Path

from copyprobe.artifacts import read_table
from copyprobe.membership.cli import read_truth
from copyprobe.membership.runs import DOCUMENTS, given_model
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
run = dict(snakemake.params.run)  # noqa: F821
base = dict(snakemake.params.base)  # noqa: F821
docs = read_table(snakemake.input.documents, DOCUMENTS)  # noqa: F821
truth = read_truth(snakemake.input.truth, docs)  # noqa: F821
given_model(run["model"], base, truth, str(snakemake.input.truth),  # noqa: F821
            Path(snakemake.output.model_yaml).parent)  # noqa: F821
log.info("%s: %d members of %d documents (given)", run["model"], int(truth["member"].sum()),
         len(truth))
