"""Variants and experiments: the paper's ablations as configuration.

Reference: docs/msr.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copyprobe.config import MAIN, ConfigError, run_slice
from copyprobe.msr.config import check_msr, model_datasets
EXPERIMENT_KINDS = ("sweep", "comparison")


# ---- variants -----------------------------------------------------------------------------

def variant_names(cfg: Mapping[str, Any]) -> list[str]:
    """Every variant of the config, :data:`MAIN` first."""
    return [MAIN, *cfg.get("variants", {})]


def variant_spec(cfg: Mapping[str, Any], variant: str) -> Mapping[str, Any]:
    """A variant's overrides (none for :data:`MAIN`); ConfigError for an unknown name."""
    if variant == MAIN:
        return {}
    try:
        return cfg.get("variants", {})[variant]
    except KeyError:
        raise ConfigError(f"unknown variant {variant!r}; known: "
                          f"{', '.join(variant_names(cfg))}") from None


def applies(cfg: Mapping[str, Any], model: str, variant: str) -> bool:
    """Whether ``model`` runs ``variant`` (a variant without ``models`` applies to all)."""
    models = variant_spec(cfg, variant).get("models")
    return models is None or model in models


def run_datasets(cfg: Mapping[str, Any], model: str, variant: str) -> list[str]:
    """The datasets a (model, variant) run is analysed on: the model's datasets, restricted to
    the variant's ``datasets`` when it names some."""
    if not applies(cfg, model, variant):
        return []
    wanted = variant_spec(cfg, variant).get("datasets")
    return [d for d in model_datasets(cfg, model) if wanted is None or d in wanted]


def run_sources(cfg: Mapping[str, Any], model: str, variant: str) -> list[str]:
    """The sources a (model, variant) run needs prompts and generations for."""
    return sorted({s for d in run_datasets(cfg, model, variant) for s in cfg["datasets"][d]})


