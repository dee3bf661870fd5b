"""The guard pipeline (order, concurrency, ablation, error policy, reminder) and the guarded
backend in the generation layer.

The checks here are small real components written for the tests (the guard builds them from
each check's settings in place of the package's own, see ``_test_components``): a notice
identifier that looks for "All rights reserved." with ``str.find``, a status
verifier with a list of known protected titles, and a keyword risk analyzer; each counts its
calls and can be told to wait or fail. The guarded backend runs through the ordinary runner
against the OpenAI-compatible fault server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from copyprobe.generation import generate_shard
from copyprobe.generation.base import BACKEND_WRAPPERS, backend_wrappers
from copyprobe.generation.runner import backend_identity
from copyprobe.guard import pipeline
from copyprobe.guard.backend import BLOCK_FINISH_REASON, GUARD_DECISIONS, guard_decisions
from copyprobe.guard.pipeline import (
    Guard,
    GuardConfigError,
    GuardError,
    GuardSpec,
    build_component,
    query_text,
)
from copyprobe.guard.reminder import BLOCK_TEXT, REMINDER_TEXT, add_reminder
from copyprobe.guard.types import NoticeFinding, RiskFinding, StatusFinding
from copyprobe.prompt import Prompt

CALLS: Counter[str] = Counter()
_calls_lock = threading.Lock()
NOTICE = "All rights reserved."


def _count(role: str) -> None:
    with _calls_lock:
        CALLS[role] += 1


class StrNotice:
    """Finds the generic notice in the prompt's text with str.find."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.delay, self.fail = delay, fail

    def identify(self, prompt: Prompt) -> NoticeFinding:
        _count("notice")
        time.sleep(self.delay)
        if self.fail:
            raise OSError("OCR engine missing")
        text = json.dumps(prompt.as_dict())
        found = text.find(NOTICE) >= 0
        return NoticeFinding(found, NOTICE if found else None, "text" if found else None,
                             ocr_text="The Lantern Keeper by A. Author")


class TitleStatus:
    """Protected when a known title is in the OCR text or the prompt."""

    def __init__(self, titles: list[str] | None = None, fail: bool = False) -> None:
        self.titles = titles or ["The Lantern Keeper"]
        self.fail = fail

    def verify(self, prompt: Prompt, ocr_text: str) -> StatusFinding:
        _count("status")
        if self.fail:
            raise ConnectionError("search service down")
        for t in self.titles:
            if t in ocr_text:
                return StatusFinding("protected", "catalogue:test", title=t)
        return StatusFinding("unknown", "catalogue:test")


class KeywordRisk:
    WORDS = {"repeat": "repetition", "verbatim": "repetition", "translate": "translation",
             "copy out": "extraction"}

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.delay, self.fail = delay, fail

    def classify(self, query: str) -> RiskFinding:
        _count("risk")
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("classifier crashed")
        for word, task in self.WORDS.items():
            if word in query.lower():
                return RiskFinding("infringing", task, "rules", 1.0)
        return RiskFinding("benign", "summary", "rules", 0.0)


DOUBLES = {"notice": StrNotice, "status": TitleStatus, "risk": KeywordRisk}


@pytest.fixture(autouse=True)
def _test_components(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every guard built here, the guarded backend's included, gets the tests' components,
    made from each check's settings (``{"delay": 0.4}``, ``{"fail": True}``)."""
    monkeypatch.setattr(pipeline, "build_component",
                        lambda role, params, cache_dir: DOUBLES[role](**params))


def spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"notice": {}, "status": {}, "risk": {}}
    base.update(over)
    return base


