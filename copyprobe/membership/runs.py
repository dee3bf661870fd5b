"""Ground-truth runs in the workflow (rules/membership.smk): the ``membership.runs`` config,
each run's documents, its training (copyprobe.membership.train) and its scores against the
truth as a table (docs/membership.md#in-the-workflow)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec

#: A run's documents, cut as its ``words`` says.
DOCUMENTS = TableSpec("membership_documents", pa.schema([("doc_id", pa.string()),
                                                         ("text", pa.string())]))

#: One row per (measure, duplication level) of a run scored against its truth.
RESULT = TableSpec("membership_result", pa.schema([
    ("run", pa.string()), ("model", pa.string()), ("measure", pa.string()),
    ("repeats", pa.string()), ("n_members", pa.int64()), ("n_nonmembers", pa.int64()),
    ("auc", pa.float64()), ("auc_ci_low", pa.float64()), ("auc_ci_high", pa.float64()),
    ("tpr_at_1pct_fpr", pa.float64()), ("tpr_at_0.1pct_fpr", pa.float64()),
    ("auc_minus_blind", pa.float64()),
]))

#: Every document's measures of the other studies (extraction's p_z, MSR's match), long.
STUDY_MEASURES = TableSpec("membership_study_measures", pa.schema([
    ("doc_id", pa.string()), ("measure", pa.string()), ("value", pa.float64()),
]))

#: The measures a run scores (every standard one a single model gives).
MEASURES = ("loss", "zlib_ratio", "min_k_10", "min_k_20", "min_kpp_10", "min_kpp_20")


def runs(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(cfg.get("membership", {}).get("runs", {}))


def check_config(cfg: Mapping[str, Any]) -> None:
    """Each run's base model and source exist, and the base can be fine-tuned."""
    from copyprobe.config import ConfigError
    from copyprobe.membership.train import hf_spec

    for name, run in runs(cfg).items():
        key = f"membership.runs.{name}"
        check_measures(name, run)
        if run["model"] not in cfg.get("models", {}):
            raise ConfigError(f"{key}.model: {run['model']!r} is not a models entry")
        if run["source"] not in cfg.get("sources", {}):
            raise ConfigError(f"{key}.source: {run['source']!r} is not a sources entry")
        if run.get("truth") is not None:
            continue  # trained elsewhere: scored as it is
        try:
            hf_spec({"name": run["model"], **cfg["models"][run["model"]]}, f"{key}.model")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if len(set(run["repeats"])) != len(run["repeats"]):
            raise ConfigError(f"{key}.repeats: {run['repeats']}: a level given twice")


def check_measures(name: str, run: Mapping[str, Any]) -> None:
    """A run's ``measures`` name the membership scores (dataset inference reads them), each
    family once."""
    from copyprobe.config import ConfigError

    got = list(run.get("measures", ["membership"]))
    if "membership" not in got:
        raise ConfigError(f"membership.runs.{name}.measures: {got}: 'membership' is needed "
                          "(dataset inference and the pass the other measures read)")
    if len(set(got)) != len(got):
        raise ConfigError(f"membership.runs.{name}.measures: {got}: a family given twice")


def resolve_trained(cfg: dict[str, Any]) -> None:
    """A model entry with ``trained: RUN`` is the run's trained model: an ``hf`` entry on
    the run's model folder (what its model.yaml names). Errors name the key."""
    from copyprobe.config import ConfigError
    from copyprobe.membership.paths import MODEL_DIR

    for name, spec in cfg.get("models", {}).items():
        run = spec.get("trained")
        if run is None:
            continue
        key = f"models.{name}.trained"
        if run not in runs(cfg):
            raise ConfigError(f"{key}: {run!r} is not a membership.runs entry")
        if runs(cfg)[run].get("truth") is not None:
            raise ConfigError(f"{key}: run {run!r} trains nothing (it has a truth): use its "
                              f"model {runs(cfg)[run]['model']!r} itself")
        if spec["backend"] != "hf":
            raise ConfigError(f"{key}: a trained model loads with backend hf, not "
                              f"{spec['backend']!r}")
        for other in ("model_id", "model_file"):
            if spec.get(other) is not None:
                raise ConfigError(f"models.{name}.{other}: set by trained ({run!r}); leave "
                                  "it out")
        spec["model_id"] = MODEL_DIR.format(run=run)


def trained_runs(cfg: Mapping[str, Any]) -> list[str]:
    """The runs that train their model (the others give a ``truth`` of a model trained
    elsewhere)."""
    return [name for name, run in runs(cfg).items() if run.get("truth") is None]


def given_runs(cfg: Mapping[str, Any]) -> list[str]:
    return [name for name, run in runs(cfg).items() if run.get("truth") is not None]


