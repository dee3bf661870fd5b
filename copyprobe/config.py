"""Typed configuration: JSON-Schema validation with defaults, semantic checks, per-model slices.

:func:`validate_config` is called by the Snakefile before any job is scheduled, so a bad config
(unknown key, also among a source kind's params, wrong type, odd ``n``, a model file that is
not there) stops the run with a message that names the key; :func:`read_config_file` stops at
a key given twice in one file, naming the file and line. Workflow scripts never see the global
config: rules hand them the slice they need (:func:`model_slice`, :func:`source_spec`) through
``params``.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

#: The config schema ships inside the package, so ``pip install .`` validates configs too.
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "config_schema.yaml"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: The generation layer's ``{source}`` of a copyright benchmark is this prefix + its name.
COPYRIGHT_PREFIX = "copyright."
MSR_KEYS = ("n", "num_words", "min_segment_words", "system_message", "prompt_format")


class ConfigError(ValueError):
    """The configuration is invalid; the message names the offending key."""


def _with_defaults(validator_class: type) -> type:
    validate_props = validator_class.VALIDATORS["properties"]

    def set_defaults(validator: Any, properties: Mapping, instance: Any, schema: Mapping) -> Any:
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def _key(path: Any) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def load_schema(path: Path | None = None) -> dict[str, Any]:
    with open(path or SCHEMA_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _message(e: jsonschema.ValidationError, prefix: tuple[Any, ...] = ()) -> str:
    path = [*prefix, *e.absolute_path]
    if e.validator == "additionalProperties":
        allowed = set(e.schema.get("properties", {}))
        extra = sorted(k for k in e.instance if k not in allowed)
        keys = ", ".join(repr(_key([*path, k])) for k in extra)
        return f"unknown config key {keys}"
    return f"config key {_key(path)!r}: {e.message}"


def _first_error(validator: Any, instance: Any, prefix: tuple[Any, ...] = (),
                 suffix: str = "") -> None:
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(_message(errors[0], prefix) + suffix + more)


def source_kind_params(schema: Mapping[str, Any] | None = None) -> dict[str, set[str]]:
    """The parameter names of each source kind that has a block in the schema."""
    kinds = (schema or load_schema())["$defs"]["source_kinds"]
    return {kind: set(block.get("properties", {})) for kind, block in kinds.items()}


def validate_config(config: Mapping[str, Any], schema_path: Path | None = None) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with defaults filled in, or raise ConfigError."""
    cfg: dict[str, Any] = _iso_dates(copy.deepcopy(dict(config)))
    schema = load_schema(schema_path)
    _first_error(_Validator(schema, format_checker=jsonschema.FormatChecker()), cfg)
    _expand_guard_ablations(cfg)
    _semantic_checks(cfg)
    _check_source_params(cfg, schema)
    return cfg


GUARD_CHECKS = ("notice", "status", "risk")


def _expand_guard_ablations(cfg: dict[str, Any]) -> None:
    """A guarded model with ``guard.ablation: true`` brings its ablation: one variant per check,
    ``<name>-no-<check>``, the same entry with that check switched off (an entry of that name
    already in the config is an error). The ``ablation`` key itself is then dropped from every
    guard block: it says which models to run, not how a request is guarded."""
    models = cfg["models"]
    for name in list(models):
        guard = models[name].get("guard")
        if not isinstance(guard, dict):
            continue
        if guard.pop("ablation", False):
            for check in GUARD_CHECKS:
                if guard.get(check, True) is False:
                    continue  # already off in the model itself
                variant = f"{name}-no-{check}"
                if variant in models:
                    raise ConfigError(f"config key 'models.{name}.guard.ablation': the variant "
                                      f"'{variant}' it adds is already a model")
                models[variant] = {**copy.deepcopy(models[name]),
                                   "guard": {**copy.deepcopy(guard), check: False}}