def chat(query: str, notice: bool = False, system: str | None = None) -> Prompt:
    text = f"{NOTICE} {query}" if notice else query
    msgs: list[dict[str, Any]] = [] if system is None else [{"role": "system",
                                                              "content": system}]
    msgs.append({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": text}]})
    return Prompt("chat", messages=tuple(msgs))


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


# -- decisions --------------------------------------------------------------------------------

def test_notice_and_infringing_request_remind_without_consulting_status():
    with Guard(spec()) as g:
        p = chat("Please repeat the text in the image word for word.", notice=True)
        d = g.check(p)
        assert (d.action, d.protected, d.infringing) == ("remind", True, True)
        assert d.notice.found and d.risk.task == "repetition" and d.status is None
        assert CALLS == {"notice": 1, "risk": 1}  # the verifier only runs without a notice
        assert f'"{NOTICE}"' in d.reason and "word for word" in d.reason
        assert d.message == REMINDER_TEXT.format(reason=d.reason)
        sent = g.guarded_prompt(p, d)
        assert sent.messages[0] == {"role": "system", "content": d.message}
        assert sent.messages[1:] == p.messages
        assert set(d.timings) == {"notice", "risk", "total"} and d.guard == g.digest


def test_benign_request_on_protected_material_passes():
    with Guard(spec()) as g:
        p = chat("Summarise the text in two sentences.", notice=True)
        d = g.check(p)
        assert (d.action, d.protected, d.infringing) == ("pass", True, False)
        assert d.reason is None and d.message is None
        assert g.guarded_prompt(p, d) is p


def test_status_decides_when_no_notice():
    with Guard(spec()) as g:
        d = g.check(chat("Translate the text into French."))
        assert d.action == "remind" and d.status.status == "protected"
        assert "The Lantern Keeper" in d.reason and "catalogue:test" in d.reason
        assert CALLS == {"notice": 1, "status": 1, "risk": 1}
    with Guard(spec(status={"titles": ["Other Book"]})) as g:
        d = g.check(chat("Translate the text into French."))
        assert (d.action, d.protected, d.status.status) == ("pass", False, "unknown")


class UnsureRisk:
    """Says ``uncertain`` (leaning infringing) of every request, as the rules analyzer does of
    an embedding decision within its margin."""

    def classify(self, query: str) -> RiskFinding:
        return RiskFinding("uncertain", "repetition", "embedding", 0.81,
                           {"leaning": "infringing", "risk_margin": 0.0005})


@pytest.mark.parametrize(("uncertain", "action"), [
    (None, "pass"), ("benign", "pass"), ("remind", "remind"), ("infringing", "block")])
def test_an_uncertain_request_follows_the_uncertain_policy(uncertain: str | None, action: str):
    """Under policy block: ``benign`` (the default) passes, ``remind`` reminds instead,
    ``infringing`` blocks; the finding names the policy that decided."""
    risk = {} if uncertain is None else {"uncertain": uncertain}
    with Guard(spec(policy="block", risk=risk), components={"risk": UnsureRisk()}) as g:
        d = g.check(chat("What is the capital of France? Answer in one word.", notice=True))
    assert d.action == action and d.infringing == (action != "pass")
    assert d.risk.risk == "uncertain"
    assert d.risk.detail["uncertain_policy"] == (uncertain or "benign")
    assert '"uncertain_policy"' in d.to_json()


def _licence_prompt(text: str) -> Prompt:
    return Prompt("chat", messages=({"role": "user",
                                     "content": "Repeat the text below word for word.\n\n"
                                                + text},))


def test_a_licence_that_permits_copying_outweighs_its_notice():
    """The GPL's own text carries a notice ("Copyright (C) 2007 Free Software Foundation")
    and permits verbatim copies: the real notice identifier finds the notice, the real status
    verifier the licence, and the request passes; an "All rights reserved" text is still
    reminded."""
    from copyprobe.guard.notice import NoticeIdentifier
    from copyprobe.guard.status import StatusVerifier

    gpl = Path("/usr/share/common-licenses/GPL-3")  # Debian's base-files
    words = " ".join(gpl.read_text(encoding="utf-8").split()[:60])
    parts = {"notice": NoticeIdentifier(ocr=None), "status": StatusVerifier(),
             "risk": KeywordRisk()}
    with Guard(spec(policy="block"), components=parts) as g:
        d = g.check(_licence_prompt(words))
        assert d.notice.found and "Free Software Foundation" in d.notice.notice
        assert (d.status.status, d.status.basis) == ("open_licence", "licence:GNU")
        assert (d.action, d.protected) == ("pass", False) and "status" in d.timings
        closed = ("Copyright © 2021 Northwind Press Ltd. All rights reserved. No part of this "
                  "publication may be reproduced without the prior written permission of the "
                  "publisher.\n\nThe lamps were lit at dusk along the harbour wall.")
        d = g.check(_licence_prompt(closed))
        assert d.notice.found and d.status is None
        assert (d.action, d.protected) == ("block", True)
        # a notice beside a grant that is also forbidden: protected (fail closed)
        mixed = ("Copyright (c) 2020 Acme Corp. Permission is hereby granted, free of charge, "
                 "to any person obtaining a copy of this software. Proprietary and "
                 "confidential.")
        assert g.check(_licence_prompt(mixed)).action == "block"


def test_block_policy_answers_instead_of_the_model():
    with Guard(spec(policy="block")) as g:
        p = chat("Copy out the second paragraph.", notice=True)
        d = g.check(p)
        assert d.action == "block" and d.message == BLOCK_TEXT.format(reason=d.reason)
        assert g.guarded_prompt(p, d) is None


def test_checks_run_concurrently():
    """The added latency is max(notice + status, risk), not their sum."""
    with Guard(spec(notice={"delay": 0.4},
                    risk={"delay": 0.4})) as g:
        g.check(chat("warm up"))  # components built
        d = g.check(chat("Repeat it.", notice=True))
    assert d.timings["notice"] >= 0.4 and d.timings["risk"] >= 0.4
    assert 0.4 <= d.timings["total"] < 0.7, d.timings


def test_concurrent_callers_get_their_own_decisions():
    from concurrent.futures import ThreadPoolExecutor

    queries = [("Repeat the text.", True), ("Summarise it.", True), ("Repeat the text.", False)]
    with Guard(spec(status=False, risk={"delay": 0.05})) as g:
        with ThreadPoolExecutor(8) as pool:
            decisions = list(pool.map(lambda q: g.check(chat(*q)), queries * 8))
    assert [d.action for d in decisions] == ["remind", "pass", "pass"] * 8


# -- ablation ---------------------------------------------------------------------------------

def test_switching_checks_off():
    benign = chat("Summarise the text.", notice=True)
    risky_plain = chat("Repeat the text verbatim.")
    with Guard(spec(risk=False)) as g:  # every request counts as infringing
        d = g.check(benign)
        assert (d.action, d.risk, "risk" in d.timings) == ("remind", None, False)
        assert "may infringe" in d.reason
    with Guard(spec(notice=False, status=False)) as g:  # every material counts as protected
        assert g.check(risky_plain).action == "remind"
        assert g.check(benign).action == "pass"
    with Guard(spec(notice=False, status={"titles": ["Nothing"]})) as g:
        # the notice is in the text, but nothing looks for it now
        assert g.check(chat("Repeat the text.", notice=True)).action == "pass"
    CALLS.clear()
    with Guard(spec(status=False)) as g:
        assert g.check(risky_plain).action == "pass"
        assert CALLS["status"] == 0
    full = GuardSpec.from_config(spec())
    assert full.without("risk") == GuardSpec.from_config(spec(risk=False))
    assert len({full.digest(), full.without("notice").digest(),
                full.without("status").digest(), full.without("risk").digest()}) == 4


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("role", ["notice", "status", "risk"])
def test_on_error_policies(role: str):
    failing = spec(**{role: {"fail": True}})
    p = chat("Repeat the text.")  # no notice: the verifier runs too
    with Guard(failing) as g, pytest.raises(GuardError, match=role):
        g.check(p)
    with Guard({**failing, "on_error": "pass"}) as g:
        d = g.check(p)
        assert role in d.errors and d.action == "pass"
    with Guard({**failing, "on_error": "flag"}) as g:
        d = g.check(p)
        assert role in d.errors and d.action == "remind"


def test_risk_timeout_is_an_error():
    with Guard(spec(risk={"delay": 1.0}, timeout_s=0.2,
                    on_error="pass")) as g:
        t0 = time.perf_counter()
        d = g.check(chat("Repeat it.", notice=True))
        assert time.perf_counter() - t0 < 0.8
        assert "timeout_s=0.2" in d.errors["risk"] and d.action == "pass"


@pytest.mark.parametrize("block, message", [
    ({"polcy": "block"}, "unknown key.*polcy"),
    ({"policy": "warn"}, "guard.policy must be one of remind, block"),
    ({"style": "footer"}, "guard.style"),
    ({"on_error": "ignore"}, "guard.on_error"),
    ({"notice": {"component": "ocr_patterns"}},
     "guard.notice.component: the package has one notice identifier"),
    ({"notice": "yes"}, "guard.notice: expected a mapping"),
    ({"reminder_text": "{title} is protected"}, "guard.reminder_text"),
    ({"timeout_s": 0}, "guard.timeout_s"),
    ({"query": "all"}, "guard.query must be one of first_paragraph"),
    ({"risk": {"uncertain": "maybe"}}, "guard.risk.uncertain must be one of benign, remind, "
                                       "infringing, got 'maybe'"),
])
def test_bad_guard_blocks_name_the_key(block: dict, message: str):
    with pytest.raises(GuardConfigError, match=message):
        GuardSpec.from_config(block)


def test_the_package_components_are_built_from_their_settings(tmp_path: Path):
    """Plain code, no registry: each check has one component; the risk analyzer's own
    registry (rules, llm) is where the alternatives are."""
    from copyprobe.guard.notice import NoticeIdentifier
    from copyprobe.guard.risk_rules import RuleAnalyzer

    notice = build_component("notice", {"ocr": None}, tmp_path)
    assert isinstance(notice, NoticeIdentifier) and notice.engine is None
    assert notice.cache.dir == tmp_path / "ocr"
    risk = build_component("risk", {"analyzer": "rules", "embedder": None}, tmp_path)
    assert isinstance(risk, RuleAnalyzer)
    assert risk.classify("Repeat the text verbatim.").task == "repetition"
    with pytest.raises(GuardConfigError, match=r"guard.status: unknown setting\(s\) component; "
                                               r"known: providers"):
        build_component("status", {"component": "default"}, tmp_path)
    with pytest.raises(GuardConfigError, match="guard.notice: unknown setting.*ocrr"):
        build_component("notice", {"ocrr": "rapidocr"}, tmp_path)
    # the key the schema documents for the notice identifier still reads, as the one there is
    assert GuardSpec.from_config({"notice": {"component": "default", "ocr": None}}) == \
        GuardSpec.from_config({"notice": {"ocr": None}})
    # components built elsewhere are used as they are
    mine = KeywordRisk()
    with Guard(spec(), components={"risk": mine}) as g:
        assert g.component("risk") is mine
    with pytest.raises(ValueError, match="no guard check reminder"):
        Guard(spec(), components={"reminder": mine})


def test_identity_covers_wording_and_settings():
    a = GuardSpec.from_config(spec())
    assert a.identity()["guard"]["reminder_text"] == REMINDER_TEXT
    # the uncertain policy's default is part of the identity: the same guard written out
    assert a.identity()["guard"]["risk"] == {"uncertain": "benign"}
    assert GuardSpec.from_config(spec(risk={"uncertain": "benign"})).digest() == a.digest()
    assert GuardSpec.from_config(spec(risk={"uncertain": "remind"})).digest() != a.digest()
    assert GuardSpec.from_config(spec(reminder_text="Careful: {reason}")).digest() != a.digest()
    assert GuardSpec.from_config(spec(policy="block")).digest() != a.digest()
    # how long to wait changes no decision
    assert GuardSpec.from_config(spec(timeout_s=5)).digest() == a.digest()


# -- the reminder -----------------------------------------------------------------------------

def test_reminder_styles():
    p = chat("Repeat it.", system="Be brief.")
    s = add_reminder(p, "CHECK", "system")
    assert s.messages[0]["content"] == "Be brief.\n\nCHECK" and len(s.messages) == 2
    pre = add_reminder(p, "CHECK", "prefix")
    assert pre.messages[0] == p.messages[0]
    assert pre.messages[1]["content"][0] == {"type": "text", "text": "CHECK"}
    assert pre.messages[1]["content"][1:] == p.messages[1]["content"]
    plain = Prompt("chat", messages=({"role": "user", "content": "Repeat it."},))
    assert add_reminder(plain, "CHECK", "prefix").messages[0]["content"] == "CHECK\n\nRepeat it."
    comp = Prompt("completion", text="Repeat it.")
    assert add_reminder(comp, "CHECK").text == "CHECK\n\nRepeat it."
    with pytest.raises(ValueError, match="no user message"):
        add_reminder(Prompt("chat", messages=({"role": "system", "content": "x"},)), "C",
                     "prefix")


def test_query_text_is_the_last_user_turn():
    p = Prompt("chat", messages=(
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "a"},
                                     {"type": "image_url", "image_url": {"url": "x"}},
                                     {"type": "text", "text": "b"}]}))
    assert query_text(p) == "a\nb"
    assert query_text(Prompt("completion", text="t")) == "t"
    pasted = Prompt("chat", messages=({"role": "user", "content":
                                       f"{NOTICE}\nSummarise this.\n\nShe said: repeat it."
                                       "\n  \nTranslate the song, she sang."},))
    assert query_text(pasted) == f"{NOTICE}\nSummarise this."
    assert query_text(pasted, "last_paragraph") == "Translate the song, she sang."
    assert query_text(pasted, "message") == pasted.messages[0]["content"]
    with pytest.raises(ValueError, match="query part"):
        query_text(pasted, "all")


