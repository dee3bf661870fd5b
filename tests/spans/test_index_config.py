"""The config of span indexes: spans.indexes entries get their defaults, an MSR dataset stands
for its sources, a copyright benchmark brings copyright-<benchmark>, msr.attribution names a
configured index, and bad names or corpora are errors naming the key; the rules' inputs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from copyprobe.config import ConfigError, validate_config
from copyprobe.spans.inputs import SpanInputs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cfg(demo_full_config) -> dict:
    raw = demo_full_config()  # the demo's sources with the Wikipedia leads
    raw["datasets"]["both"] = ["licences", "controls"]
    return raw


def test_defaults_datasets_and_attribution(cfg, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    cfg["spans"] = {"indexes": {"ix": {"corpora": ["both", "wikipedia", str(folder)],
                                       "shards": 3}}}
    cfg["msr"]["attribution"] = {"index": "ix"}
    out = validate_config(cfg)
    # "both" is a dataset (its sources), "wikipedia" a source (also a dataset's name)
    assert out["spans"]["indexes"]["ix"] == {
        "corpora": ["licences", "controls", "wikipedia", str(folder)], "unit": "words",
        "shards": 3, "cpus": 1, "mem_gb": 2}
    assert out["msr"]["attribution"] == {"index": "ix", "min_words": 8, "max_docs": 5}
    inputs = SpanInputs(out)
    assert inputs.corpora("ix") == ["results/corpus/licences.parquet",
                                    "results/corpus/controls.parquet",
                                    "results/corpus/wikipedia.parquet", str(folder)]
    assert inputs.prepared("ix")[:2] == ["results/spans/ix/prepare.json",
                                         "results/spans/ix/shard-00000-of-00003/tokenized.0"]
    w = SimpleNamespace(index="ix", shard="00002-of-00003")
    assert inputs.index_shards(w)[-1] == "results/spans/ix/shard-00002-of-00003/build.json"
    assert inputs.shard_mem_mb(w) == 3072 and inputs.shard_threads(w) == 1
    assert inputs.shard_runtime(w, 2) == 480
    assert inputs.shard_params(w)["builder"] == "auto"  # no builder key: auto
    cfg["spans"]["indexes"]["ix"]["builder"] = "copyprobe"
    assert SpanInputs(validate_config(cfg)).shard_params(w)["builder"] == "copyprobe"


@pytest.mark.parametrize("indexes, attribution, message", [
    ({"ix": {"corpora": ["nope"]}}, None, r"'spans\.indexes\.ix\.corpora\.0': 'nope' is neither"),
    ({"a b": {"corpora": ["licences"]}}, None, r"'spans\.indexes\.a b': names may use"),
    ({"ix": {"corpora": []}}, None, r"spans\.indexes\.ix\.corpora"),
    ({"ix": {"corpora": ["licences"], "unit": "bytes"}}, None, r"spans\.indexes\.ix\.unit"),
    ({"ix": {"corpora": ["licences"], "builder": "sais"}}, None,
     r"spans\.indexes\.ix\.builder"),
    ({}, {"index": "ix"}, r"'msr\.attribution\.index': no span index 'ix'"),
    ({"ix": {"corpora": ["licences"], "unit": "tokens"}}, None,
     r"'spans\.indexes\.ix\.tokenizer': required by unit 'tokens'"),
    ({"ix": {"corpora": ["licences"], "tokenizer": "config"}}, None,
     r"'spans\.indexes\.ix\.tokenizer': only the unit 'tokens' takes a tokenizer"),
    ({"ix": {"corpora": ["licences"], "unit": "tokens", "tokenizer": "no/such.gguf"}}, None,
     r"'spans\.indexes\.ix\.tokenizer': 'no/such\.gguf' is not an existing file"),
])
def test_errors_name_the_key(cfg, indexes, attribution, message):
    cfg["spans"] = {"indexes": indexes}
    cfg["msr"]["attribution"] = attribution
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)


def test_an_index_may_be_named_like_the_engines_file_kinds(cfg):
    """The engine tells its files apart by words in their path, but it only ever sees neutral
    symlinks (tests/spans/test_build.py): a benchmark named ``tables`` keeps its index."""
    cfg["spans"] = {"indexes": {"my-tables": {"corpora": ["licences"]}}}
    assert "my-tables" in validate_config(cfg)["spans"]["indexes"]


def test_a_token_index_names_its_tokenizer(cfg, tmp_path):
    tok = tmp_path / "tokenizer.json"
    tok.write_text("{}")
    cfg["spans"] = {"indexes": {"ix": {"corpora": ["licences"], "unit": "tokens",
                                       "tokenizer": str(tok)}}}
    inputs = SpanInputs(validate_config(cfg))
    assert inputs.tokenizer("ix") == str(tok) and inputs.tokenizer_inputs("ix") == [str(tok)]
    assert inputs.index_tokenizer(SimpleNamespace(index="ix")) == str(tok)


def test_a_copyright_benchmark_brings_its_index_unless_given():
    raw = yaml.safe_load((ROOT / "config" / "copyright_demo.yaml").read_text())
    out = validate_config(raw)
    bench = next(iter(out["copyright"]["benchmarks"]))
    materials = out["copyright"]["benchmarks"][bench]["materials"]
    assert out["spans"]["indexes"][f"copyright-{bench}"]["corpora"] == materials
    assert out["copyright"]["attribution"] is None  # off unless asked for
    raw["spans"] = {"indexes": {f"copyright-{bench}": {"corpora": materials, "shards": 2}}}
    assert validate_config(raw)["spans"]["indexes"][f"copyright-{bench}"]["shards"] == 2
