"""The input, params and resource functions of rules/copyright.smk, bound to the workflow's
config (Snakemake calls each with the job's wildcards)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from copyprobe import config as cpc
from copyprobe.copyright import paths as P
from copyprobe.copyright.study import STUDY, copyright_models, scoring_shards
from copyprobe.dependencies import model_parts
from copyprobe.generation.base import backend_facts, job_threads
from copyprobe.paths import CORPUS
from copyprobe.rule_inputs import backend_env


class CopyrightInputs:
    """``CopyrightInputs(config).material_corpora`` is an input function of the rule file."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # the workflow's validated config (the same object)

    @property
    def block(self) -> dict[str, Any]:
        return self.config[STUDY]

    def _judge(self) -> dict[str, Any] | None:
        return self.block["judge"]

    def benchmark_spec(self, wildcards: Any) -> dict[str, Any]:
        return self.block["benchmarks"][wildcards.benchmark]

    def material_corpora(self, wildcards: Any) -> list[str]:
        """The corpus tables of a benchmark's material sources."""
        return [CORPUS.format(source=s) for s in self.benchmark_spec(wildcards)["materials"]]

    def released_images(self, wildcards: Any) -> list[str]:
        """With ``images: released``: the release's image files (replacing one rebuilds the
        manifest); else none."""
        spec = self.benchmark_spec(wildcards)
        if spec.get("images") != "released":
            return []
        from copyprobe.copyright.released_images import ReleasedImages, ReleasedImagesError

        try:
            return [str(p) for p in ReleasedImages.from_spec(spec.get("released_images")).files()]
        except ReleasedImagesError:
            return []  # the manifest job names what is wrong with the folder

    def images_dir(self, wildcards: Any) -> str:
        """Rendered pages are content-addressed files kept with the caches: a benchmark rebuilt
        after a change draws only the pages it has not drawn before."""
        return str(Path(self.config["cache_dir"]) / "copyright" / "images")

    def judge_params(self, wildcards: Any) -> dict[str, Any]:
        """The judge's model entry (None: rule detector only), where its calls are cached, the
        words of a response it sees, and whether the rule detector decides first (cascade)."""
        judge = self._judge()
        return {"judge": judge, "cache_dir": self.config["cache_dir"],
                "max_words": self.block["judge_max_words"],
                "cascade": bool(judge is not None and judge.get("cascade", False))}

    def judge_threads(self, wildcards: Any) -> int:
        judge = self._judge()
        return 1 if judge is None else job_threads(judge)

    def judge_api_slots(self, wildcards: Any) -> int:
        judge = self._judge()
        return 1 if judge is not None and backend_facts(judge["backend"])["remote"] else 0

    def judge_gpus(self, wildcards: Any) -> int:
        """A GPU for a judge on an hf or vllm backend (SLURM asks for it; locally a count)."""
        judge = self._judge()
        return 1 if judge is not None and backend_facts(judge["backend"])["gpu"] else 0

    def judge_registry_parts(self, wildcards: Any) -> dict[str, list[str]]:
        """The backends of the copyright judge (none without one)."""
        return model_parts(self._judge())

    def judge_env(self, wildcards: Any) -> str:
        """The judge's backend's generation environment; without a judge (rule detector only)
        the library's."""
        judge = self._judge()
        return "../envs/library.yaml" if judge is None else backend_env(judge["backend"])

    def metrics_params(self, wildcards: Any) -> dict[str, Any]:
        return self.block["metrics"]

    # ---- scoring (copyright.scoring.shards: 1 job, or N shard jobs and a merge)
    @property
    def score_shards(self) -> int:
        return scoring_shards(self.config)

    @property
    def score_output(self) -> str:
        """Rule copyright_score's output: the scored table itself, or with shards one
        shard's part of it."""
        return P.SCORED if self.score_shards == 1 else P.SCORED_SHARD

    @property
    def score_log(self) -> str:
        """Rule copyright_score's log; each shard's names its shard."""
        return ("logs/copyright_score/{benchmark}/{model}.log" if self.score_shards == 1
                else "logs/copyright_score/{benchmark}/{model}/{shard}.log")

    def scored_shards(self, wildcards: Any) -> list[str]:
        """The shard tables rule copyright_score_merge merges, in shard order."""
        n = self.score_shards
        return [P.SCORED_SHARD.format(benchmark=wildcards.benchmark, model=wildcards.model,
                                      shard=f"{i:05d}-of-{n:05d}") for i in range(n)]

    def score_gpus(self, wildcards: Any) -> int:
        """A GPU for a scoring job whose metrics run on CUDA (``bertscore.device`` or the
        embedding backend's ``device``), so that SLURM puts it on a GPU node."""
        from copyprobe.copyright.response_scoring import metrics_use_gpu

        return 1 if metrics_use_gpu(self.block["metrics"]) else 0

    @property
    def score_env(self) -> str:
        """The scoring jobs' environment: the library's, or with CUDA metrics the GPU one
        (its PyTorch is PyPI's CUDA build; the library's is conda-forge's CPU build)."""
        from copyprobe.copyright.response_scoring import metrics_use_gpu

        gpu = metrics_use_gpu(self.block["metrics"])
        return f"../envs/{'generation-gpu' if gpu else 'library'}.yaml"

    def scored_tables(self, wildcards: Any) -> list[str]:
        """Every study model's scored table of one benchmark."""
        return [P.SCORED.format(benchmark=wildcards.benchmark, model=m)
                for m in copyright_models(self.config)]

    def all_scored(self, wildcards: Any) -> list[str]:
        """Every benchmark's pooled scored table (the guard's tables span benchmarks)."""
        return [P.POOLED.format(benchmark=b) for b in self.block["benchmarks"]]

    def model_main(self, wildcards: Any) -> dict[str, Any]:
        """A copyright model's slice (its variant main: the study runs no variants)."""
        return cpc.run_slice(self.config, wildcards.model, cpc.MAIN)

    # ---- attribution (copyright.attribution)
    def attribution_index(self, wildcards: Any) -> str:
        """The manifest of the benchmark's index copyright-<benchmark>."""
        from copyprobe.copyright.study import index_name
        from copyprobe.spans.paths import INDEX_MANIFEST

        return INDEX_MANIFEST.format(index=index_name(wildcards.benchmark))

    def attribution_params(self, wildcards: Any) -> dict[str, Any]:
        from copyprobe.copyright.study import index_name
        from copyprobe.spans.config import index_spec

        name = index_name(wildcards.benchmark)
        return {**self.block["attribution"], "index": name,
                "unit": index_spec(self.config, name)["unit"],
                "benchmark": wildcards.benchmark}