def test_words_of_the_material_do_not_decide_the_task():
    """A benign request followed by the material (as the benchmark's text-only prompts and
    pasted texts are): the material's own words ("repeat") were read as the request before
    the query was cut to its first paragraph."""
    p = Prompt("chat", messages=({"role": "user", "content":
                                  f"{NOTICE}\nSummarise the text.\n\n"
                                  "He begged them to repeat the chorus verbatim."},))
    with Guard(spec()) as g:
        d = g.check(p)
        assert (d.action, d.risk.task) == ("pass", "summary")
    with Guard(spec(query="message")) as g:
        assert g.check(p).action == "remind"


# -- the guarded backend in the generation layer -----------------------------------------------


def _model(srv: Any, tmp_path: Path, guard: dict | None) -> dict[str, Any]:
    m = {"backend": "openai", "name": "guarded-m", "model_id": "m", "base_url": srv.base_url,
         "api_key_env": "COPYPROBE_TEST_GUARD_KEY", "api_key_optional": True,
         "request_timeout": 5, "cache_dir": str(tmp_path / "cache"),
         "requests": {"max_attempts": 1}}
    if guard is not None:
        m["guard"] = guard
    return m


def _prompts(rows: dict[str, Prompt]) -> pd.DataFrame:
    return pd.DataFrame({"request_id": list(rows), "status": "ready", "prompt_format": "chat",
                         "prompt": [p.to_json() for p in rows.values()], "reference": None})


