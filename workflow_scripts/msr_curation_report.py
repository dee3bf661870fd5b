"""Rule msr_curation_report: what went into one model's D_pre / D_post, per dataset and split."""

import datetime as dt

import pandas as pd

from copyprobe.artifacts import (
    CORPUS,
    CURATED,
    CURATION_REPORT,
    provenance,
    read_table,
    write_table,
    write_text,
)
from copyprobe.curation.report import build_report
from copyprobe.curation.split import SplitRules
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = dict(snakemake.params.report)
cutoff = dt.date.fromisoformat(p["cutoff"])
cur = p["curation"]
rules = SplitRules.from_params(cutoff, cur)
curated = pd.concat([read_table(f, CURATED) for f in snakemake.input.curated],
                    ignore_index=True)
corpus = pd.concat([read_table(f, CORPUS) for f in snakemake.input.corpora],
                   ignore_index=True)
rep = build_report(curated, corpus, model=snakemake.wildcards.model, cutoff=cutoff,
                   datasets=p["datasets"], statistics=p["statistics"], dedup=cur["dedup"],
                   settings={"margin_before_days": rules.margin_before_days,
                             "margin_after_days": rules.margin_after_days,
                             "min_words": rules.min_words, "max_words": rules.max_words})
write_table(rep.table, snakemake.output.table, CURATION_REPORT,
            provenance("msr_curation_report", p))
write_text(snakemake.output.md, rep.to_markdown())
for r in rep.table.itertuples(index=False):
    log.info("%s %s: %d kept, %d excluded, %d duplicated in another source", r.dataset, r.split,
             r.kept, r.excluded, r.cross_source_duplicates)
leaks = rep.pairs[rep.pairs["split"] != rep.pairs["other_split"]]
if len(leaks):
    log.warning("%d pair(s) of documents across the cutoff repeat each other across sources: "
                "see %s", len(leaks), snakemake.output.md)
