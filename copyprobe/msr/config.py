"""The MSR study's part of the config: its models, their sources and datasets, its settings
(``n``, ``num_words``, ...) and the checks the schema cannot make."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.config import ConfigError, check_names

STUDY = "msr"
#: MSR settings: the ``msr`` block's defaults, which a model entry may override.
MSR_KEYS = ("n", "num_words", "min_segment_words", "system_message", "prompt_format")


def msr_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models in the MSR study (``studies`` includes msr, the default)."""
    return [m for m, spec in cfg["models"].items() if STUDY in spec.get("studies", [STUDY])]


def model_sources(cfg: Mapping[str, Any], model: str) -> list[str]:
    """The MSR sources a model is run on: its own list, else every source used by a dataset
    (none for a model outside the MSR study)."""
    spec = cfg["models"][model]
    if STUDY not in spec.get("studies", [STUDY]):
        return []
    if "sources" in spec:
        return list(spec["sources"])
    used = {s for members in cfg["datasets"].values() for s in members}
    return sorted(used)


def model_datasets(cfg: Mapping[str, Any], model: str) -> list[str]:
    """Datasets whose every source the model runs on."""
    mine = set(model_sources(cfg, model))
    return [d for d, members in cfg["datasets"].items() if set(members) <= mine]


def take_msr_settings(cfg: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The model's MSR settings (its own, else the ``msr`` block's), taken out of ``spec``."""
    return {k: spec.pop(k, cfg["msr"][k]) for k in MSR_KEYS}


def check_msr(msr: Mapping[str, Any], key: str) -> None:
    """MSR settings that the schema cannot check: ``n`` even, ``num_words`` at least ``n``
    (``key`` is the config key the settings come from, for the message)."""
    if msr["n"] % 2:
        raise ConfigError(f"config key '{key}.n': must be even (got {msr['n']}): the held-out "
                          "last segment must fall on an assistant turn")
    if msr["num_words"] < msr["n"]:
        raise ConfigError(f"config key '{key}.num_words': must be at least n ({msr['n']})")


def check_config(cfg: Mapping[str, Any]) -> None:
    """Datasets, thresholds, each model's MSR settings, cutoff and sources (variants and
    experiments: :func:`copyprobe.msr.experiments.check`)."""
    check_names(cfg, ("datasets", "variants", "experiments"))
    for name, members in cfg["datasets"].items():
        for i, s in enumerate(members):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key 'datasets.{name}.{i}': unknown source {s!r}")
    models = msr_models(cfg)
    if models and not cfg["datasets"]:
        raise ConfigError(f"config key 'datasets': required by the MSR study (models "
                          f"{', '.join(models)}); a model only in the copyright study sets "
                          "studies: [copyright]")
    m = cfg["matching"]
    if m["k_min"] > m["k_max"]:
        raise ConfigError("config key 'matching.k_min': must not exceed matching.k_max")
    check_msr(cfg["msr"], "msr")
    for name, spec in cfg["models"].items():
        key = f"models.{name}"
        check_msr({**cfg["msr"], **{k: spec[k] for k in MSR_KEYS if k in spec}}, key)
        if "cutoff" not in spec and STUDY in spec["studies"]:
            raise ConfigError(f"config key '{key}.cutoff': required for the MSR study (a "
                              "model only in the copyright study sets studies: [copyright])")
        for i, s in enumerate(spec.get("sources", [])):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key '{key}.sources.{i}': unknown source {s!r}")


def expand_index_corpora(cfg: dict[str, Any]) -> None:
    """A span index's corpora may name an MSR dataset: it stands for the dataset's sources (a
    name that is a source stays the source)."""
    for spec in cfg.get("spans", {}).get("indexes", {}).values():
        corpora: list[str] = []
        for item in spec["corpora"]:
            if item not in cfg["sources"] and item in cfg["datasets"]:
                corpora.extend(cfg["datasets"][item])
            else:
                corpora.append(item)
        spec["corpora"] = list(dict.fromkeys(corpora))


def check_attribution(cfg: Mapping[str, Any]) -> None:
    """``msr.attribution.index`` names a configured span index."""
    att = cfg["msr"].get("attribution")
    if att is None:
        return
    known = cfg.get("spans", {}).get("indexes", {})
    if att["index"] not in known:
        raise ConfigError(f"config key 'msr.attribution.index': no span index "
                          f"{att['index']!r} under spans.indexes (known: "
                          f"{', '.join(sorted(known)) or 'none'})")