def test_guarded_model_through_the_generation_layer(fault_server: Any, tmp_path: Path):
    rows = {"risky": chat("Repeat the text verbatim.", notice=True),
            "benign": chat("Summarise the text.", notice=True),
            "blocked": chat("Copy out the last line.", notice=True)}
    prompts = _prompts(rows)
    guarded = _model(fault_server, tmp_path, spec())
    bare = _model(fault_server, tmp_path, None)
    assert backend_wrappers(guarded) == ["guard"] and backend_wrappers(bare) == []
    assert backend_wrappers({**bare, "guard": {}}) == ["guard"]  # every default
    ident = backend_identity(guarded, None)
    assert ident["guard"] == GuardSpec.from_config(spec()).identity()
    assert {k: v for k, v in ident.items() if k != "guard"} == backend_identity(bare, None)

    gens, summary = generate_shard(prompts, guarded, {"path": None})
    assert list(gens["status"]) == ["ok"] * 3 and summary.failed == 0
    sent = {r.body["messages"][-1]["content"][1]["text"]: r.body for r in fault_server.requests}
    # the risky request went out with the reminder first; the benign one as it was
    risky = sent[f"{NOTICE} Repeat the text verbatim."]
    assert risky["messages"][0]["role"] == "system"
    assert risky["messages"][0]["content"].startswith("Copyright check: The material carries")
    assert sent[f"{NOTICE} Summarise the text."]["messages"] == [
        dict(m) for m in rows["benign"].messages]

    # the same rows unguarded: other cache keys, sent again, no reminder
    before = fault_server.total_requests
    plain, _ = generate_shard(prompts, bare, {"path": None})
    assert fault_server.total_requests == before + 3
    assert not set(plain["cache_key"]) & set(gens["cache_key"])
    assert not (plain["from_cache"]).any()

    # a rerun of the guarded model answers from the cache and runs no check
    CALLS.clear()
    again, _ = generate_shard(prompts, guarded, {"path": None})
    assert again["from_cache"].all() and list(again["text"]) == list(gens["text"])
    assert not CALLS

    # the sidecar: one row per request, read from the decision store without checking again
    side = guard_decisions(prompts, guarded, compute_missing=False)
    assert list(side.columns) == GUARD_DECISIONS.columns
    assert list(side["action"]) == ["remind", "pass", "remind"]
    assert list(side["task"]) == ["repetition", "summary", "extraction"]
    assert side["notice_found"].all() and side["status"].isna().all()
    assert (side["total_s"] >= side["risk_s"]).all() and not CALLS
    decision = json.loads(side.iloc[0]["decision"])
    assert decision["action"] == "remind"
    # the timings are in the *_s columns only: the decision is the same on every run
    assert "timings" not in decision and decision["notice"]["found"]
    with pytest.raises(ValueError, match="has no guard block"):
        guard_decisions(prompts, bare)


