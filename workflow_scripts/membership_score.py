"""Rule membership_score: every membership score of the run's documents on its trained model,
and the other studies' measures its ``measures`` name, each against the truth
(copyprobe.membership.runs): scores, the study measures, the result table (Parquet and
Markdown) and the whole result (JSON)."""

import json
from pathlib import Path

from copyprobe.artifacts import provenance, read_table, write_json, write_table, write_text
from copyprobe.membership.cli import read_truth
from copyprobe.membership.engine import SCORES
from copyprobe.membership.runs import (
    DOCUMENTS,
    RESULT,
    STUDY_MEASURES,
    result_markdown,
    result_table,
    score_run,
)
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
inp, out = snakemake.input, snakemake.output
scoring = dict(snakemake.params.scoring)
run = snakemake.wildcards.run
docs = read_table(inp.documents, DOCUMENTS)
truth = read_truth(inp.plan, docs)
table, study, result = score_run(docs, truth, inp.model_yaml, scoring,
                                 Path(scoring["cache_dir"]), scoring["measures"])
record = json.loads(Path(inp.record).read_text())
meta = provenance("membership_score", scoring, run=run, model_config=inp.model_yaml)
write_table(table, out.scores, SCORES, meta)
write_table(study, out.study_measures, STUDY_MEASURES, meta)
write_table(result_table(run, result), out.table, RESULT, meta)
write_json(out.json, result)
write_text(out.md, result_markdown(run, result, record))
log.info("run %s: %d documents scored", run, len(table))
