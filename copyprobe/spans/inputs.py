"""The input, params and resource functions of rules/spans.smk, bound to the workflow's config
(Snakemake calls each with the job's wildcards ``index`` and ``shard``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from copyprobe.spans import paths as P
from copyprobe.spans.config import corpus_paths, index_spec, indexes


class SpanInputs:
    """``SpanInputs(config).shard_inputs`` is an input function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    def names(self) -> list[str]:
        """Every configured index (those the studies add included)."""
        return list(indexes(self.config))

    def spec(self, name: str) -> dict[str, Any]:
        return index_spec(self.config, name)

    # ---- span_index_prepare_<name> (one rule per index: its shard files are static)
    @staticmethod
    def prepare_rule(name: str) -> str:
        return f"span_index_prepare_{name}"

    def corpora(self, name: str) -> list[str]:
        """The corpus tables, files and folders an index reads (a changed one reruns it)."""
        return corpus_paths(self.config, name)

    def tokenizer(self, name: str) -> str | None:
        """The unit ``tokens``'s tokenizer file of an index (None in the byte units)."""
        return self.spec(name).get("tokenizer")

    def tokenizer_inputs(self, name: str) -> list[str]:
        """The tokenizer file as an input (a replaced one reruns the index)."""
        tok = self.tokenizer(name)
        return [tok] if tok and Path(tok).is_file() else []

    def index_tokenizer(self, wildcards: Any) -> str | None:
        return self.tokenizer(wildcards.index)

    def prepared(self, name: str) -> list[str]:
        """The plan and the step-1 files of every shard of an index."""
        return [P.INDEX_PLAN.format(index=name),
                *P.shard_files(name, self.spec(name)["shards"], P.STEP1_FILES)]

    # ---- span_index_shard
    def shard_inputs(self, wildcards: Any) -> list[str]:
        folder = self.shard_dir(wildcards)
        return [f"{folder}/{f}" for f in P.STEP1_FILES]

    def shard_dir(self, wildcards: Any) -> str:
        return P.SHARD_DIR.format(index=wildcards.index, shard=wildcards.shard)

    def shard_threads(self, wildcards: Any) -> int:
        return int(self.spec(wildcards.index)["cpus"])

    def shard_mem_mb(self, wildcards: Any) -> int:
        """The build's memory budget (``mem_gb``, what infini-gram plans its batches in) and
        1 GiB for the Python around it."""
        return (int(self.spec(wildcards.index)["mem_gb"]) + 1) * 1024

    @staticmethod
    def shard_runtime(wildcards: Any, attempt: int) -> int:
        """Minutes a shard's build asks for: 4 hours, more on each retry."""
        return 240 * attempt

    def shard_params(self, wildcards: Any) -> dict[str, Any]:
        """Memory of the build (GiB), its builder, and where built suffix arrays are kept by
        content (both builders write the same bytes: the key is the shard's content alone)."""
        spec = self.spec(wildcards.index)
        return {"mem_gb": spec["mem_gb"], "builder": spec.get("builder", "auto"),
                "store": str(Path(self.config["cache_dir"]) / P.STORE)}

    # ---- span_index
    def index_shards(self, wildcards: Any) -> list[str]:
        """The plan and every shard's suffix array (the count comes from the config: static
        paths)."""
        n = self.spec(wildcards.index)["shards"]
        return [P.INDEX_PLAN.format(index=wildcards.index),
                *P.shard_files(wildcards.index, n, P.SA_FILES)]

    def index_dir(self, wildcards: Any) -> str:
        return P.INDEX_DIR.format(index=wildcards.index)

    def index_unit(self, wildcards: Any) -> str:
        return self.spec(wildcards.index)["unit"]

    def index_names(self) -> str:
        """The ``{index}`` wildcard's constraint: exactly the configured indexes."""
        import re

        return "|".join(re.escape(n) for n in self.names()) or "(?!)"