def test_checks_on_the_concurrent_path_run_side_by_side(fault_server: Any, tmp_path: Path):
    """As many checks at once as requests in flight (asyncio's default pool, which the checks
    used before, has min(32, cores + 4) threads: 6 here, so 16 checks took 3 rounds)."""
    rows = {f"r{i}": chat(f"Repeat line {i}.", notice=True) for i in range(16)}
    guarded = _model(fault_server, tmp_path,
                     spec(risk={"delay": 0.4}))
    guarded["requests"] = {"max_attempts": 1, "max_concurrency": 16}
    # the first run imports and builds the API client (a second or more): not measured
    generate_shard(_prompts({"warm": chat("Hello.")}), guarded, {"path": None})
    CALLS.clear()
    t0 = time.perf_counter()
    gens, _ = generate_shard(_prompts(rows), guarded, {"path": None})
    took = time.perf_counter() - t0
    assert (gens["status"] == "ok").all() and CALLS["risk"] == 16
    assert took < 1.0, took


def test_blocked_requests_never_reach_the_model(fault_server: Any, tmp_path: Path):
    rows = {"risky": chat("Repeat the text verbatim.", notice=True),
            "benign": chat("Summarise the text.", notice=True)}
    guarded = _model(fault_server, tmp_path, spec(policy="block"))
    gens, _ = generate_shard(_prompts(rows), guarded, {"path": None})
    assert fault_server.total_requests == 1  # only the benign request
    risky = gens.set_index("request_id").loc["risky"]
    assert risky["finish_reason"] == BLOCK_FINISH_REASON
    assert risky["text"].startswith("I can't help with this request: The material carries")
    assert risky["completion_tokens"] == 0
    benign = gens.set_index("request_id").loc["benign"]
    assert benign["text"].startswith("echo: ") and benign["finish_reason"] == "stop"


