"""Typed configuration: JSON-Schema validation with defaults, semantic checks, per-model slices.

Reference: docs/architecture.md.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from copyprobe.studies import Study, studies

#: The core's config schema ships inside the package, so ``pip install .`` validates configs
#: too; each study adds its own blocks (:meth:`copyprobe.studies.Study.schema`).
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "config_schema.yaml"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: The run of a model without overrides (every model runs it; a study may add others).
MAIN = "main"


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
    """The full config schema: the core's with every registered study's fragment composed in
    (:func:`compose_schema`); with ``path``, that one file as it is."""
    if path is not None:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    return compose_schema(studies())


def compose_schema(registered: Sequence[Study]) -> dict[str, Any]:
    """The core schema with each study's ``properties`` (top-level blocks) and
    ``model_properties`` (keys of a model entry) added, and the names a model's ``studies``
    takes (and its default) drawn from the studies that run models."""
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = yaml.safe_load(f)
    top = schema["properties"]
    model = top["models"]["additionalProperties"]["properties"]
    for study in registered:
        fragment = study.schema()
        for where, block in (("properties", top), ("model_properties", model)):
            for key, sub in fragment.get(where, {}).items():
                if key in block:
                    raise ValueError(f"study {study.name!r}: its schema key {key!r} "
                                     f"({where}) is already in the config schema")
                block[key] = sub
    members = [s.name for s in registered if s.runs_models]
    if members:
        model["studies"]["items"]["enum"] = members
    default = [s.name for s in registered if s.default_for_models]
    if default:
        model["studies"]["default"] = default
    return schema


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
    """Return a validated deep copy of ``config`` with defaults filled in, or raise ConfigError.

    The schema (the core's and every study's), then each study's :meth:`~Study.add_implied`, the
    shared checks, each study's :meth:`~Study.check`, and each source's kind params."""
    cfg: dict[str, Any] = _iso_dates(copy.deepcopy(dict(config)))
    registered = studies()
    schema = load_schema(schema_path) if schema_path is not None else compose_schema(registered)
    _first_error(_Validator(schema, format_checker=jsonschema.FormatChecker()), cfg)
    for study in registered:
        study.add_implied(cfg)
    _shared_checks(cfg)
    for study in registered:
        study.check(cfg)
    _check_source_params(cfg, schema)
    return cfg


def check_names(cfg: Mapping[str, Any], sections: Sequence[str]) -> None:
    """The names under each of ``sections`` are usable in paths and wildcards."""
    for section in sections:
        for name in cfg.get(section, {}):
            if not NAME_RE.match(name):
                raise ConfigError(f"config key '{section}.{name}': names may use letters, digits, "
                                  "'_', '.', '-' only")


def check_model_entry(spec: Mapping[str, Any], key: str) -> None:
    """``spec`` (a model entry written outside ``models``, such as a judge) has only the keys
    a model entry may have, with valid values; an unknown or invalid key is a ConfigError
    naming it under ``key``. ``spec`` itself is left as it is (no defaults filled in)."""
    entry = load_schema()["properties"]["models"]["additionalProperties"]
    _first_error(_Validator(entry, format_checker=jsonschema.FormatChecker()),
                 copy.deepcopy(dict(spec)), tuple(key.split(".")))


def check_backend(spec: Mapping[str, Any], key: str) -> None:
    """A model entry's (or a judge's) backend is registered."""
    from copyprobe.generation.base import BACKENDS

    if spec["backend"] not in BACKENDS:
        raise ConfigError(f"config key '{key}.backend': unknown backend {spec['backend']!r}; "
                          f"known: {', '.join(BACKENDS.names())}")


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


def _shared_checks(cfg: dict[str, Any]) -> None:
    """What every study relies on: names, source kinds, and each model's backend, cutoff and
    model file."""
    # Only the registries' declarations are read: no backend or source module is imported.
    from copyprobe.generation.base import backend_facts
    from copyprobe.generation.model_keys import ModelKeyError, check_model_keys
    from copyprobe.models import ModelFileError, locate
    from copyprobe.sources.base import SOURCES

    check_names(cfg, ("sources", "models"))
    _check_span_indexes(cfg)
    for name, spec in cfg["sources"].items():
        if spec["kind"] not in SOURCES:
            raise ConfigError(f"config key 'sources.{name}.kind': unknown source kind "
                              f"{spec['kind']!r}; known: {', '.join(SOURCES.names())}")
    for name, spec in cfg["models"].items():
        key = f"models.{name}"
        check_backend(spec, key)
        try:  # a key that the entry's backend does not read, naming the backends that do
            check_model_keys(name, spec, key)
        except ModelKeyError as exc:
            raise ConfigError(str(exc)) from None
        if "cutoff" in spec:
            try:
                dt.date.fromisoformat(spec["cutoff"])
            except ValueError:
                raise ConfigError(f"config key '{key}.cutoff': not a date (YYYY-MM-DD): "
                                  f"{spec['cutoff']!r}") from None
        if backend_facts(spec["backend"])["needs_model_file"]:
            if "model_file" not in spec:
                raise ConfigError(f"config key '{key}.model_file': required by backend "
                                  f"{spec['backend']!r}")
            try:
                locate(spec["model_file"], key=f"{key}.model_file")
            except ModelFileError as exc:
                raise ConfigError(f"config key {exc}") from None


def _check_span_indexes(cfg: Mapping[str, Any]) -> None:
    """``spans.indexes``: names usable in paths (any: the engine only sees neutral symlinks), corpora
    that are sources or existing paths (after the studies' expand: MSR datasets are sources
    by then)."""
    from copyprobe.spans.config import indexes

    for name, spec in indexes(cfg).items():
        key = f"spans.indexes.{name}"
        if not NAME_RE.match(name):
            raise ConfigError(f"config key '{key}': names may use letters, digits, '_', '.', "
                              "'-' only")
        if spec.get("unit") == "tokens" and not spec.get("tokenizer"):
            raise ConfigError(f"config key '{key}.tokenizer': required by unit 'tokens' (a "
                              "GGUF model file, a tokenizer.json or a model folder)")
        if spec.get("tokenizer") and spec.get("unit") != "tokens":
            raise ConfigError(f"config key '{key}.tokenizer': only the unit 'tokens' takes a "
                              f"tokenizer (this index's unit is {spec.get('unit')!r})")
        if spec.get("tokenizer") and not Path(spec["tokenizer"]).exists():
            raise ConfigError(f"config key '{key}.tokenizer': {spec['tokenizer']!r} is not an "
                              "existing file or folder")
        for i, item in enumerate(spec["corpora"]):
            if item not in cfg["sources"] and not Path(item).exists():
                raise ConfigError(f"config key '{key}.corpora.{i}': {item!r} is neither a "
                                  "source (sources), a dataset, nor an existing file or folder")


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

def head_node_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models whose generation jobs run on the head node: with ``api_jobs_on_head_node``,
    every model of a remote backend; none without it."""
    from copyprobe.generation.base import backend_facts

    if not cfg.get("api_jobs_on_head_node", False):
        return []
    return [m for m, spec in cfg["models"].items() if backend_facts(spec["backend"])["remote"]]