def runs(cfg: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Every (model, variant, dataset) with statistics to compute."""
    return [(m, v, d) for m in cfg["models"] for v in variant_names(cfg)
            for d in run_datasets(cfg, m, v)]


def run_matching(cfg: Mapping[str, Any], model: str, variant: str) -> dict[str, Any]:
    """The matching thresholds of a run: the config's, the variant's overrides, and
    ``k_max: auto`` resolved to ``min(k_max, num_words // n)``."""
    base = dict(cfg["matching"])
    over = dict(variant_spec(cfg, variant).get("matching", {}))
    auto = over.get("k_max") == "auto"
    if auto:
        del over["k_max"]
    m = {**base, **over}
    if auto:
        msr = run_slice(cfg, model, variant)["msr"]
        m["k_max"] = min(m["k_max"], msr["num_words"] // msr["n"])
    return m


def run_settings(cfg: Mapping[str, Any], model: str, variant: str) -> dict[str, Any]:
    """How a run's generations were made and matched, as recorded in its stats JSON."""
    spec = run_slice(cfg, model, variant)
    keep = ("backend", "model_id", "revision", "prompt_format")
    return {
        "variant": variant,
        "backend": spec["backend"],
        **{k: spec[k] for k in keep if k in spec},
        "decoding": spec.get("decoding", {}),
        "msr": {k: spec["msr"][k] for k in ("n", "num_words", "min_segment_words",
                                             "prompt_format")},
        "matching": run_matching(cfg, model, variant),
    }


# ---- experiments --------------------------------------------------------------------------

def experiment_models(cfg: Mapping[str, Any], name: str) -> list[str]:
    """The models an experiment is drawn for: its ``models``, else every model that runs all of
    its variants on its dataset."""
    e = cfg["experiments"][name]
    if "models" in e:
        return list(e["models"])
    return [m for m in cfg["models"]
            if all(e["dataset"] in run_datasets(cfg, m, v) for v in experiment_variants(e))]


def _settings(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """An experiment's ``{label, variant}`` settings in order (a comparison: a, then b)."""
    return list(spec["settings"]) if spec["kind"] == "sweep" else [spec["a"], spec["b"]]


def experiment_variants(spec: Mapping[str, Any]) -> list[str]:
    """The variants an experiment reads, in its order (a comparison: a, then b)."""
    return [s["variant"] for s in _settings(spec)]


def experiment_labels(spec: Mapping[str, Any]) -> list[str]:
    """The labels of an experiment's variants, in :func:`experiment_variants` order."""
    return [str(s["label"]) for s in _settings(spec)]


# ---- checks -------------------------------------------------------------------------------

def check(cfg: Mapping[str, Any]) -> None:
    """Raise ConfigError (naming the key) for a variant or experiment that cannot run."""
    for name, v in cfg.get("variants", {}).items():
        key = f"variants.{name}"
        if name == MAIN:
            raise ConfigError(f"config key {key!r}: {MAIN!r} is the variant without overrides "
                              "that every model runs; choose another name")
        for i, m in enumerate(v.get("models", [])):
            if m not in cfg["models"]:
                raise ConfigError(f"config key '{key}.models.{i}': unknown model {m!r}")
        for i, d in enumerate(v.get("datasets", [])):
            if d not in cfg["datasets"]:
                raise ConfigError(f"config key '{key}.datasets.{i}': unknown dataset {d!r}")
        for m in cfg["models"]:
            if applies(cfg, m, name):
                _check_run(cfg, m, name, key)
    for name, e in cfg.get("experiments", {}).items():
        _check_experiment(cfg, name, e)


def _check_run(cfg: Mapping[str, Any], model: str, variant: str, key: str) -> None:
    msr = run_slice(cfg, model, variant)["msr"]
    check_msr(msr, f"{key}.msr")
    m = run_matching(cfg, model, variant)
    if m["k_min"] > m["k_max"]:
        raise ConfigError(f"config key '{key}.matching': k_min {m['k_min']} exceeds k_max "
                          f"{m['k_max']} for model {model!r} (k_max auto = num_words // n = "
                          f"{msr['num_words']} // {msr['n']})")


def _check_experiment(cfg: Mapping[str, Any], name: str, e: Mapping[str, Any]) -> None:
    key = f"experiments.{name}"
    if e["dataset"] not in cfg["datasets"]:
        raise ConfigError(f"config key '{key}.dataset': unknown dataset {e['dataset']!r}")
    variants = experiment_variants(e)
    for v in variants:
        if v != MAIN and v not in cfg.get("variants", {}):
            raise ConfigError(f"config key {key!r}: unknown variant {v!r}; known: "
                              f"{', '.join(variant_names(cfg))}")
    labels = experiment_labels(e)
    if len(set(labels)) != len(labels):
        raise ConfigError(f"config key {key!r}: labels must differ (got {labels})")
    for i, m in enumerate(e.get("models", [])):
        if m not in cfg["models"]:
            raise ConfigError(f"config key '{key}.models.{i}': unknown model {m!r}")
        for v in variants:
            if e["dataset"] not in run_datasets(cfg, m, v):
                raise ConfigError(f"config key '{key}.models.{i}': model {m!r} does not run "
                                  f"variant {v!r} on dataset {e['dataset']!r}")
    if not experiment_models(cfg, name):
        raise ConfigError(f"config key {key!r}: no model runs all of {variants} on dataset "
                          f"{e['dataset']!r}")
    if e["kind"] == "comparison":
        for m in experiment_models(cfg, name):
            a, b = (run_matching(cfg, m, v) for v in variants)
            if (a["k_min"], a["k_max"]) != (b["k_min"], b["k_max"]):
                raise ConfigError(f"config key {key!r}: variants {variants[0]!r} and "
                                  f"{variants[1]!r} of model {m!r} use different thresholds "
                                  f"(k {a['k_min']}..{a['k_max']} vs {b['k_min']}..{b['k_max']}): "
                                  "the paper-mode comparison needs the same k values")


__all__ = ["EXPERIMENT_KINDS", "MAIN", "applies", "check", "experiment_labels",
           "experiment_models", "experiment_variants", "run_datasets", "run_matching",
           "run_settings", "run_slice", "run_sources", "runs", "variant_names", "variant_spec"]