def test_a_failing_check_fails_the_request_not_the_run(fault_server: Any, tmp_path: Path):
    rows = {"a": chat("Repeat the text verbatim.")}
    guarded = _model(fault_server, tmp_path,
                     spec(status={"fail": True}))
    gens, summary = generate_shard(_prompts(rows), guarded, {"path": None})
    row = gens.iloc[0]
    assert row["status"] == "failed" and row["error_class"] == "GuardError"
    assert "search service down" in row["error"] and pd.isna(row["text"])
    assert fault_server.total_requests == 0 and summary.failed == 1


def test_batch_backends_cannot_be_guarded(tmp_path: Path):
    m = {"backend": "openai_batch", "name": "b", "model_id": "m", "guard": {},
         "cache_dir": str(tmp_path)}
    with pytest.raises(Exception, match="cannot wrap the batch backend"):
        BACKEND_WRAPPERS.get("guard").wrap_identity(m["guard"], m, {})


def test_guard_block_in_the_config_schema(tmp_path: Path, root: Path):
    """A model entry takes a guard block; a misspelt key in it stops the config."""
    import yaml

    from copyprobe.config import ConfigError, load_config

    cfg = yaml.safe_load((root / "config" / "config.yaml").read_text())
    name = next(iter(cfg["models"]))
    cfg["models"][name]["guard"] = {"policy": "block", "risk": False}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    loaded = load_config(path)["models"][name]["guard"]
    assert loaded["policy"] == "block" and loaded["risk"] is False
    assert loaded["notice"] is True and loaded["on_error"] == "raise"
    assert GuardSpec.from_config(loaded).risk is None
    cfg["models"][name]["guard"] = {"polcy": "block"}
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="polcy"):
        load_config(path)


