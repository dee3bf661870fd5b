"""Rule prepare_model: materialise the model file and record its path and sha256."""

from pathlib import Path

from copyprobe.artifacts import write_json
from copyprobe.models import materialise
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
spec = snakemake.params.model_file  # noqa: F821
if spec:
    mf = materialise(spec, Path(snakemake.params.cache_dir))  # noqa: F821
    manifest = {"path": str(mf.path), "sha256": mf.sha256, "size": mf.size, "origin": mf.origin}
    log.info("model %s: %s (%d bytes, sha256 %s)", snakemake.wildcards.model, mf.path,  # noqa: F821
             mf.size, mf.sha256)
else:
    manifest = {"path": None, "sha256": None, "size": None, "origin": "remote"}
write_json(snakemake.output[0], manifest)  # noqa: F821
