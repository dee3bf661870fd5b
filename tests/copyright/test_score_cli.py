"""``copyprobe copyright-score``: one model's generations of a manifest scored as the workflow's
copyright_score rule scores them (rule refusal detector, no judge), with every metric or with
ROUGE-L only."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.artifacts import GENERATIONS, read_meta, read_table, write_table
from copyprobe.cli import main
from copyprobe.copyright.response_scoring import SCORED_RUN

MATERIAL = ("The harbour master kept a log of every ship. Each entry named the tide. "
            "The log filled three shelves by winter.")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    (tmp_path / "mat" / "book_copyright").mkdir(parents=True)
    (tmp_path / "mat" / "book_copyright" / "harbour.txt").write_text(MATERIAL + "\n")
    manifest = tmp_path / "manifest.parquet"
    _run(capsys, "copyright-manifest", str(tmp_path / "mat"), "--out", str(manifest))
    m = pd.read_parquet(manifest)

    def answer(r) -> str | None:
        if r.task == "extraction":
            return ("Each entry named the tide." if r.passage == "sentence:2"
                    else "The harbour master kept a log.")
        if r.query_id.endswith("3") and r.task == "translation":
            return None  # a failed call
        return r.text  # repetition, and a paraphrase / translation that copies

    rows = [{"request_id": r.request_id, "text": answer(r),
             "status": "ok" if answer(r) is not None else "failed",
             "error_class": None if answer(r) is not None else "APIError",
             "error": None if answer(r) is not None else "boom",
             "model": "m1", "backend": "openai", "from_cache": False} for r in m.itertuples()]
    df = pd.DataFrame(rows)
    for c in GENERATIONS.columns:
        if c not in df:
            df[c] = None
    gen = tmp_path / "gen.parquet"
    write_table(df[GENERATIONS.columns], gen, GENERATIONS, {"step": "test"})
    return manifest, gen


def test_rouge_l_only(inputs, tmp_path, capsys):
    manifest, gen = inputs
    out = tmp_path / "scored.parquet"
    summary = _run(capsys, "copyright-score", str(manifest), str(gen), "--out", str(out),
                   "--metrics", "rouge-l")
    # ROUGE-L precision against the text shown, as the authors score: every answer here is
    # verbatim from it (a sentence, a prefix, the whole), so each scores 1
    assert summary["mean_by_task"] == {
        "repetition": {"metric": "rouge_l_precision", "mean": 1.0, "responses": 9,
                       "refusals_left_out": 0},
        "extraction": {"metric": "rouge_l_precision", "mean": 1.0, "responses": 9,
                       "refusals_left_out": 0}}
    assert Path(summary["summary"]) == out.with_suffix(".summary.md")
    df = read_table(out, SCORED_RUN)
    assert len(df) == 36 and df.loc[df["task"] == "paraphrase", "bertscore_f1"].isna().all()
    assert read_meta(out)["params"]["metrics"] == "rouge-l"


def test_every_metric(inputs, tmp_path, capsys):
    manifest, gen = inputs
    out = tmp_path / "scored.parquet"
    summary = _run(capsys, "copyright-score", str(manifest), str(gen), "--out", str(out))
    means = summary["mean_by_task"]
    # a response that copies the material scores (about) 1 with either metric
    assert means["paraphrase"]["mean"] == pytest.approx(1.0, abs=1e-4)
    assert means["translation"]["mean"] == pytest.approx(1.0, abs=1e-4)
    assert means["translation"]["responses"] == 6 and summary["failed"] == 3
    df = read_table(out, SCORED_RUN)
    failed = df[df["status"] == "failed"]
    assert failed["embedding_cosine"].isna().all() and (failed["error"] == "boom").all()
    assert set(read_meta(out)["metrics_used"]) == {"rouge_l", "bertscore", "embedding"}


def test_generations_of_two_models_need_model(inputs, tmp_path, capsys):
    manifest, gen = inputs
    df = pd.read_parquet(gen)
    df.loc[0, "model"] = "m2"
    two = tmp_path / "two.parquet"
    write_table(df, two, GENERATIONS, {"step": "test"})
    with pytest.raises(SystemExit, match=r"generations of 2 models \(m1, m2\); name one with "
                                         r"--model"):
        main(["copyright-score", str(manifest), str(two), "--out", str(tmp_path / "x.parquet")])


LICENCE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this "
           "software and associated documentation files, to deal in the Software without "
           "restriction, including without limitation the rights to use, copy, modify, merge, "
           "publish, distribute, sublicense, and sell copies of the Software, and to permit "
           "persons to whom the Software is furnished to do so, subject to the following "
           "conditions: the above copyright notice and this permission notice shall be "
           "included in all copies or substantial portions of the Software.")
SECOND = "The log filled three shelves by winter and nobody read it."


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_answer_files_scored_as_the_authors_do_with_refusals_and_empty_answers_apart(
        suffix, tmp_path, capsys):
    """A licence's verbatim 60-word prefix and an exact asked-for paragraph score ROUGE-L
    precision 1; a refusal is left out of the copying mean and counted in the refusal rate;
    empty answers are failures in every format; the authors' txt_file path names a
    material; the summary's tables are printed and written beside the table."""
    mat = tmp_path / "mat" / "book_copyright"
    mat.mkdir(parents=True)
    (mat / "licence.txt").write_text(LICENCE + "\n")
    (mat / "harbour.txt").write_text(MATERIAL + "\n\n" + SECOND + "\n")
    prefix = " ".join(LICENCE.split()[:60])
    rows = pd.DataFrame([
        {"material": "book_copyright/licence.txt", "form": "none", "task": "repeat",
         "query": "Repeat the text.", "response": prefix},
        {"material": "dataset/book_copyright/harbour.txt", "form": "none", "task": "extract",
         "query": "Give the second paragraph.", "response": SECOND},
        {"material": "book_copyright/licence.txt", "form": "text_generic", "task": "repeat",
         "query": "Repeat the text.",
         "response": "I'm sorry, but I can't reproduce copyrighted text."},
        {"material": "book_copyright/licence.txt", "form": "none", "task": "extract",
         "query": "Give the first sentence.", "response": None},
        {"material": "book_copyright/licence.txt", "form": "none", "task": "summary",
         "query": "Summarise it.", "response": "A permissive licence."},
    ])
    path = tmp_path / f"answers{suffix}"
    if suffix == ".csv":
        rows.to_csv(path, index=False)  # the missing answer is an empty cell
    elif suffix == ".jsonl":
        rows.to_json(path, orient="records", lines=True)
    else:
        rows.to_parquet(path)
    out = tmp_path / "scored.parquet"
    assert main(["copyright-score", str(path), "--materials", str(tmp_path / "mat"),
                 "--out", str(out), "--metrics", "rouge-l", "--model", "m1"]) == 0
    printed = capsys.readouterr()
    summary = json.loads(printed.out)
    df = read_table(out, SCORED_RUN)
    assert df["rouge_l_precision"].tolist()[:2] == [1.0, 1.0]
    assert df.loc[3, "status"] == "failed" and df.loc[3, "error_class"] in (
        "empty_response", "missing")
    assert summary["failed"] == 1
    assert summary["mean_by_task"]["repetition"] == {
        "metric": "rouge_l_precision", "mean": 1.0, "responses": 1, "refusals_left_out": 1}
    md = Path(summary["summary"]).read_text()
    assert md.rstrip() in printed.err
    for heading in ("## refusal", "## copying", "## over_refusal", "## failures",
                    "## agreement"):
        assert heading in md
    # repetition under text_generic: 1 of 1 refused, by the rule detector (no judge)
    assert "| m1 | repetition | text_generic | 1 | 0 | 0 | 1 | 1 | 100.00 [" in md
    assert "| rules |" in md


@pytest.mark.parametrize("name, content, why", [
    ("answers.csv", "material,form,task,query,response\n", "no rows"),
    ("answers.jsonl", "", "no rows"),
    ("answers.json", "[]", "an empty list"),
    ("answers.parquet", None, "no rows")])
def test_an_empty_answer_list_is_a_named_error(tmp_path, capsys, name, content, why):
    """An answer file of no answer, in every input format (the authors' JSON list among
    them), stops with its name, not an internal KeyError."""
    (tmp_path / "mat" / "book_copyright").mkdir(parents=True)
    (tmp_path / "mat" / "book_copyright" / "harbour.txt").write_text(MATERIAL + "\n")
    path = tmp_path / name
    if content is None:
        pd.DataFrame({c: pd.Series([], dtype=str) for c in
                      ("material", "form", "task", "query", "response")}).to_parquet(path)
    else:
        path.write_text(content)
    assert main(["copyright-score", str(path), "--materials", str(tmp_path / "mat"), "--out",
                 str(tmp_path / "s.parquet"), "--metrics", "rouge-l"]) == 1
    assert f"{path}: holds no responses ({why})" in capsys.readouterr().err
