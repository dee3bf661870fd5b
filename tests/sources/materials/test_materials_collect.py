"""The materials kinds through the config schema and ``copyprobe collect``: the tables written
carry category and rights columns with the corpus schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from copyprobe.artifacts import CORPUS, read_table
from copyprobe.cli import main
from copyprobe.config import ConfigError, validate_config
from copyprobe.sources import SOURCES, SourceError, build_source

KINDS = ["copyright_dataset", "web_pages", "package_docs"]
WORDS = "one two three four five six seven eight nine ten"


def _config(tmp_path: Path, sources: dict) -> dict:
    return {"sources": sources, "datasets": {"d": list(sources)},
            "models": {"m": {"backend": "openai", "cutoff": "2024-06-30", "model_id": "x",
                             "api_key_env": "NO_SUCH_KEY_VAR", "api_key_optional": True,
                             "base_url": "http://127.0.0.1:9/v1"}}}


@pytest.mark.parametrize("kind", KINDS)
def test_schema_block_lists_the_params_the_source_knows(kind):
    from copyprobe.config import source_kind_params

    assert source_kind_params()[kind] == set(SOURCES.get(kind).known_params)


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_param_is_refused_by_name(kind):
    known = sorted(SOURCES.get(kind).known_params)
    with pytest.raises(SourceError) as info:
        build_source("s", {"kind": kind, "limt": 3})
    assert str(info.value) == f"source {kind}: unknown param(s) ['limt']; known: {known}"


@pytest.mark.parametrize("source, match", [
    ({"kind": "copyright_dataset", "path": "x", "categores": ["news"]},
     r"unknown config key 'sources\.s\.categores'"),
    ({"kind": "copyright_dataset", "path": "x", "limit": {"news": 0}}, r"'sources\.s\.limit'"),
    ({"kind": "web_pages"}, r"'urls' is a required"),
    ({"kind": "web_pages", "urls": [{"url": "http://a.example/", "year": 2020, "by": "x"}],
      "user_agent": "t"}, r"'sources\.s\.urls'"),
    ({"kind": "package_docs", "published": "soon"}, r"'sources\.s\.published'"),
])
def test_schema_checks_the_kind_params_at_startup(tmp_path, source, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(_config(tmp_path, {"s": source}))


def test_collect_a_dataset_and_web_pages(tmp_path, pages_server, capsys):
    cat = tmp_path / "rel" / "dataset" / "news_copyright"
    cat.mkdir(parents=True)
    (cat / "A_story_text.txt").write_text(f"A story. {WORDS}\n© 2024 Daily Paper\n")
    url = pages_server.page("/p", "<html><head><title>Page</title></head><body><article><p>"
                            + f"{WORDS} " * 8 + "</p></article></body></html>")
    sources = {
        "released": {"kind": "copyright_dataset", "path": str(tmp_path / "rel")},
        "pages": {"kind": "web_pages", "urls": [{"url": url, "category": "news", "holder": "Web Co",
                                                 "year": 2022}],
                  "user_agent": "copyprobe-test/0 (t@example.org)",
                  "max_requests_per_second": 100, "cache_dir": str(tmp_path / "cache")},
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(_config(tmp_path, sources)))
    validate_config(yaml.safe_load(cfg.read_text()))
    rows = {}
    for name in sources:
        out = tmp_path / "out" / f"{name}.parquet"
        out.parent.mkdir(exist_ok=True)
        assert main(["collect", str(cfg), "--source", name, "--out", str(out)]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["documents"], summary["skipped"]) == (1, 0)
        rows[name] = read_table(out, CORPUS).iloc[0]
    rel = rows["released"]
    assert (rel["title"], rel["category"], rel["rights_holder"], rel["rights_year"]) == (
        "A story", "news", "Daily Paper", 2024)
    assert rel["text"] == f"A story. {WORDS}"
    page = rows["pages"]
    assert (page["category"], page["rights_holder"], page["rights_year"], page["url"]) == (
        "news", "Web Co", 2022, url)
