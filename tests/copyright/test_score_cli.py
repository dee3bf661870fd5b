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
from copyprobe.copyright.score import SCORED_RUN

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
    assert summary["mean_by_task"] == {
        "repetition": {"metric": "rouge_l_f1", "mean": 1.0, "responses": 9},
        "extraction": {"metric": "rouge_l_f1", "mean": pytest.approx((0.8 + 1 + 12 / 27) / 3),
                       "responses": 9}}
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