#: keys of a workflow model entry that are no part of a model config
_WORKFLOW_KEYS = ("studies", "cutoff", "name", "cache_dir", "variant")


def given_model(name: str, spec: Mapping[str, Any], truth: pd.DataFrame, truth_path: str,
                out: Path) -> dict[str, Any]:
    """A run of a model trained elsewhere: its truth as the run's plan, its entry as
    model.yaml (written last) and a record saying nothing was trained."""
    import yaml

    from copyprobe.artifacts import write_json, write_text
    from copyprobe.membership.insertion import plan_digest, write_plan

    plan = truth[["doc_id", "member", "repeats"]].assign(
        member=lambda d: d["member"].astype(bool), repeats=lambda d: d["repeats"].astype(int))
    write_plan(plan, out / "insertion.parquet", truth=truth_path)
    entry = {k: v for k, v in spec.items() if k not in _WORKFLOW_KEYS and v is not None}
    record = {"outcome": "given", "base_model": name, "truth": truth_path,
              "plan_digest": plan_digest(plan), "steps": None, "seconds": None,
              "settings": {}}
    write_json(out / "train.json", record)
    write_text(out / "model.yaml", f"# {name} as configured (trained elsewhere); the truth is "
               f"{truth_path}\n" + yaml.safe_dump({name: entry}, sort_keys=False))
    return record


def uses_gpu(spec: Mapping[str, Any]) -> bool:
    """A base entry that trains on a GPU (``device_map`` or ``device`` cuda or auto)."""
    return any(str(spec.get(k) or "").startswith(("cuda", "auto"))
               for k in ("device_map", "device"))


def run_documents(corpus: pd.DataFrame, words: int | None) -> pd.DataFrame:
    """A run's documents (``doc_id``, ``text``) from a corpus table, each cut to ``words``."""
    from copyprobe.membership.insertion import cut_to_words

    docs = corpus[["doc_id", "text"]].astype(str).reset_index(drop=True)
    if words is not None:
        docs["text"] = [cut_to_words(t, words) for t in docs["text"]]
    return docs


def train_run(run: Mapping[str, Any], docs: pd.DataFrame, base_spec: Mapping[str, Any],
              model_file: Any, out: Path, documents: str) -> dict[str, Any]:
    """``membership-train`` on ``docs`` with a run's settings, into ``out``."""
    from copyprobe.membership.insertion import make_plan
    from copyprobe.membership.train import TrainSettings, train_model

    plan = make_plan(docs["doc_id"].tolist(), seed=run["seed"],
                     member_fraction=run["member_fraction"], repeats=tuple(run["repeats"]))
    settings = TrainSettings(seed=run["seed"], epochs=run["epochs"], lr=run["lr"],
                             lora=run["lora"], lora_rank=run["lora_rank"],
                             lora_alpha=2 * run["lora_rank"], max_tokens=run["max_tokens"],
                             checkpoint_every=run["checkpoint_every"])
    return train_model(base_spec["name"], base_spec, model_file, docs, plan, settings, out,
                       plan_settings={"seed": run["seed"],
                                      "member_fraction": run["member_fraction"],
                                      "repeats": ",".join(map(str, run["repeats"])),
                                      "documents": documents})


