"""``copyprobe index build`` and ``copyprobe index find``: JSON out, errors as one line."""

from __future__ import annotations

import json

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
