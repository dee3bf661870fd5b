"""Where a configured span index lies, as patterns: rules/spans.smk's outputs and inputs name
them, and the studies' attribution rules take :data:`INDEX_MANIFEST` as their input.

An index NAME is the folder ``results/spans/NAME/``: one folder per shard,
``shard-KKKKK-of-NNNNN/`` (the step-1 files of :func:`copyprobe.spans.build.prepare_index` and
the suffix array of :func:`~copyprobe.spans.build.build_shard`), and ``index.json``, the
manifest, written last (:func:`~copyprobe.spans.build.finalize_index`)."""

INDEX_DIR = "results/spans/{index}"
INDEX_MANIFEST = "results/spans/{index}/index.json"
#: The plan prepare_index writes beside the shards (finalize_index reads it).
INDEX_PLAN = "results/spans/{index}/prepare.json"
SHARD_DIR = "results/spans/{index}/shard-{shard}"
#: The files rule span_index_prepare writes in each shard folder (the engine's step 1 and the
#: documents' table), and those rule span_index_shard adds (the suffix array and its build
#: record).
STEP1_FILES = ("tokenized.0", "offset.0", "metadata.0", "metaoff.0", "docs.parquet")
SA_FILES = ("table.0", "build.json")
#: Suffix-array builds kept by content (the sha256 of a shard's tokenized bytes), so that a
#: shard whose documents did not change is never built again: under the cache directory.
STORE = "spans/shards"


def shard_name(k: int, n: int) -> str:
    """The ``{shard}`` of the ``k``-th of ``n`` shards (the workflow's shard pattern)."""
    return f"{k:05d}-of-{n:05d}"


def shard_names(n: int) -> list[str]:
    return [shard_name(k, n) for k in range(n)]


def shard_files(index: str, n: int, files: tuple[str, ...]) -> list[str]:
    """``files`` of every shard of an index of ``n`` shards."""
    return [f"{SHARD_DIR.format(index=index, shard=s)}/{f}" for s in shard_names(n)
            for f in files]
