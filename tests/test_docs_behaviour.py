"""What the docs say about behaviour, checked against it: the guard's defaults as /health shows
them, running the workflow from another folder, and where a span index's titles come from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_guard_without_a_config_runs_the_checks_the_docs_name(tmp_path):
    import threading

    from copyprobe.guard.serve import ProxySettings, make_server

    server = make_server(ProxySettings(upstream="http://127.0.0.1:9/v1", guard={},
                                       host="127.0.0.1", port=0, cache_dir=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=10) as r:
            health = json.loads(r.read())
    finally:
        server.shutdown()
        server.server_close()
    shown = (f'`"policy": "{health["policy"]}"`',
             "`\"checks\": {" + ", ".join(f'"{k}": {json.dumps(v)}'
                                         for k, v in health["checks"].items()) + "}`")
    doc = " ".join((ROOT / "docs" / "guard.md").read_text().split())
    for text in shown:
        assert text in doc, text


@pytest.mark.slow
def test_the_workflow_runs_from_another_folder_as_the_readme_says(tmp_path):
    docs = tmp_path / "data" / "mydocs"
    docs.mkdir(parents=True)
    (docs / "metadata.csv").write_text("file,title,published\na.txt,Doc A,2025-01-02\n")
    (docs / "a.txt").write_text("some words of a document")
    (tmp_path / "mine.yaml").write_text(
        "sources:\n  mydocs: {kind: local, path: data/mydocs}\ndatasets:\n  mine: [mydocs]\n"
        "models:\n  m:\n    backend: openai\n    model_id: x\n"
        "    base_url: http://127.0.0.1:9/v1\n    api_key_optional: true\n"
        "    cutoff: '2023-12-31'\n")
    argv = ["-s", str(ROOT / "Snakefile"), "--cores", "1", "--configfile", "mine.yaml",
            "--replace-workflow-config"]
    assert "snakemake " + " ".join(["-s", "/path/to/copyprobe/Snakefile", "--cores", "N",
                                    "--configfile", "mine.yaml", "--replace-workflow-config"]) \
        in " ".join((ROOT / "README.md").read_text().split()).replace("`", "")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", *argv, "-n"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule collect_corpus:" in proc.stdout + proc.stderr


def test_a_local_sources_titles_reach_the_index_from_its_folder_or_corpus_table(tmp_path,
                                                                               capsys):
    """A folder in the local source's layout is indexed with its metadata.csv's titles and
    urls, as is the collected corpus table, as docs/span-index.md says."""
    from copyprobe.cli import main
    from copyprobe.spans.corpus import iter_corpus

    docs = tmp_path / "mydocs"
    docs.mkdir()
    (docs / "metadata.csv").write_text("file,title,published,url\n"
                                       "a.txt,The Harbour Log,2025-01-02,https://x.org/a\n")
    (docs / "a.txt").write_text("the harbour master kept a log of every ship")
    assert [(d.title, d.url) for d in iter_corpus([docs])] == [
        ("The Harbour Log", "https://x.org/a")]
    (tmp_path / "c.yaml").write_text(
        f"sources:\n  mydocs: {{kind: local, path: {docs}}}\ndatasets:\n  mine: [mydocs]\n"
        "models:\n  m: {backend: openai, model_id: x, base_url: 'http://127.0.0.1:9/v1', "
        "api_key_optional: true, cutoff: '2023-12-31'}\n")
    assert main(["collect", str(tmp_path / "c.yaml"), "--source", "mydocs", "--out",
                 str(tmp_path / "corpus.parquet")]) == 0
    capsys.readouterr()
    assert [(d.title, d.url) for d in iter_corpus([tmp_path / "corpus.parquet"])] == [
        ("The Harbour Log", "https://x.org/a")]
    assert ("as title and url those of the file's row in the folder's `metadata.csv`" in
            " ".join((ROOT / "docs" / "span-index.md").read_text().split()))
    assert pd.read_parquet(tmp_path / "corpus.parquet")["title"].tolist() == ["The Harbour Log"]
