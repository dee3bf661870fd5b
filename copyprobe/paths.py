"""The result paths of the shared steps, as patterns: the rules' outputs and inputs name them,
and the target and input functions fill them in (``CORPUS.format(source="wiki")``). Each
study keeps its own in ``copyprobe/<study>/paths.py``."""

from typing import Any

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
#: The standard membership scores of a (model, dataset)'s curated documents, and D_pre vs
#: D_post on them with dataset inference (copyprobe.membership.sets): MSR's and the
#: extraction study's tables read them.
MEMBERSHIP_SCORES = "results/membership/sets/{model}/{dataset}.parquet"
MEMBERSHIP_SETS = "results/membership/sets/{model}/{dataset}.json"
#: The report's HTML page of a table (rule report_page; each study names its pages).
REPORT_PAGE = "results/report/{page}.html"


def membership_sets(cfg: Any, pairs: Any) -> list[str]:
    """The MEMBERSHIP_SETS of each (model, dataset) in ``pairs``, once each; none when
    ``statistics.membership_scores`` is off."""
    if not cfg["statistics"]["membership_scores"]:
        return []
    return list(dict.fromkeys(MEMBERSHIP_SETS.format(model=m, dataset=d) for m, d in pairs))


def shard_path(model: str, variant: str, source: str, index: int, count: int,
               pattern: str = GENERATION_SHARD) -> str:
    """The ``index``-th of ``count`` generation shards (or of a shard's sidecar ``pattern``)."""
    return pattern.format(model=model, variant=variant, source=source,
                          shard=f"{index:05d}-of-{count:05d}")