def score_run(docs: pd.DataFrame, truth: pd.DataFrame, model_yaml: str,
              scoring: Mapping[str, Any], cache_dir: Path,
              families: Sequence[str] = ("membership",)
              ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Every document's scores on the model of ``model_yaml`` and the result against the
    truth (as ``membership-score --truth`` prints it), plus dataset inference between two
    random halves of the non-members (``dataset_inference_nonmember_halves``). ``families``
    beyond ``membership``: extraction's p_z and MSR's match of each document
    (copyprobe.membership.truth_measures, settings in ``scoring``), compared with the truth
    beside the scores; returned long (STUDY_MEASURES) as the second table."""
    from copyprobe.membership.cli import evaluate, load_model
    from copyprobe.membership.engine import document_pass, score_table
    from copyprobe.membership.inference import (
        DEFAULT_AGGREGATE,
        MIN_PER_SET,
        dataset_inference,
    )

    n = truth["member"].astype(bool).value_counts()
    if min(int(n.get(True, 0)), int(n.get(False, 0))) < MIN_PER_SET:
        raise ValueError(f"dataset inference needs at least {MIN_PER_SET} members and "
                         f"{MIN_PER_SET} non-members; the truth has {int(n.get(True, 0))} and "
                         f"{int(n.get(False, 0))}: give the run's source more documents")
    model = load_model(model_yaml, "model.yaml", cache_dir)
    passed = document_pass(docs, model, max_tokens=scoring["max_tokens"], moments=True)
    table = score_table(docs, model, max_tokens=scoring["max_tokens"], moments=True,
                        passed=passed)
    values, signs, facts = study_measures(docs, model, passed, scoring, families)
    aggregate = scoring.get("di_aggregate", DEFAULT_AGGREGATE)
    args = argparse.Namespace(n_boot=scoring["n_boot"], seed=scoring["seed"],
                              fpr_halvings=scoring["fpr_halvings"], di_aggregate=aggregate)
    result = evaluate(docs, table, truth, list(MEASURES), args,
                      extra=(values, signs) if signs else None)
    result["dataset_inference_nonmember_halves"] = nonmember_halves(
        docs.merge(truth, on="doc_id").merge(table, on="doc_id"), seed=scoring["seed"],
        dataset_inference=partial(dataset_inference, aggregate=aggregate))
    result["model"] = model.name
    result["families"] = list(families)
    result["study_measures"] = facts
    long = values.melt(id_vars="doc_id", var_name="measure", value_name="value")
    return table, long[STUDY_MEASURES.schema.names], result


def study_measures(docs: pd.DataFrame, model: Any, passed: Any, scoring: Mapping[str, Any],
                   families: Sequence[str]) -> tuple[pd.DataFrame, dict[str, int], dict]:
    """The per-document measures of the other studies that ``families`` name (one column
    each, by doc_id), their signs, and what was done (windows read from the pass, answers
    generated)."""
    from copyprobe.membership import truth_measures as tm

    values = docs[["doc_id"]].astype(str)
    signs: dict[str, int] = {}
    facts: dict[str, Any] = {}
    if "extraction" in families:
        windows, from_pass = tm.extraction_windows(docs, model, passed, scoring["windows"],
                                                   scoring.get("max_windows_per_document"))
        values = values.merge(tm.extraction_measures(windows), on="doc_id", how="left")
        signs.update(tm.EXTRACTION)
        facts["extraction"] = {"windows": int((windows["status"] == "scored").sum()),
                               "windows_from_pass": from_pass,
                               "window_settings": dict(scoring["windows"])}
    if "msr" in families:
        k = int(scoring["matching"]["k_min"])
        prompts = tm.msr_prompts(docs, model.name, scoring["msr"])
        gens = tm.generate(prompts, model)
        values = values.merge(tm.msr_match_measures(prompts, gens, k=k,
                                                    k_min=scoring["matching"]["k_min"],
                                                    k_max=scoring["matching"]["k_max"]),
                              on="doc_id", how="left")
        signs.update(tm.msr_measures(k))
        facts["msr"] = {"k": k, "prompts": int((prompts["status"] == "ready").sum()),
                        "answers": int((gens["status"] == "ok").sum()),
                        "prompt_format": scoring["msr"]["prompt_format"],
                        "n": scoring["msr"]["n"]}
    return values, signs, facts


def nonmember_halves(data: pd.DataFrame, *, seed: int, dataset_inference: Any) -> dict:
    """Dataset inference of one random half of the non-members against the other: a test
    that should find nothing (p about uniform)."""
    from copyprobe.membership.scores import oriented

    data = data[(data["status"] == "scored") & ~data["member"].astype(bool)]
    x = oriented(data, MEASURES)
    idx = np.random.default_rng([seed, 1]).permutation(len(x))
    half = len(x) // 2
    try:
        return dataset_inference(x[idx[:half]], x[idx[half:2 * half]], seed=seed)
    except ValueError as exc:
        return {"p_value": None, "error": str(exc)}


def result_table(run: str, result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per measure and level (``all``, then each number of repeats)."""
    rows = []
    for name, s in result["measures"].items():
        rows.append({"level": "all", "name": name, **s})
    for level, measures in result.get("by_repeats", {}).items():
        rows.extend({"level": level, "name": name, **s} for name, s in measures.items())
    out = []
    for r in rows:
        ci = r.get("auc_ci") or (None, None)
        out.append({"run": run, "model": result.get("model", ""), "measure": r["name"],
                    "repeats": r["level"], "n_members": r.get("n_members"),
                    "n_nonmembers": r.get("n_nonmembers", result["n_nonmembers"]),
                    "auc": r.get("auc"), "auc_ci_low": ci[0], "auc_ci_high": ci[1],
                    "tpr_at_1pct_fpr": r.get("tpr_at_1pct_fpr"),
                    "tpr_at_0.1pct_fpr": r.get("tpr_at_0.1pct_fpr"),
                    "auc_minus_blind": r.get("auc_minus_blind")})
    return pd.DataFrame(out, columns=RESULT.schema.names)


def _num(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.2f}"


def _p(di: Mapping[str, Any]) -> str:
    if di.get("p_value") is None:
        return f"undefined ({di['error']})" if di.get("error") else "undefined"
    return f"{di['p_value']:.3g}"


def result_markdown(run: str, result: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """The run's table: each measure's AUC against the truth with its interval, overall and
    per duplication level, the blind baseline, dataset inference and the answer."""
    levels = list(result.get("by_repeats", {}))
    head = ["measure", "AUC (95% CI)", *(f"AUC, seen {lv}x" for lv in levels), "TPR@1%FPR",
            "AUC - blind"]
    n = result["n_members"] + result["n_nonmembers"]
    how = (f"{record.get('base_model')} trained elsewhere, {result['n_members']} of {n} "
           f"documents members by {record.get('truth')}"
           if record.get("outcome") == "given" else
           f"{record.get('base_model')} fine-tuned on {result['n_members']} of {n} documents "
           f"(a random split, seed {record.get('settings', {}).get('seed')}), "
           f"{record.get('steps')} steps in {record.get('seconds')} s")
    lines = [f"## Membership against the truth: run {run}", "",
             f"{how}; scored as {result.get('model')}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in result["measures"].items():
        ci = s.get("auc_ci")
        cells = [name, _num(s["auc"]) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""),
                 *(_num(result["by_repeats"][lv].get(name, {}).get("auc")) for lv in levels),
                 _num(s.get("tpr_at_1pct_fpr")), _num(s.get("auc_minus_blind"))]
        lines.append("| " + " | ".join(cells) + " |")
    ci = result.get("blind_auc_ci")
    lines.append(f"| blind baseline (text only) | {_num(result['blind_auc'])}"
                 + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") + " |"
                 + " |" * (len(head) - 2))
    lines += study_notes(result.get("study_measures", {}))
    di, halves = result["dataset_inference"], result["dataset_inference_nonmember_halves"]
    fpr = di.get("false_positive_rate")
    lines += ["", f"Dataset inference: members against non-members p = {_p(di)}; one half of "
              f"the non-members against the other p = {_p(halves)} (no membership to find)."]
    if fpr:
        lines.append(f"False-positive rate: p < 0.05 in {fpr['rate']:.3f} of "
                     f"{fpr['halvings']} random halvings of the non-members (it should be "
                     "about 0.05 or below).")
    smallest = di.get("smallest_detecting_size")
    if smallest:
        size = smallest["size"]
        lines.append(f"Smallest set at which dataset inference detects the members (p < "
                     f"{smallest['alpha']:g}): "
                     + (f"{size} members against {size} non-members (p = "
                        f"{smallest['p_values'][str(size)]:.3g})." if size else
                        "none, not even with every document."))
    blind, bci = result["blind_auc"], result.get("blind_auc_ci")
    off = blind is not None and (abs(blind - 0.5) >= 0.25
                                 or (bci is not None and not bci[0] <= 0.5 <= bci[1]))
    if off:
        lines.append(f"Warning: the blind baseline is {blind:.2f}, not the 0.5 a random split "
                     "gives: the members' texts differ from the non-members'.")
    else:
        lines.append("The blind baseline is consistent with 0.5, as a random split gives: a "
                     "measure's AUC above it is membership, not a difference of text.")
    if result["small_sample_warning"]:
        lines.append(result["small_sample_warning"])
    lines += ["", "Answer: " + answer(result)]
    return "\n".join(lines) + "\n"


def study_notes(facts: Mapping[str, Any]) -> list[str]:
    """What the other studies' rows are: how p_z was scored, how MSR's answers were made."""
    lines = []
    if "extraction" in facts:
        x, w = facts["extraction"], facts["extraction"]["window_settings"]
        lines.append(f"Extraction (max_log_pz, mean_log_pz_per_token): exact p_z of "
                     f"{x['windows']} windows of {w['prefix_tokens']} + {w['suffix_tokens']} "
                     f"tokens, {x['windows_from_pass']} read from the membership pass (a "
                     "window at a document's start), the others scored alone.")
    if "msr" in facts:
        m = facts["msr"]
        lines.append(f"MSR (msr_longest, msr_match_{m['k']}): the model wrote segment "
                     f"{m['n']} after segments 1..{m['n'] - 1} ({m['prompt_format']}) for "
                     f"{m['answers']} of {m['prompts']} documents; the longest verbatim "
                     f"match in words, and whether it reaches {m['k']} words (f_{m['k']}).")
    return [""] + lines if lines else []


def answer(result: Mapping[str, Any]) -> str:
    if not result["measures"]:
        return "no measure could be compared."
    best, s = max(result["measures"].items(), key=lambda kv: kv[1]["auc"] or 0)
    ci = s.get("auc_ci")
    detects = ci is not None and ci[0] > 0.5
    return (f"the best measure, {best}, separates members from non-members with AUC "
            f"{_num(s['auc'])}" + (f" (95% CI {ci[0]:.2f} to {ci[1]:.2f})" if ci else "")
            + (": it detects membership." if detects
               else ": not distinguishable from chance at this sample size."))
