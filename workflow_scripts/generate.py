"""Rule generate: run one model on one shard of a source's prompts, through the call cache
(and, where the rule asks, write what a backend wrapper recorded: the guard's decisions).

The failed requests are also written to the rule's second log, a Parquet file: Snakemake deletes
a failed job's outputs but keeps its logs, so the error classes and messages survive for
inspection.
"""

import json
import sys
from pathlib import Path

from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
from copyprobe.generation.base import backend_facts, backend_wrappers
from copyprobe.generation.shards import generate_shard, wrapper_records
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
spec = dict(snakemake.params.model)
if not backend_facts(spec["backend"])["remote"]:
    # the cores Snakemake reserved for this job (n_threads, at most --cores)
    spec["n_threads"] = snakemake.threads
manifest = json.loads(Path(snakemake.input.model).read_text())
prompts = read_table(snakemake.input.prompts, PROMPTS)
df, summary = generate_shard(prompts, spec, manifest, shard=snakemake.wildcards.shard)
settings = {k: v for k, v in spec.items() if k != "cache_dir"}
write_table(df[df["status"] != "ok"], snakemake.log.failures, GENERATIONS,
            provenance("generate", settings, summary=summary.as_dict()))
write_table(df, snakemake.output[0], GENERATIONS,
            provenance("generate", settings, summary=summary.as_dict()))
# what a backend wrapper recorded of the shard's requests (the guard's decisions), where the
# rule names an output after it
wanted = [name for name in backend_wrappers(spec) if name in snakemake.output.keys()]
for name, (records, table) in wrapper_records(prompts, spec, snakemake.wildcards.shard,
                                               wanted).items():
    write_table(records, snakemake.output[name], table, provenance("generate", settings))
report = summary.failure_report(spec.get("requests", {}).get("max_failure_share", 0.05))
if report is not None:
    # logged (to the job's log file only, which --show-failed-logs prints), then a plain exit
    # status: SystemExit(message) would print to stderr only, and a second time
    log.error("%s\nfailed requests: %s", report, snakemake.log.failures)
    sys.exit(1)
