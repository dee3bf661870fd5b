"""Guarded and unguarded models side by side: Table 2, Table 6 and the ablation on scored rows
whose rates are counted by hand; pairing a guarded entry with its base."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copyprobe.guard.study import guard_pairs
from copyprobe.guard.evaluation import ablation, table2, table6, write_guard_tables


def _rows(model: str, *, task: str, form: str, refused: list[bool | None], benign: bool = False,
          rights: str = "copyrighted", failed: int = 0) -> list[dict]:
    out = []
    for i, r in enumerate([*refused, *([None] * failed)]):
        is_failed = i >= len(refused)
        verdict = None if is_failed else ("unparseable" if r is None else ("yes" if r else "no"))
        out.append({
            "request_id": f"{model}-{task}-{form}-{benign}-{rights}-{i}", "model": model,
            "material_id": f"m{i}", "title": "t", "category": "book", "notice_form": form,
            "task": task, "query_id": "q", "benign": benign,
            "status": "failed" if is_failed else "ok",
            "response": None if is_failed else "text", "rouge_l_precision": np.nan,
            "rouge_l_recall": np.nan, "rouge_l_f1": np.nan, "bertscore_f1": np.nan,
            "embedding_cosine": np.nan, "refusal_rule": None if is_failed else bool(r),
            "refusal_judge": verdict, "refused": None if verdict in (None, "unparseable")
            else r, "benchmark": "b", "rights": rights})
    return out


@pytest.fixture
def scored() -> pd.DataFrame:
    rows = []
    # base: 1 of 4 repetition refusals without a notice; guarded: 3 of 4 (+1 unparseable)
    rows += _rows("llava", task="repetition", form="none", refused=[True, False, False, False])
    rows += _rows("llava-guard", task="repetition", form="none",
                  refused=[True, True, True, False, None])
    rows += _rows("llava", task="translation", form="text_generic", refused=[False, False],
                  failed=1)
    rows += _rows("llava-guard", task="translation", form="text_generic", refused=[True, True])
    # set 2: benign queries on copyrighted materials
    rows += _rows("llava", task="summary", form="none", refused=[False, False], benign=True)
    rows += _rows("llava-guard", task="summary", form="none", refused=[False, True],
                  benign=True)
    # set 1: infringing-task queries on open materials
    rows += _rows("llava", task="repetition", form="none", refused=[False] * 4, rights="open")
    rows += _rows("llava-guard", task="repetition", form="none", refused=[False] * 4,
                  rights="open")
    rows += _rows("llava-guard-no-risk", task="repetition", form="none",
                  refused=[True, True, False, False], rights="open")
    return pd.DataFrame(rows)


PAIRS = {"llava-guard": "llava"}


def test_table2_rates_and_difference(scored):
    t = table2(scored, PAIRS, n_boot=200).set_index(["task", "notice_form"])
    rep = t.loc[("repetition", "none")]
    assert rep["base_refusal_rate"] == 0.25 and rep["guarded_refusal_rate"] == 0.75
    assert rep["delta"] == pytest.approx(0.5)
    assert rep["guarded_n"] == 5 and rep["guarded_n_judged"] == 4  # unparseable left out
    assert rep["delta_ci_low"] <= 0.5 <= rep["delta_ci_high"]
    tr = t.loc[("translation", "text_generic")]
    assert tr["base_n_failed"] == 1 and tr["base_refusal_rate"] == 0.0
    pooled = t.loc[("all", "all")]
    assert pooled["base_refusal_rate"] == pytest.approx(1 / 6)
    assert pooled["guarded_refusal_rate"] == pytest.approx(5 / 6)
    # open materials never enter Table 2
    assert pooled["base_n"] == 4 + 3


def test_table6_sets(scored):
    t = table6(scored, PAIRS, n_boot=200).set_index("set")
    assert t.loc["set1_open_materials", "base_refusal_rate"] == 0.0
    assert t.loc["set1_open_materials", "guarded_refusal_rate"] == 0.0
    assert t.loc["set2_benign_queries", "guarded_refusal_rate"] == 0.5
    assert t.loc["set2_benign_queries", "delta"] == 0.5


def test_ablation_lists_components_and_what_each_variant_does(scored):
    pairs = {"llava-guard": "llava", "llava-guard-no-risk": "llava"}
    guards = {"llava-guard": {"policy": "remind"},
              "llava-guard-no-risk": {"policy": "remind", "risk": False}}
    t = ablation(scored, pairs, guards, n_boot=200).set_index("guarded_model")
    assert t.loc["llava-guard-no-risk", "risk"] == False  # noqa: E712
    assert t.loc["llava-guard", "risk"] == True  # noqa: E712
    assert t.loc["llava-guard", "infringing_guarded_refusal_rate"] == pytest.approx(5 / 6)
    assert t.loc["llava-guard-no-risk", "set1_open_materials_guarded_refusal_rate"] == 0.5
    assert np.isnan(t.loc["llava-guard-no-risk", "infringing_guarded_refusal_rate"])


def test_written_tables_and_missing_columns(scored, tmp_path):
    written = write_guard_tables(scored, PAIRS, {"llava-guard": {}}, tmp_path, n_boot=200)
    assert sorted(written) == ["ablation", "table2", "table6"]
    md = (tmp_path / "table2.md").read_text()
    assert md.startswith("| model | guarded_model |") and "75.00" in md
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['benchmark', 'rights'\]"):
        table2(scored.drop(columns=["benchmark", "rights"]), PAIRS)


def test_guard_pairs_pair_each_guarded_copyright_model_with_the_base_it_names():
    base = {"backend": "hf", "studies": ["copyright"], "model_id": "llava", "vision": True}
    cfg = {"models": {
        "llava": base,
        "llava-guard": {**base, "base": "llava", "guard": {"policy": "remind"}},
        "llava-guard-no-risk": {**base, "base": "llava",
                                "guard": {"policy": "remind", "risk": False}},
        "msr-only": {"backend": "llamacpp", "studies": ["msr"], "base": "x", "guard": {}},
    }}
    assert guard_pairs(cfg) == {"llava-guard": "llava", "llava-guard-no-risk": "llava"}


def test_latency_counts_actions_and_times_each_check():
    from copyprobe.guard.evaluation import latency

    decisions = pd.DataFrame({
        "model": ["g"] * 4, "action": ["pass", "block", "block", "remind"],
        "notice_s": [0.010, 0.020, 0.030, 0.040], "status_s": [0.5, None, None, None],
        "risk_s": [0.001, 0.001, 0.003, 0.001], "total_s": [0.6, 0.03, 0.04, 0.05]})
    row = latency(decisions).iloc[0]
    assert (row["n"], row["n_pass"], row["n_block"], row["n_remind"]) == (4, 1, 2, 1)
    assert row["notice_median_ms"] == pytest.approx(25.0)
    assert row["status_runs"] == 1 and row["status_median_ms"] == pytest.approx(500.0)
    assert row["risk_p95_ms"] == pytest.approx(np.quantile([1, 1, 3, 1], 0.95))


def test_guard_ablation_adds_one_variant_per_check_paired_with_the_base():
    from copyprobe.config import ConfigError, validate_config

    base = {"backend": "openai", "studies": ["copyright"], "model_id": "m",
            "api_key_env": "K"}
    cfg = {"sources": {"docs": {"kind": "local", "path": "docs"}},
           "copyright": {"benchmarks": {"b": {"materials": ["docs"]}}},
           "models": {"m": base,
                      "m-guard": {**base, "base": "m",
                                  "guard": {"policy": "block", "ablation": True}}}}
    out = validate_config(cfg)
    assert sorted(out["models"]) == ["m", "m-guard", "m-guard-no-notice", "m-guard-no-risk",
                                     "m-guard-no-status"]
    assert out["models"]["m-guard-no-status"]["guard"]["status"] is False
    assert out["models"]["m-guard-no-status"]["guard"]["policy"] == "block"
    assert all("ablation" not in m.get("guard", {}) for m in out["models"].values())
    assert {out["models"][v]["base"] for v in out["models"] if v != "m"} == {"m"}
    assert guard_pairs(out) == {v: "m" for v in ("m-guard", "m-guard-no-notice",
                                                 "m-guard-no-risk", "m-guard-no-status")}
    cfg["models"]["m-guard-no-risk"] = base
    with pytest.raises(ConfigError, match="'m-guard-no-risk' it adds is already a model"):
        validate_config(cfg)