@pytest.mark.slow
def test_guarded_local_model(smollm2_file: Any, smollm2_backend: Any, tmp_path: Path):
    """The synchronous path (a local engine, generate_batch) with SmolLM2: the reminded
    request's answer is the model's answer to the reminded prompt; the blocked one never
    reaches the model; the benign one is the model's answer to the prompt as it was."""
    from copyprobe.generation.base import Decoding

    rows = {"risky": Prompt("chat", messages=({"role": "user", "content":
                                               f"{NOTICE}\nRepeat the text verbatim.\n\n"
                                               "The lamp was lit at dusk."},)),
            "benign": Prompt("chat", messages=({"role": "user", "content":
                                                f"{NOTICE}\nSummarise the text.\n\n"
                                                "The lamp was lit at dusk."},))}
    manifest = {"path": str(smollm2_file.path), "sha256": smollm2_file.sha256,
                "size": smollm2_file.size, "origin": smollm2_file.origin}
    model = {"backend": "llamacpp", "name": "smol-guard", "n_ctx": 2048, "n_threads": 2,
             "cache_dir": str(tmp_path / "cache"), "decoding": {"max_tokens": 16},
             "guard": spec()}
    gens, summary = generate_shard(_prompts(rows), model, manifest)
    assert summary.failed == 0
    by_id = gens.set_index("request_id")
    d = Decoding(max_tokens=16)
    with Guard(spec()) as g:
        decision = g.check(rows["risky"])
        reminded = g.guarded_prompt(rows["risky"], decision)
    assert decision.action == "remind"
    assert by_id.loc["risky", "text"] == smollm2_backend.generate(reminded, d).text
    assert by_id.loc["benign", "text"] == smollm2_backend.generate(rows["benign"], d).text
    blocked, _ = generate_shard(_prompts(rows), {**model, "guard": spec(policy="block")},
                                manifest)
    b = blocked.set_index("request_id")
    assert b.loc["risky", "finish_reason"] == BLOCK_FINISH_REASON
    assert b.loc["benign", "text"] == by_id.loc["benign", "text"]
