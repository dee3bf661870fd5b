"""Rule prepare_model: materialise the model file and record its path and sha256."""

from pathlib import Path

from copyprobe.artifacts import write_json
from copyprobe.models import prepare
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
manifest = prepare(snakemake.params.model_file, Path(snakemake.params.cache_dir))
log.info("model %s: %s", snakemake.wildcards.model, manifest)
write_json(snakemake.output[0], manifest)
