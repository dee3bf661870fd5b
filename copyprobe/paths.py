"""The result paths of the shared steps, as patterns: the rules' outputs and inputs name them,
and the target and input functions fill them in (``CORPUS.format(source="wiki")``). Each
study keeps its own in ``copyprobe/<study>/paths.py``."""

CORPUS = "results/corpus/{source}.parquet"
CORPUS_SKIPPED = "results/corpus/{source}.skipped.parquet"
CORPUS_MANIFEST = "results/corpus/{source}.manifest.parquet"
MODEL_MANIFEST = "results/models/{model}.json"
#: The prompts of a corpus source (MSR's); a study that prompts otherwise keeps its own
#: (copyright: copyprobe.copyright.paths.PROMPTS), and the generate rule asks its maker.
PROMPTS = "results/prompts/{model}/{variant}/{source}.parquet"
GENERATION_SHARD = "results/generations/{model}/{variant}/{source}/shards/{shard}.parquet"
GENERATIONS = "results/generations/{model}/{variant}/{source}.parquet"
#: The versions and hashes of what a run used (columns kind, name, version, sha256).
ENVIRONMENT = "results/reproducibility/environment.parquet"
ENVIRONMENT_PAGE = "results/report/environment.html"
#: The report's HTML page of a table (rule report_page; each study names its pages).
REPORT_PAGE = "results/report/{page}.html"


def shard_path(model: str, variant: str, source: str, index: int, count: int,
               pattern: str = GENERATION_SHARD) -> str:
    """The ``index``-th of ``count`` generation shards (or of a shard's sidecar ``pattern``)."""
    return pattern.format(model=model, variant=variant, source=source,
                          shard=f"{index:05d}-of-{count:05d}")
