"""Rule environment: the versions and hashes the results were made with (one Parquet table)."""

from pathlib import Path

from copyprobe.artifacts import provenance, write_table
from copyprobe.code_stamps import stamp_files
from copyprobe.environment import ENVIRONMENT, environment_table
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
inp, params = snakemake.input, snakemake.params
models = {Path(p).stem: p for p in inp.models}
df = environment_table(params.facts, library=stamp_files(inp.library),
                       workflow=stamp_files(inp.workflow), config_sha256=params.config_sha256,
                       models=models)
write_table(df, snakemake.output[0], ENVIRONMENT, provenance("environment"))
log.info("%d rows: %s", len(df), df["kind"].value_counts().sort_index().to_dict())