def _iso_dates(value: Any) -> Any:
    """YAML reads an unquoted 2024-06-30 as a date: the schema's dates are ISO strings."""
    if isinstance(value, dict):
        return {k: _iso_dates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_iso_dates(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def _check_source_params(cfg: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Each source's kind params against its kind's block (kind and cut_at are generic)."""
    blocks = schema["$defs"]["source_kinds"]
    for name, spec in cfg["sources"].items():
        block = blocks.get(spec["kind"])
        if block is None:  # a kind registered by other code checks its own params
            continue
        generic = ("kind",) if "cut_at" in block.get("properties", {}) else ("kind", "cut_at")
        params = {k: v for k, v in spec.items() if k not in generic}
        validator = _Validator(block, format_checker=jsonschema.FormatChecker())
        _first_error(validator, params, ("sources", name), f" (source kind {spec['kind']!r})")


def _semantic_checks(cfg: dict[str, Any]) -> None:
    # Only the registries' declarations are read: no backend or source module is imported.
    from copyprobe.generation.base import BACKENDS, backend_facts
    from copyprobe.generation.model_keys import ModelKeyError, check_model_keys
    from copyprobe.models import ModelFileError, locate
    from copyprobe.sources.base import SOURCES

    for section in ("sources", "datasets", "models", "variants", "experiments"):
        for name in cfg.get(section, {}):
            if not NAME_RE.match(name):
                raise ConfigError(f"config key '{section}.{name}': names may use letters, digits, "
                                  "'_', '.', '-' only")
    for name, spec in cfg["sources"].items():
        if spec["kind"] not in SOURCES:
            raise ConfigError(f"config key 'sources.{name}.kind': unknown source kind "
                              f"{spec['kind']!r}; known: {', '.join(SOURCES.names())}")
    for name, members in cfg["datasets"].items():
        for i, s in enumerate(members):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key 'datasets.{name}.{i}': unknown source {s!r}")
    msr = msr_models(cfg)
    if msr and not cfg["datasets"]:
        raise ConfigError(f"config key 'datasets': required by the MSR study (models "
                          f"{', '.join(msr)}); a model only in the copyright study sets "
                          "studies: [copyright]")
    m = cfg["matching"]
    if m["k_min"] > m["k_max"]:
        raise ConfigError("config key 'matching.k_min': must not exceed matching.k_max")
    check_msr(cfg["msr"], "msr")
    for name, spec in cfg["models"].items():
        key = f"models.{name}"
        check_msr({**cfg["msr"], **{k: spec[k] for k in MSR_KEYS if k in spec}}, key)
        if spec["backend"] not in BACKENDS:
            raise ConfigError(f"config key '{key}.backend': unknown backend {spec['backend']!r}; "
                              f"known: {', '.join(BACKENDS.names())}")
        try:
            check_model_keys(name, spec, key)
        except ModelKeyError as exc:
            raise ConfigError(str(exc)) from None
        if "cutoff" not in spec:
            if "msr" in spec["studies"]:
                raise ConfigError(f"config key '{key}.cutoff': required for the MSR study (a "
                                  "model only in the copyright study sets studies: [copyright])")
        else:
            try:
                dt.date.fromisoformat(spec["cutoff"])
            except ValueError:
                raise ConfigError(f"config key '{key}.cutoff': not a date (YYYY-MM-DD): "
                                  f"{spec['cutoff']!r}") from None
        for i, s in enumerate(spec.get("sources", [])):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key '{key}.sources.{i}': unknown source {s!r}")
        if backend_facts(spec["backend"])["needs_model_file"]:
            if "model_file" not in spec:
                raise ConfigError(f"config key '{key}.model_file': required by backend "
                                  f"{spec['backend']!r}")
            try:
                locate(spec["model_file"], key=f"{key}.model_file")
            except ModelFileError as exc:
                raise ConfigError(f"config key {exc}") from None
    from copyprobe.experiments import check as check_experiments

    check_experiments(cfg)
    _check_copyright(cfg)


def _check_copyright(cfg: Mapping[str, Any]) -> None:
    """The copyright block: benchmark names, material sources, seed files, the judge's backend,
    and at least one model in the study when a benchmark is configured."""
    from copyprobe.generation.base import BACKENDS

    block = cfg["copyright"]
    for name in cfg["sources"]:
        if name.startswith(COPYRIGHT_PREFIX):
            raise ConfigError(f"config key 'sources.{name}': names starting with "
                              f"{COPYRIGHT_PREFIX!r} are kept for the copyright benchmarks")
    for name, bench in block["benchmarks"].items():
        key = f"copyright.benchmarks.{name}"
        if not NAME_RE.match(name):
            raise ConfigError(f"config key '{key}': names may use letters, digits, '_', '.', "
                              "'-' only")
        for i, s in enumerate(bench["materials"]):
            if s not in cfg["sources"]:
                raise ConfigError(f"config key '{key}.materials.{i}': unknown source {s!r}")
        if bench["queries"] is not None and not Path(bench["queries"]).exists():
            raise ConfigError(f"config key '{key}.queries': no such file or folder "
                              f"{bench['queries']!r}")
        extra = [f for f in bench["benign_forms"] or [] if f not in bench["forms"]]
        if extra:
            raise ConfigError(f"config key '{key}.benign_forms': {extra} not in its forms "
                              f"{bench['forms']}")
        image_forms = [f for f in bench["forms"] if f.startswith("image_")]
        if image_forms and not bench["images"]:
            raise ConfigError(f"config key '{key}.forms': {image_forms} draw the notice into "
                              "the image: they need images: true")
    if block["benchmarks"] and not copyright_models(cfg):
        raise ConfigError("config key 'copyright.benchmarks': no model runs the copyright "
                          "study (give a model studies: [copyright])")
    judge = block["judge"]
    if judge is not None:
        if "backend" not in judge:
            raise ConfigError("config key 'copyright.judge.backend': required (e.g. llamacpp, "
                              "openai)")
        if judge["backend"] not in BACKENDS:
            raise ConfigError(f"config key 'copyright.judge.backend': unknown backend "
                              f"{judge['backend']!r}; known: {', '.join(BACKENDS.names())}")


def check_msr(msr: Mapping[str, Any], key: str) -> None:
    """MSR settings that the schema cannot check: ``n`` even, ``num_words`` at least ``n``
    (``key`` is the config key the settings come from, for the message)."""
    if msr["n"] % 2:
        raise ConfigError(f"config key '{key}.n': must be even (got {msr['n']}): the held-out "
                          "last segment must fall on an assistant turn")
    if msr["num_words"] < msr["n"]:
        raise ConfigError(f"config key '{key}.num_words': must be at least n ({msr['n']})")


def _duplicate_keys(node: yaml.Node, path: list[Any], where: str, seen: set[int]) -> None:
    """Raise ConfigError at the first mapping key given twice (YAML would keep the last)."""
    if id(node) in seen:  # an alias of a node already checked
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *anchor" may be overridden
                _duplicate_keys(value_node, path, where, seen)
                continue
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            if key in first:
                raise ConfigError(f"{where}, line {line}: duplicate key "
                                  f"{_key([*path, key])!r} (first at line {first[key]})")
            first[key] = line
            _duplicate_keys(value_node, [*path, key], where, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _duplicate_keys(item, [*path, i], where, seen)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A config file (YAML or JSON) as a dict; a key given twice in one mapping is an error
    naming the file, the line and the key, where YAML would silently keep the last value."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _duplicate_keys(node, [], str(path), set())
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid YAML: {detail}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys at the top level, "
                          f"got a {type(raw).__name__}")
    return raw


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file (see :func:`read_config_file`) and validate it."""
    raw = read_config_file(path)
    try:
        return validate_config(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# ---- slices handed to the workflow scripts ---------------------------------------------------

def msr_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models in the MSR study (``studies`` includes msr, the default)."""
    return [m for m, spec in cfg["models"].items() if "msr" in spec.get("studies", ["msr"])]


def copyright_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models in the copyright study."""
    return [m for m, spec in cfg["models"].items() if "copyright" in spec.get("studies", [])]


def guard_pairs(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Each guarded copyright model (an entry with a ``guard`` block) and its base: the one
    entry that is the same without the block (a guarded model without one is left out)."""
    models = {m: cfg["models"][m] for m in copyright_models(cfg)}
    pairs = {}
    for name, spec in models.items():
        if not spec.get("guard"):
            continue
        rest = {k: v for k, v in spec.items() if k != "guard"}
        bases = [m for m, s in models.items() if not s.get("guard") and s == rest]
        if len(bases) == 1:
            pairs[name] = bases[0]
    return pairs


def head_node_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models whose generation jobs run on the head node: with ``api_jobs_on_head_node``,
    every model of a remote backend; none without it."""
    from copyprobe.generation.base import backend_facts

    if not cfg.get("api_jobs_on_head_node", False):
        return []
    return [m for m, spec in cfg["models"].items() if backend_facts(spec["backend"])["remote"]]


def judge_on_head_node(cfg: Mapping[str, Any]) -> bool:
    """Whether the copyright judge's jobs run on the head node: with ``api_jobs_on_head_node``
    and a judge of a remote backend."""
    from copyprobe.generation.base import backend_facts

    judge = cfg.get("copyright", {}).get("judge")
    return bool(cfg.get("api_jobs_on_head_node", False) and judge is not None
                and backend_facts(judge["backend"])["remote"])


def copyright_source(benchmark: str) -> str:
    """The name under which a benchmark's prompts and generations are kept (the generation
    layer's ``{source}``)."""
    return f"{COPYRIGHT_PREFIX}{benchmark}"


def model_sources(cfg: Mapping[str, Any], model: str) -> list[str]:
    """The MSR sources a model is run on: its own list, else every source used by a dataset
    (none for a model outside the MSR study)."""
    spec = cfg["models"][model]
    if "msr" not in spec.get("studies", ["msr"]):
        return []
    if "sources" in spec:
        return list(spec["sources"])
    used = {s for members in cfg["datasets"].values() for s in members}
    return sorted(used)


def model_datasets(cfg: Mapping[str, Any], model: str) -> list[str]:
    """Datasets whose every source the model runs on."""
    mine = set(model_sources(cfg, model))
    return [d for d, members in cfg["datasets"].items() if set(members) <= mine]


def model_slice(cfg: Mapping[str, Any], model: str) -> dict[str, Any]:
    """Everything the per-model steps need: model spec with MSR settings merged in."""
    spec = copy.deepcopy(dict(cfg["models"][model]))
    msr = {k: spec.pop(k, cfg["msr"][k]) for k in MSR_KEYS}
    if "price" not in spec and spec.get("model_id") in cfg.get("prices", {}):
        spec["price"] = dict(cfg["prices"][spec["model_id"]])
    return {"name": model, "msr": msr, "cache_dir": cfg["cache_dir"], **spec}


def source_cutoffs(cfg: Mapping[str, Any], source: str) -> list[str]:
    """The distinct model cutoffs (ISO dates) a source needs: all of them for kinds declared
    ``uses_cutoffs``, none for the others."""
    from copyprobe.sources.base import uses_cutoffs

    if not uses_cutoffs(cfg["sources"][source]["kind"]):
        return []
    return sorted({str(m["cutoff"]) for m in cfg["models"].values() if "cutoff" in m})


def prompt_cut_at(cfg: Mapping[str, Any], source: str) -> str | None:
    """The marker at which the prompt builder cuts a source's texts: the generic ``cut_at``,
    unless the source's kind takes ``cut_at`` itself (it has already cut, at a heading)."""
    spec = cfg["sources"][source]
    if "cut_at" in source_kind_params().get(spec["kind"], set()):
        return None
    return spec.get("cut_at")


def source_spec(cfg: Mapping[str, Any], source: str) -> dict[str, Any]:
    """A source's kind params. The generic ``cut_at`` goes only to kinds whose schema block
    lists it, and only when set (null: the kind's own default)."""
    spec = dict(cfg["sources"][source])
    cut_at = spec.pop("cut_at", None)
    if cut_at is not None and "cut_at" in source_kind_params().get(spec["kind"], set()):
        spec["cut_at"] = cut_at
    return spec
