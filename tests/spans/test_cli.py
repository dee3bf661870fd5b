"""``copyprobe index build``, ``find`` and ``verify``: JSON out, errors as one line, long
queries from a file or standard input, counts below one refused, the build's progress."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from copyprobe import cli


def test_index_build_and_find_print_json(tmp_path, capsys):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.txt").write_text("It was the best of times, it was the worst of times, it "
                                  "was the age of wisdom.", encoding="utf-8")
    (corpus / "b.md").write_text("Nothing to see here at all.", encoding="utf-8")
    out = tmp_path / "idx"
    assert cli.main(["index", "build", str(corpus), "--out", str(out)]) == 0
    built = json.loads(capsys.readouterr().out)
    assert (built["n_docs"], built["shards"], built["unit"], built["reused"]) == (2, 1, "words",
                                                                                 False)
    assert cli.main(["index", "find", str(out), "He said: it was the BEST of times, it was "
                     "the worst of times!", "--min-words", "4", "--max-docs", "1"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["index"]["n_docs"] == 2 and found["words"] == 14
    (span,) = found["spans"]
    assert span["text"] == "it was the best of times it was the worst of times"
    assert (span["word_start"], span["word_end"], span["count"], span["n_docs"]) == (2, 14, 1, 1)
    assert span["docs"] == [{"source": "notes", "doc_id": "a.txt", "title": "a", "url": "",
                             "word_start": 0}]
    assert found["find_s"] >= 0
    # an index built in another unit than asked for: one line naming the manifest
    assert cli.main(["index", "find", str(out), "x", "--unit", "whitespace"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"copyprobe: {out}/index.json: the index was built in unit 'words'")
    assert len(err.strip().splitlines()) == 1


def _built(tmp_path) -> Path:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "it was the best of times it was the worst of "
                                          "times"}) + "\n", encoding="utf-8")
    assert cli.main(["index", "build", str(corpus), "--out", str(tmp_path / "idx")]) == 0
    return tmp_path / "idx"


def test_index_find_reads_a_long_query_from_a_file_or_standard_input(tmp_path, capsys,
                                                                      monkeypatch):
    idx = _built(tmp_path)
    capsys.readouterr()
    query = "Words before. " * 2000 + "It was the best of times, it was the worst of times."
    (tmp_path / "q.txt").write_text(query, encoding="utf-8")
    answers = []
    for argv in (["--query-file", str(tmp_path / "q.txt")], ["--query-file", "-"], ["-"]):
        monkeypatch.setattr(sys, "stdin", io.StringIO(query))
        assert cli.main(["index", "find", str(idx), *argv, "--min-words", "6"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    for found in answers:
        assert found["words"] == 4012
        assert [s["text"] for s in found["spans"]] == [
            "it was the best of times it was the worst of times"]
    for argv, message in [([], "no text to find: give TEXT, --query-file PATH or - "
                               "(standard input)"),
                          (["x", "--query-file", "q.txt"], "give the text to find as TEXT or "
                                                           "with --query-file, not both"),
                          (["--query-file", str(tmp_path / "no.txt")], f"{tmp_path}/no.txt: "
                                                                       "no such query file")]:
        assert cli.main(["index", "find", str(idx), *argv]) == 1
        assert capsys.readouterr().err == f"copyprobe: {message}\n"
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert cli.main(["index", "find", str(idx), "--query-file",
                     str(tmp_path / "latin1.txt")]) == 1
    assert capsys.readouterr().err.startswith(f"copyprobe: {tmp_path}/latin1.txt: not UTF-8")


@pytest.mark.parametrize("option", ["--cpus", "--mem-gb", "--shards"])
@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_index_build_refuses_counts_below_one(tmp_path, capsys, option, value):
    with pytest.raises(SystemExit) as exc:
        cli.main(["index", "build", str(tmp_path), "--out", str(tmp_path / "idx"),
                  option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected a positive integer, got" in err
    assert not (tmp_path / "idx").exists()


def test_index_build_shows_its_progress_on_stderr(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "a few words"}) + "\n" + json.dumps({"text": ""})
                      + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "copyprobe.cli", "index", "build", str(corpus),
                           "--out", str(tmp_path / "idx")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n_docs"] == 1
    err = proc.stderr
    assert "INFO index build: corpora read (MB): 1/1 done" in err
    assert f"WARNING 1 document(s) hold no word in unit 'words' and are skipped: {corpus} line 2 " \
           "(empty text)" in err
    assert "INFO index build: the suffix array of shard 1 of 1" in err
    assert "infini-gram's indexer: Step 2 (build_sa): Done" in err
    assert "INFO index build: suffix arrays (shards): 1/1 done" in err
    assert "INFO index build: checksums and validation" in err
