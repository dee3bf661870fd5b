"""Rule generate: run one model on one shard of a source's prompts, through the call cache."""

import json
from pathlib import Path

from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
from copyprobe.generation.shards import generate_shard
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
spec = dict(snakemake.params.model)  # noqa: F821
spec["n_threads"] = spec.get("n_threads") or snakemake.threads  # noqa: F821
manifest = json.loads(Path(snakemake.input.model).read_text())  # noqa: F821
df, summary = generate_shard(read_table(snakemake.input.prompts, PROMPTS), spec,  # noqa: F821
                             manifest, shard=snakemake.wildcards.shard)  # noqa: F821
write_table(df, snakemake.output[0], GENERATIONS,  # noqa: F821
            provenance("generate", {k: v for k, v in spec.items() if k != "cache_dir"},
                       summary=summary.as_dict()))
log.info("generation summary: %s", summary.describe())
limit = spec.get("requests", {}).get("max_failure_share", 0.05)
if summary.failure_share > limit:
    # Answers received are in the cache: a rerun retries only the failed requests.
    raise SystemExit(f"{summary.failed} of {summary.requests} requests failed "
                     f"({summary.failure_share:.1%} > max_failure_share {limit:.1%}): "
                     f"{json.dumps(summary.failures_by_class)}")