def model_slice(cfg: Mapping[str, Any], model: str) -> dict[str, Any]:
    """Everything the per-model steps need: the model's entry, its price from the price table
    (when it sets none), and what each study adds (:meth:`~Study.slice_model`: MSR moves its
    settings under ``msr``)."""
    spec = copy.deepcopy(dict(cfg["models"][model]))
    added: dict[str, Any] = {}
    for study in studies():
        added.update(study.slice_model(cfg, spec))
    if "price" not in spec and spec.get("model_id") in cfg.get("prices", {}):
        spec["price"] = dict(cfg["prices"][spec["model_id"]])
    return {"name": model, **added, "cache_dir": cfg["cache_dir"], **spec}


def variant_names(cfg: Mapping[str, Any]) -> list[str]:
    """Every run name of the config, :data:`MAIN` first, then each study's
    (:meth:`~Study.variants`)."""
    return [MAIN, *(v for study in studies() for v in study.variants(cfg))]


def run_slice(cfg: Mapping[str, Any], model: str, variant: str) -> dict[str, Any]:
    """A run's slice, what its generation jobs get: :func:`model_slice` with each study's
    overrides for ``variant`` (:meth:`~Study.slice_run`) and the ``variant`` name."""
    spec = model_slice(cfg, model)
    for study in studies():
        study.slice_run(cfg, model, variant, spec)
    spec["variant"] = variant
    return spec


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


def model_entry(path: str, flag: str = "--model-config") -> tuple[str, dict[str, Any]]:
    """(name, entry) of a model-config YAML file given as ``flag``: one entry with a
    ``backend``, or a mapping of one name to such an entry; errors (SystemExit) name the
    flag and the file."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SystemExit(f"copyprobe: {flag} {p}: cannot read it ({exc.strerror})") \
            from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SystemExit(f"copyprobe: {flag} {p}: not YAML ({exc})") from None
    name = "model"
    if isinstance(data, dict) and "backend" not in data and len(data) == 1:
        (key, entry), = data.items()
        if isinstance(entry, dict):
            name, data = str(key), entry
    if not isinstance(data, dict) or "backend" not in data:
        raise SystemExit(f"copyprobe: {flag} {p}: expected a model entry with a "
                         "'backend' (e.g. backend: llamacpp, model_file: {path: m.gguf})")
    data = dict(data)
    # a model_id of "./x" or "../x" is a folder relative to the model-config file's own
    # (membership-train writes model_id: ./model), so the two can be moved together
    mid = data.get("model_id")
    if isinstance(mid, str) and mid.startswith(("./", "../")):
        data["model_id"] = str((p.parent / mid).resolve())
    return name, data
