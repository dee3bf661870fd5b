"""``copyprobe collect``: one configured source outside Snakemake, its three tables and a JSON
summary; a bad key or an unreachable server is one clear line and exit status 1."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import CORPUS, MANIFEST, SKIPPED, read_table
from copyprobe.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, source: dict) -> Path:
    cfg = {"sources": {"docs": source}, "datasets": {"d": ["docs"]},
           "models": {"m": {"backend": "openai", "cutoff": "2024-06-30", "model_id": "x",
                            "api_key_env": "NO_SUCH_KEY_VAR", "api_key_optional": True,
                            "base_url": "http://127.0.0.1:9/v1"}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _docs(tmp_path: Path) -> Path:
    src = ROOT / "resources" / "control_documents"
    docs = tmp_path / "docs"
    docs.mkdir()
    meta = pd.read_csv(src / "metadata.csv").head(3)
    for f in meta["file"]:
        shutil.copy(src / f, docs / f)
    (docs / "stray.md").write_text("not listed in the table")
    meta.to_csv(docs / "metadata.csv", index=False)
    return docs


def test_collect_writes_three_tables_and_prints_a_summary(tmp_path, capsys):
    docs = _docs(tmp_path)
    cfg = _config(tmp_path, {"kind": "local", "path": str(docs), "on_error": "skip"})
    out = tmp_path / "out" / "docs.parquet"
    out.parent.mkdir()
    assert main(["collect", str(cfg), "--source", "docs", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["source"] == "docs" and summary["documents"] == 3
    assert summary["skipped"] == 1 and summary["reasons"] == {"not listed in metadata": 1}
    corpus = read_table(out, CORPUS)
    manifest = read_table(summary["manifest_file"], MANIFEST)
    assert summary["manifest_file"] == str(out.with_name("docs.manifest.parquet"))
    assert len(read_table(summary["skipped_file"], SKIPPED)) == 1
    assert list(manifest["doc_id"]) == list(corpus["doc_id"])
    import hashlib

    assert manifest["text_sha256"][0] == hashlib.sha256(corpus["text"][0].encode()).hexdigest()


def test_collect_bad_key_and_unknown_source_are_one_line(tmp_path, capsys):
    cfg = _config(tmp_path, {"kind": "local", "path": "docs", "limt": 4})
    with pytest.raises(SystemExit, match=r"sources\.docs.*limt"):
        main(["collect", str(cfg), "--source", "docs", "--out", str(tmp_path / "c.parquet")])
    cfg = _config(tmp_path, {"kind": "local", "path": str(_docs(tmp_path))})
    with pytest.raises(SystemExit, match=r"source 'nope' is not in .*known: docs"):
        main(["collect", str(cfg), "--source", "nope", "--out", str(tmp_path / "c.parquet")])


def test_collect_reports_a_source_error_naming_the_file(tmp_path, capsys):
    docs = _docs(tmp_path)
    cfg = _config(tmp_path, {"kind": "local", "path": str(docs)})  # on_error: raise
    assert main(["collect", str(cfg), "--source", "docs",
                 "--out", str(tmp_path / "c.parquet")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("copyprobe: ") and "stray.md" in err and err.count("\n") == 1
    assert not (tmp_path / "c.parquet").exists()


def test_a_server_failure_becomes_a_source_error(tmp_path, monkeypatch):
    """The path every crawler shares: a FetchError from the HTTP layer is reported as a
    SourceError naming the source (the crawler tests provoke real ones)."""
    from copyprobe.sources import collect as collect_mod
    from copyprobe.sources.base import SourceError
    from copyprobe.web import WebSettings, polite_session

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    class Failing:
        def load(self, name):
            s = polite_session(WebSettings(user_agent="t", max_retries=0))
            s.get(f"http://127.0.0.1:{port}/api.php")

    monkeypatch.setattr(collect_mod, "build_source", lambda *a: Failing())
    with pytest.raises(SourceError, match=rf"source 'w': GET http://127.0.0.1:{port}/api.php"):
        collect_mod.collect("w", {"kind": "x"})
