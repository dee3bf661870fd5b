"""The insertion plan (seeded, reproducible, its fractions and levels, its digest), the canaries
and their sealed record, and bad input to membership-train and membership-canaries, each one
line naming the file, row or option before any model is loaded."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from copyprobe.artifacts import read_meta
from copyprobe.cli import main
from copyprobe.membership.canaries import make_canaries
from copyprobe.membership.insertion import (
    PlanError,
    check_documents,
    control_documents,
    make_plan,
    parse_repeats,
    plan_digest,
    read_plan,
    write_plan,
)
from copyprobe.membership.train import training_order

from ..conftest import ROOT

IDS = [f"d{i:02d}" for i in range(40)]


def test_plan_is_seeded_and_splits_members_evenly_over_the_levels():
    plan = make_plan(IDS, seed=3, member_fraction=0.5, repeats=(1, 4))
    assert plan["doc_id"].tolist() == IDS
    assert plan["member"].sum() == 20
    assert plan.loc[plan["member"], "repeats"].value_counts().to_dict() == {1: 10, 4: 10}
    assert (plan.loc[~plan["member"], "repeats"] == 0).all()
    again = make_plan(IDS, seed=3, member_fraction=0.5, repeats=(1, 4))
    pd.testing.assert_frame_equal(plan, again)
    other = make_plan(IDS, seed=4, member_fraction=0.5, repeats=(1, 4))
    assert other["member"].tolist() != plan["member"].tolist()
    three = make_plan(IDS, seed=0, member_fraction=0.25, repeats=(1, 4, 16))
    assert three["member"].sum() == 10
    assert sorted(three.loc[three["member"], "repeats"].value_counts().tolist()) == [3, 3, 4]


def test_the_digest_names_the_rows_not_their_order_and_a_changed_record_is_refused(tmp_path):
    plan = make_plan(IDS, seed=0)
    assert plan_digest(plan) == plan_digest(plan.iloc[::-1])
    flipped = plan.copy()
    flipped.loc[0, "member"] = not flipped.loc[0, "member"]
    assert plan_digest(flipped) != plan_digest(plan)
    path = tmp_path / "insertion.parquet"
    digest = write_plan(plan, path, seed=0)
    assert read_meta(path)["plan_digest"] == digest
    assert read_meta(path)["params"] == {"seed": 0}
    pd.testing.assert_frame_equal(read_plan(path, digest), plan)
    with pytest.raises(PlanError, match="the expected digest"):
        read_plan(path, "0" * 64)
    # rows rewritten in place (the stored provenance kept): the digest no longer matches
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    changed = pa.Table.from_pandas(flipped, schema=table.schema, preserve_index=False)
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(PlanError, match="record was changed"):
        read_plan(path)


@pytest.mark.parametrize("fraction, repeats, match", [
    (0.0, (1,), "strictly between 0 and 1"),
    (1.0, (1,), "strictly between 0 and 1"),
    (0.05, (1, 4, 16), "each of the 3 duplication level"),
])
def test_fractions_that_cannot_make_a_plan_are_refused(fraction, repeats, match):
    with pytest.raises(PlanError, match=match):
        make_plan(IDS, seed=0, member_fraction=fraction, repeats=repeats)


def test_repeats_and_documents_are_checked():
    assert parse_repeats("1,4,16") == (1, 4, 16)
    for bad in ("1,x", "0,4", "4,4", ""):
        with pytest.raises(PlanError, match="--repeats"):
            parse_repeats(bad)
    docs = pd.DataFrame({"doc_id": ["a", "b", "a"], "text": ["x", "y", "z"]})
    with pytest.raises(PlanError, match=r"docs.jsonl document 3: doc_id 'a' appears twice "
                                        r"\(first in document 1\)"):
        check_documents(docs, "docs.jsonl")
    docs = pd.DataFrame({"doc_id": ["a", "b"], "text": ["x", "  "]})
    with pytest.raises(PlanError, match=r"docs.jsonl document 2 \(doc_id 'b'\): empty text"):
        check_documents(docs, "docs.jsonl")


def test_training_order_repeats_each_member_its_level_per_epoch():
    plan = make_plan(IDS, seed=1, repeats=(1, 4))
    order = training_order(plan, seed=1, epochs=2)
    assert len(order) == 2 * (10 * 1 + 10 * 4)
    counts = pd.Series(order).value_counts()
    want = plan.set_index("doc_id")["repeats"] * 2
    assert counts.to_dict() == want[want > 0].to_dict()
    assert order == training_order(plan, seed=1, epochs=2)
    assert order[:50] != order[50:]  # each epoch shuffled anew


def test_control_documents_are_cut_at_sentences_near_the_word_count():
    docs = control_documents(ROOT / "resources" / "control_documents", words=120)
    assert len(docs) == 40 and docs["doc_id"].is_unique
    words = docs["text"].str.split().str.len()
    assert 110 <= words.mean() <= 130 and words.max() < 180
    assert docs["text"].str.endswith((".", "!", "?", '"')).all()


def test_canaries_are_reproducible_from_the_seed_and_unique():
    a, b = make_canaries(30, seed=7), make_canaries(30, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert a["text"].is_unique and a["doc_id"].tolist()[:2] == ["canary-0000", "canary-0001"]
    assert make_canaries(30, seed=8)["text"].tolist() != a["text"].tolist()
    first = a["text"][0]
    assert first[0].isupper() and first.endswith(".") and 30 <= len(first.split()) <= 90


def test_canaries_command_writes_texts_what_to_insert_and_the_sealed_record(tmp_path, capsys):
    out = tmp_path / "canaries"
    assert main(["membership-canaries", "--n", "20", "--seed", "5", "--out", str(out),
                 "--repeats", "1,4"]) == 0
    result = json.loads(capsys.readouterr().out)
    texts = pd.read_json(out / "canaries.jsonl", lines=True)
    insert = pd.read_json(out / "insert.jsonl", lines=True)
    record = read_plan(out / "record.parquet", result["record_digest"])
    assert texts["text"].tolist() == make_canaries(20, seed=5)["text"].tolist()
    assert set(insert["doc_id"]) == set(record.loc[record["member"], "doc_id"])
    assert insert.merge(record, on="doc_id")["repeats_x"].tolist() == \
        insert.merge(record, on="doc_id")["repeats_y"].tolist()
    assert (result["members"], result["non_members"]) == (10, 10)
    assert (out / "record.sha256").read_text().split()[0] == result["record_digest"]
    # the same seed: the same record, byte for byte in its rows
    assert main(["membership-canaries", "--n", "20", "--seed", "5", "--out",
                 str(tmp_path / "again"), "--repeats", "1,4"]) == 0
    assert json.loads(capsys.readouterr().out)["record_digest"] == result["record_digest"]


def _train(tmp_path, *args: str) -> str:
    (tmp_path / "base.yaml").write_text("backend: hf\nmodel_id: /nonexistent/model\n")
    with pytest.raises(SystemExit) as exc:
        main(["membership-train", "--model-config", str(tmp_path / "base.yaml"),
              "--out", str(tmp_path / "out"), *args])
    return str(exc.value.code)


def test_train_refuses_bad_documents_and_settings_before_loading_a_model(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"doc_id": "a", "text": "one"}\n{"doc_id": "a", "text": "two"}\n')
    assert "line 2: doc_id 'a' appears twice" in _train(tmp_path, "--documents", str(docs))
    docs.write_text('{"doc_id": "a", "text": "one"}\n{"doc_id": "b", "text": ""}\n')
    assert f"--documents {docs} document 2 (doc_id 'b'): empty text" in \
        _train(tmp_path, "--documents", str(docs))
    docs.write_text("".join(json.dumps({"doc_id": f"d{i}", "text": f"text {i}"}) + "\n"
                            for i in range(8)))
    assert "--member-fraction 1.5: must lie strictly between 0 and 1" in \
        _train(tmp_path, "--documents", str(docs), "--member-fraction", "1.5")
    assert "--repeats '1,0'" in _train(tmp_path, "--documents", str(docs), "--repeats", "1,0")
    assert "--epochs 0: must be at least 1" in \
        _train(tmp_path, "--documents", str(docs), "--epochs", "0")
    assert not (tmp_path / "out").exists()
