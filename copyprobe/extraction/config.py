"""The extraction study's part of the config: its models, their datasets and sources, the
settings a scoring job gets, and the checks the schema cannot make.

Light on purpose (config validation imports it): nothing here loads an engine; which backends
score is read from the registry's declarations (:mod:`copyprobe.generation.logprob_scoring`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.config import ConfigError
from copyprobe.generation.logprob_scoring import cannot_score_reason, scoring_facts
from copyprobe.studies import study_models

STUDY = "extraction"
#: The study's keys of a model entry, and their defaults.
MODEL_KEYS = {"method": "exact", "extraction_format": "completion"}


def extraction_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models that list ``extraction`` in their ``studies``."""
    return study_models(cfg, STUDY)


def model_setting(spec: Mapping[str, Any], key: str) -> str:
    """A model's ``method`` or ``extraction_format`` (its own, else the default)."""
    return str(spec.get(key, MODEL_KEYS[key]))


def study_datasets(cfg: Mapping[str, Any]) -> list[str]:
    """The datasets the study scores: ``extraction.datasets``, else every dataset."""
    chosen = cfg["extraction"]["datasets"]
    return list(cfg["datasets"]) if chosen is None else list(chosen)


def model_datasets(cfg: Mapping[str, Any], model: str) -> list[str]:
    """The study's datasets of a model in the study; a model that restricts its sources
    (``sources``) gets those whose every source it has."""
    if model not in extraction_models(cfg):
        return []
    own = cfg["models"][model].get("sources")
    return [d for d in study_datasets(cfg)
            if own is None or set(cfg["datasets"][d]) <= set(own)]


def model_sources(cfg: Mapping[str, Any], model: str) -> list[str]:
    """The sources whose curated documents a model scores (those of its datasets)."""
    return sorted({s for d in model_datasets(cfg, model) for s in cfg["datasets"][d]})


def runs(cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every (model, dataset) of the study."""
    return [(m, d) for m in extraction_models(cfg) for d in model_datasets(cfg, m)]


def score_path(cfg: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
    """The scoring path of an exact model (``extraction.path``; ``auto``: the backend's
    first declared path); None for a Monte Carlo model."""
    if model_setting(spec, "method") != "exact":
        return None
    path = cfg["extraction"]["path"]
    if path == "auto":
        paths = scoring_facts(spec["backend"])["score_paths"]
        return paths[0] if paths else "one_pass"
    return str(path)


def mc_target(cfg: Mapping[str, Any]) -> tuple[int, float]:
    """The (n, p) the Monte Carlo test decides (``monte_carlo.n``/``p``, else the headline's)."""
    ex = cfg["extraction"]
    mc, head = ex["monte_carlo"], ex["headline"]
    n = mc["n"] if mc["n"] is not None else head["n"]
    p = mc["p"] if mc["p"] is not None else head["p"]
    return int(n), float(p)


def job_settings(cfg: Mapping[str, Any], model: str) -> dict[str, Any]:
    """What a scoring job of ``model`` reads beside its model slice: the windows, the cap,
    the method, format and path, and the Monte Carlo settings with their (n, p)."""
    ex = cfg["extraction"]
    spec = cfg["models"][model]
    n, p = mc_target(cfg)
    return {"windows": dict(ex["windows"]),
            "max_windows_per_document": ex["max_windows_per_document"],
            "method": model_setting(spec, "method"),
            "extraction_format": model_setting(spec, "extraction_format"),
            "path": score_path(cfg, spec),
            "monte_carlo": {**ex["monte_carlo"], "n": n, "p": p}}


def analysis_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """What the per-dataset steps read: the (n,p) grid, the headline and the statistics."""
    ex = cfg["extraction"]
    return {"ns": list(ex["ns"]), "ps": list(ex["ps"]), "headline": dict(ex["headline"]),
            "statistics": dict(cfg["statistics"])}


def check_config(cfg: Mapping[str, Any]) -> None:
    """Datasets named, headline (n,p) on the grid, and each model of the study: a cutoff (its
    documents are split by it), and for ``method: exact`` a backend that scores on the
    configured path (else the message names the key and the alternatives)."""
    ex = cfg["extraction"]
    for i, d in enumerate(ex["datasets"] or []):
        if d not in cfg["datasets"]:
            raise ConfigError(f"config key 'extraction.datasets.{i}': unknown dataset {d!r}; "
                              f"known: {', '.join(cfg['datasets']) or 'none'}")
    head = ex["headline"]
    if head["n"] not in ex["ns"]:
        raise ConfigError(f"config key 'extraction.headline.n': {head['n']} is not one of "
                          f"extraction.ns {ex['ns']}")
    if head["p"] not in ex["ps"]:
        raise ConfigError(f"config key 'extraction.headline.p': {head['p']} is not one of "
                          f"extraction.ps {ex['ps']}")
    mc = ex["monte_carlo"]
    if mc["batch"] > mc["max_samples"]:
        raise ConfigError("config key 'extraction.monte_carlo.batch': must not exceed "
                          f"monte_carlo.max_samples ({mc['max_samples']})")
    models = extraction_models(cfg)
    if models and not study_datasets(cfg):
        raise ConfigError(f"config key 'datasets': the extraction study (models "
                          f"{', '.join(models)}) scores the documents of datasets; none given")
    for name in models:
        spec, key = cfg["models"][name], f"models.{name}"
        if "cutoff" not in spec:
            raise ConfigError(f"config key '{key}.cutoff': required for the extraction study "
                              "(its documents are split into D_pre and D_post by it)")
        if not model_datasets(cfg, name):
            raise ConfigError(f"config key '{key}.sources': model {name!r} has every source "
                              "of no dataset the extraction study scores")
        if model_setting(spec, "method") != "exact":
            continue
        reason = cannot_score_reason(name, spec, key)
        if reason is not None:
            raise ConfigError(reason.replace("use method: monte_carlo",
                                             f"set {key}.method: monte_carlo"))
        path = score_path(cfg, spec)
        paths = scoring_facts(spec["backend"])["score_paths"]
        if paths and path not in paths:
            raise ConfigError(f"config key 'extraction.path': {path!r} is not a scoring path "
                              f"of backend {spec['backend']!r} (model {name!r}): it has "
                              f"{', '.join(paths)}; path: auto takes each backend's own")
