"""Rule generate: run one model on one source's prompts, through the call cache."""

import json
from pathlib import Path

from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
from copyprobe.generation import GenerationCache, build_backend, run_generation
from copyprobe.generation.base import BACKENDS, Decoding
from copyprobe.models import ModelFile
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
spec = dict(snakemake.params.model)  # noqa: F821
manifest = json.loads(Path(snakemake.input.model).read_text())  # noqa: F821
model_file = (ModelFile(Path(manifest["path"]), manifest["sha256"], manifest["size"],
                        manifest["origin"]) if manifest["path"] else None)
if model_file is not None:
    spec.setdefault("model_id", model_file.path.name)
spec["n_threads"] = spec.get("n_threads") or snakemake.threads  # noqa: F821
backend_cls = BACKENDS.get(spec["backend"])
identity = backend_cls.identity_from_config(spec, model_file)
decoding = Decoding.from_config(spec["decoding"])
df, summary = run_generation(
    read_table(snakemake.input.prompts, PROMPTS),  # noqa: F821
    model=spec["name"], backend_name=spec["backend"], identity=identity,
    backend_factory=lambda: build_backend(spec, model_file), decoding=decoding,
    cache=GenerationCache(Path(spec["cache_dir"]) / "generations"),
    samples=spec["decoding"].get("samples", 1))
write_table(df, snakemake.output[0], GENERATIONS,  # noqa: F821
            provenance("generate", {k: v for k, v in spec.items() if k != "cache_dir"},
                       summary=summary.as_dict()))
log.info("generation summary: %s", json.dumps(summary.as_dict()))
