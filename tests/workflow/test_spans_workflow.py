"""Span indexes and MSR attribution through Snakemake, on a tiny config whose model is a
scripted loopback chat server (no model run): the run plans one job per shard, builds a
2-shard index and the attribution table (a cross-document span, an echo of the prompt, a
post-to-pre leak) and a copyright benchmark's attribution over its implicit index (the
responses reproduce their material); then one document changes, its source is collected again
(a new corpus file, new retrieval times) and the index rebuilds the suffix array of that
document's shard only: the other shard's documents are the same, and its stored build is
reused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from copyprobe.artifacts import read_table
from copyprobe.copyright.attribution import COPYRIGHT_ATTRIBUTION
from copyprobe.msr.attribution import MSR_ATTRIBUTION, MSR_SPANS

pytestmark = pytest.mark.slow


def words(prefix: str, a: int, b: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(a, b))


#: file -> (published, text): two D_pre documents and one D_post document of one source, which
#: are the copyright benchmark's materials too
DOCS = {"a.txt": ("2020-01-01", words("aa", 0, 60)),
        "b.txt": ("2020-01-01", words("bb", 0, 60)),
        "c.txt": ("2025-01-01", words("cc", 0, 60))}


def answer(body: dict) -> str:
    messages = body["messages"]
    shown = " ".join(m["content"] if isinstance(m["content"], str)
                     else " ".join(p.get("text", "") for p in m["content"]) for m in messages)
    if all(m["role"] != "system" for m in messages):  # a copyright request: its material
        prefix = next(p for p in ("aa", "bb", "cc") if f"{p}0 " in shown)
        return f"Sure. {words(prefix, 0, 20)}"
    if "aa0 " in shown:  # a: b's words (cross-document), then its own held-out words
        return f"Here it is: {words('bb', 20, 40)} and {words('aa', 30, 42)}"
    if "bb0 " in shown:  # b: an echo of its prompt
        return words("bb", 10, 30)
    return f"Well. {words('aa', 40, 60)}"  # c (D_post): a's words, a leak


def snakemake(wd: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SPANS_TEST_KEY": "unused"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


def shard_logs(wd: Path, index: str) -> dict[str, str]:
    out = {}
    for log in sorted((wd / "logs/span_index_shard" / index).glob("*.log")):
        text = log.read_text()
        out[log.stem] = "reused" if "reused the stored" in text else (
            "built" if "built the suffix array" in text else "?")
    return out


@pytest.fixture(scope="module")
def ran(tmp_path_factory, workflow_copy, server_module):
    wd = workflow_copy(tmp_path_factory.mktemp("spans-wf"), documents=0, folder="unused")
    (wd / "docs").mkdir()
    for name, (_, text) in DOCS.items():
        (wd / "docs" / name).write_text(text + "\n")
    pd.DataFrame([{"file": f, "title": f, "published": p} for f, (p, _) in DOCS.items()]
                 ).to_csv(wd / "docs" / "metadata.csv", index=False)
    with server_module("scripted_chat").ScriptedChatServer(answer, latency=0.0) as srv:
        cfg = {
            "cache_dir": str(wd / "cache"),
            "statistics": {"n_boot": 200},
            "sources": {"docs": {"kind": "local", "path": "docs"}},
            "datasets": {"d": ["docs"]},
            "copyright": {"benchmarks": {"b": {"materials": ["docs"], "per_task": 1,
                                               "benign": False, "forms": ["none"],
                                               "images": False}},
                          "attribution": {"min_words": 8}},
            "msr": {"n": 2, "attribution": {"index": "msr-ix", "min_words": 8}},
            "spans": {"indexes": {"msr-ix": {"corpora": ["d"], "shards": 2}}},
            "models": {"api": {"backend": "openai", "base_url": srv.base_url,
                               "api_key_env": "SPANS_TEST_KEY", "model_id": "scripted",
                               "cutoff": "2024-06-30", "studies": ["msr", "copyright"]}},
        }
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
        first = snakemake(wd, "results/tables/msr_attribution.md",
                          "results/copyright/b/tables/attribution_api.md")
    return wd, first


def test_the_run_plans_one_job_per_shard(ran):
    _, first = ran
    counts = dict(re.findall(r"^(\w[\w.-]*)\s+(\d+)$", first, flags=re.MULTILINE))
    # msr-ix's two shards and copyright-b's one
    assert counts["span_index_shard"] == "3" and counts["span_index"] == "2"
    assert counts["span_index_prepare_msr-ix"] == "1"
    assert counts["span_index_prepare_copyright-b"] == "1"
    assert counts["msr_attribution"] == "1" and counts["msr_attribution_table"] == "1"


def test_the_index_and_the_attribution_table(ran):
    wd, _ = ran
    ix = wd / "results/spans/msr-ix"
    assert (ix / "index.json").is_file()
    assert sorted(p.name for p in ix.glob("shard-*")) == ["shard-00000-of-00002",
                                                         "shard-00001-of-00002"]
    assert shard_logs(wd, "msr-ix") == {"00000-of-00002": "built", "00001-of-00002": "built"}
    spans = read_table(wd / "results/attribution/api/main/d/spans.parquet", MSR_SPANS)
    summary = read_table(wd / "results/attribution/api/main/d/summary.parquet", MSR_ATTRIBUTION)
    assert len(summary) == 3 and set(summary["status"]) == {"ok"}
    flags = {r.text.split()[0]: (r.in_prompt, r.cross_doc, r.pre_doc)
             for r in spans.itertuples()}
    assert flags == {"bb20": (False, True, True), "aa30": (False, False, False),
                     "bb10": (True, False, False), "aa40": (False, True, True)}
    by = summary.set_index("doc_id")
    assert list(by.loc[by["split"] == "post", "post_to_pre_leak"]) == [True]
    assert not by.loc[by["split"] == "pre", "post_to_pre_leak"].any()
    table = pd.read_csv(wd / "results/tables/msr_attribution.csv").set_index("split")
    assert table.loc["post", "post_to_pre_leaks"] == 1
    assert table.loc["pre", "cross_doc_spans"] == 1 and table.loc["pre", "in_prompt_spans"] == 1
    md = (wd / "results/tables/msr_attribution.md").read_text()
    assert "| d | api | main | post |" in md


def test_copyright_attribution_over_the_benchmarks_index(ran):
    wd, _ = ran
    att = read_table(wd / "results/copyright/b/attribution/api/summary.parquet",
                     COPYRIGHT_ATTRIBUTION)
    assert len(att) == 12 and set(att["status"]) == {"ok"}  # 3 materials x 4 tasks
    assert att["reproduces_own_material"].all()
    assert (att["materials"].map(list) == att["material_id"].map(lambda m: [m])).all()
    assert (att["coverage"] == 20 / 21).all() and set(att["index"]) == {"copyright-b"}
    md = (wd / "results/copyright/b/tables/attribution_api.md").read_text()
    assert "| repetition | none | 3 | 0 | 3 | 1.000 | 1.000 |" in md


def test_only_the_changed_shard_is_built_again(ran):
    wd, _ = ran
    ix = wd / "results/spans/msr-ix"
    assert shard_logs(wd, "msr-ix") == {"00000-of-00002": "built", "00001-of-00002": "built"}
    holder = {s.name.removeprefix("shard-"): set(pd.read_parquet(s / "docs.parquet")["title"])
              for s in ix.glob("shard-*")}
    changed = next(name for name, titles in holder.items() if "c.txt" in titles)
    c = wd / "docs" / "c.txt"
    c.write_text(c.read_text().replace("cc7 ", "cz7 "))  # the same length: the same cuts
    out = snakemake(wd, "results/spans/msr-ix/index.json")
    assert "collect_corpus" in out and "msr_build_prompts" not in out
    expected = {name: "built" if name == changed else "reused" for name in holder}
    assert shard_logs(wd, "msr-ix") == expected
    from copyprobe.spans.workflow import open_index

    index = open_index(ix / "index.json")
    try:
        assert index.count(["cz7", "cc8"]) == 1 and index.count(["cc7"]) == 0
    finally:
        index.close()
