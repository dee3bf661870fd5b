"""The membership study's command: the standard membership scores of a document set, and,
given the truth, how well each separates members from non-members.

    copyprobe membership-score --model-config M.yaml --documents DOCS.jsonl --out scores.parquet
                               [--truth insertion.parquet] [--reference-config R.yaml]

Every check (the files, the truth's ids, what the backend can give, the reference model's
tokenizer, the set sizes dataset inference needs) runs before any model call.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_CACHE = ".cache/copyprobe"


def read_documents(path: str) -> Any:
    """The documents of a JSONL file: objects with a string ``doc_id`` (unique) and
    ``text``; errors name the file and line."""
    import pandas as pd

    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"copyprobe: --documents {p}: cannot read it ({exc})") from None
    rows, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"copyprobe: --documents {p} line {n}: not JSON ({exc})") from None
        if not (isinstance(obj, dict) and isinstance(obj.get("doc_id"), str)
                and isinstance(obj.get("text"), str)):
            raise SystemExit(f"copyprobe: --documents {p} line {n}: expected an object with "
                             "a string doc_id and a string text")
        if obj["doc_id"] in seen:
            raise SystemExit(f"copyprobe: --documents {p} line {n}: doc_id "
                             f"{obj['doc_id']!r} appears twice")
        seen.add(obj["doc_id"])
        rows.append({"doc_id": obj["doc_id"], "text": obj["text"]})
    if not rows:
        raise SystemExit(f"copyprobe: --documents {p}: no documents")
    return pd.DataFrame(rows)


def _ids(ids: Any, most: int = 5) -> str:
    ids = sorted(ids)
    return ", ".join(map(repr, ids[:most])) + (f" and {len(ids) - most} more"
                                               if len(ids) > most else "")


def read_truth(path: str, docs: Any) -> Any:
    """The truth table (``doc_id``, ``member``, ``repeats``) in the documents' order; its ids
    must be exactly the documents' (errors name the file and the ids), and a record sealed
    by ``membership-train`` or ``membership-canaries`` must still give its digest."""
    from copyprobe.artifacts import ArtifactError, read_meta, read_table
    from copyprobe.membership.insertion import PlanError, read_plan

    try:
        truth = read_table(path)
        if read_meta(path).get("plan_digest") is not None:
            read_plan(path)
    except (ArtifactError, PlanError) as exc:
        raise SystemExit(f"copyprobe: --truth {exc}") from None
    missing = [c for c in ("doc_id", "member", "repeats") if c not in truth.columns]
    if missing:
        raise SystemExit(f"copyprobe: --truth {path}: no column(s) {', '.join(missing)} "
                         "(it needs doc_id, member and repeats)")
    truth = truth.assign(doc_id=truth["doc_id"].astype(str))
    dup = truth["doc_id"][truth["doc_id"].duplicated()]
    if len(dup):
        raise SystemExit(f"copyprobe: --truth {path}: doc_id(s) {_ids(set(dup))} appear twice")
    have, want = set(truth["doc_id"]), set(docs["doc_id"])
    if have != want:
        parts = []
        if want - have:
            parts.append(f"no row for document(s) {_ids(want - have)}")
        if have - want:
            parts.append(f"id(s) {_ids(have - want)} that are not in the documents")
        raise SystemExit(f"copyprobe: --truth {path}: its ids do not match the documents: "
                         + "; ".join(parts))
    return docs[["doc_id"]].merge(truth[["doc_id", "member", "repeats"]], on="doc_id")


def load_model(path: str, flag: str, cache_dir: Path) -> Any:
    """A model-config file validated as a workflow's model entry (schema, backend keys, model
    file, scoring capability), its model file prepared; errors name the flag and file."""
    from copyprobe.config import ConfigError, model_entry, model_slice, validate_config
    from copyprobe.generation.logprob_scoring import cannot_score_reason
    from copyprobe.membership.engine import Model
    from copyprobe.models import prepare

    name, entry = model_entry(path, flag)
    cfg = {"cache_dir": str(cache_dir), "sources": {"text": {"kind": "local", "path": "."}},
           "models": {name: {**entry, "studies": ["membership"]}}}
    try:
        cfg = validate_config(cfg)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {flag} {path}: {exc}") from None
    reason = cannot_score_reason(name, cfg["models"][name])
    if reason is not None:
        raise SystemExit(f"copyprobe: {flag} {path}: {reason}")
    spec = model_slice(cfg, name)
    return Model.from_slice(spec, prepare(spec.get("model_file"), cache_dir))


def chosen_scores(args: argparse.Namespace, model: Any) -> list[str]:
    """The scores to compute: ``--scores`` or every standard one (the reference ratio with a
    reference model); one the backend cannot give is an error naming the need."""
    from copyprobe.membership.scores import MEASURES, NEEDS_MOMENTS, NEEDS_REFERENCE

    default = [m for m in MEASURES if args.reference_config or m not in NEEDS_REFERENCE]
    names = [s.strip() for s in args.scores.split(",")] if args.scores else default
    unknown = [n for n in names if n not in MEASURES]
    if unknown:
        raise SystemExit(f"copyprobe: --scores: unknown score(s) {', '.join(unknown)}; known: "
                         f"{', '.join(MEASURES)}")
    if any(n in NEEDS_REFERENCE for n in names) and not args.reference_config:
        raise SystemExit("copyprobe: --scores: reference_ratio needs --reference-config")
    kpp = [n for n in names if n in NEEDS_MOMENTS]
    if kpp and not model.has_moments():
        others = ",".join(n for n in names if n not in NEEDS_MOMENTS)
        raise SystemExit(
            f"copyprobe: --model-config {args.model_config}: backend "
            f"{model.spec['backend']!r} gives only the log-probabilities of the scored tokens "
            f"(a server's echo), not the full next-token distribution that Min-k%++ "
            f"({', '.join(kpp)}) needs; leave them out (--scores {others}) or use a backend "
            "that gives it (llamacpp, hf)")
    return names


def check_reference(args: argparse.Namespace, model: Any, reference: Any, texts: list[str],
                    max_tokens: int) -> None:
    """The reference ratio compares per-token losses over the same tokens: the reference
    must tokenise every document as the model does."""
    mine, theirs = model.tokenizer(), reference.tokenizer()
    for i, text in enumerate(texts):
        if (mine.add_bos != theirs.add_bos
                or mine.tokenize(text)[:max_tokens] != theirs.tokenize(text)[:max_tokens]):
            raise SystemExit(
                f"copyprobe: --reference-config {args.reference_config}: model "
                f"{reference.name!r} tokenises document {i + 1} differently from "
                f"{model.name!r}; the reference ratio (loss minus the reference's loss per "
                "token) needs a reference with the same tokenizer")


def cmd_membership_score(args: argparse.Namespace) -> dict[str, Any] | None:
    from copyprobe.artifacts import provenance, write_table
    from copyprobe.membership.engine import SCORES, score_table
    from copyprobe.membership.inference import MIN_PER_SET
    from copyprobe.membership.scores import NEEDS_MOMENTS

    docs = read_documents(args.documents)
    truth = read_truth(args.truth, docs) if args.truth else None
    if truth is not None:
        counts = truth["member"].astype(bool).value_counts()
        small = [f"{n} {label}" for label, n in (("members", int(counts.get(True, 0))),
                                                 ("non-members", int(counts.get(False, 0))))
                 if n < MIN_PER_SET]
        if small:
            raise SystemExit(f"copyprobe: --truth {args.truth}: dataset inference needs at "
                             f"least {MIN_PER_SET} members and {MIN_PER_SET} non-members "
                             f"(half of each fits its linear model); it has "
                             f"{' and '.join(small)}")
    cache_dir = Path(args.cache_dir)
    model = load_model(args.model_config, "--model-config", cache_dir)
    names = chosen_scores(args, model)
    reference = None
    if args.reference_config:
        reference = load_model(args.reference_config, "--reference-config", cache_dir)
        check_reference(args, model, reference, docs["text"].tolist(), args.max_tokens)
    table = score_table(docs, model, max_tokens=args.max_tokens,
                        moments=any(n in NEEDS_MOMENTS for n in names), reference=reference)
    write_table(table, args.out, SCORES,
                provenance("membership_score", {"scores": names, "max_tokens": args.max_tokens},
                           documents=str(args.documents), model_config=str(args.model_config),
                           reference_config=args.reference_config, truth=args.truth))
    failed = table[table["status"] != "scored"]
    print(f"{model.name}: {len(table) - len(failed)} document(s) scored, {len(failed)} failed; "
          f"written to {args.out}", file=sys.stderr)
    if truth is None:
        return None
    result = evaluate(docs, table, truth, names, args)
    print(human_table(result), file=sys.stderr)
    return result


def evaluate(docs: Any, table: Any, truth: Any, names: list[str],
             args: argparse.Namespace, extra: Any = None) -> dict[str, Any]:
    """Each score against the truth, and dataset inference of members against non-members
    (on the scores ``names``). ``extra``: other per-document measures (a table of doc_id and
    one column each, and their name -> sign), compared with the truth beside them."""
    from copyprobe.membership.compare import compare_sets
    from copyprobe.membership.inference import (
        dataset_inference,
        false_positive_rate,
        smallest_detecting_size,
    )
    from copyprobe.membership.scores import MEASURES, oriented

    data = docs.merge(truth, on="doc_id").merge(table, on="doc_id")
    compared, orientation = list(names), dict(MEASURES)
    if extra is not None:
        values, signs = extra
        data = data.merge(values, on="doc_id", how="left")
        compared += list(signs)
        orientation.update(signs)
    data = data[data["status"] == "scored"].assign(member=lambda d: d["member"].astype(bool))
    out = compare_sets(data, compared, n_boot=args.n_boot, seed=args.seed,
                       orientation=orientation)
    out["failed_documents"] = int(len(table) - len(data))
    features = oriented(data, names)
    member = data["member"].to_numpy()
    try:
        di = dataset_inference(features[member], features[~member], seed=args.seed,
                               aggregate=args.di_aggregate)
    except ValueError as exc:  # documents that failed to score left a set too small
        di = {"p_value": None, "error": str(exc)}
    try:
        di["false_positive_rate"] = false_positive_rate(features[~member],
                                                        halvings=args.fpr_halvings,
                                                        seed=args.seed,
                                                        aggregate=args.di_aggregate)
    except ValueError as exc:
        di["false_positive_rate"] = None
        out["notes"].append(f"dataset inference's false-positive rate not measured: {exc}")
    try:
        di["smallest_detecting_size"] = smallest_detecting_size(
            features[member], features[~member], seed=args.seed, aggregate=args.di_aggregate)
    except ValueError as exc:
        di["smallest_detecting_size"] = None
        out["notes"].append(f"dataset inference's smallest detecting size not measured: {exc}")
    out["dataset_inference"] = di
    levels = sorted(int(r) for r in data.loc[data["member"], "repeats"].unique())
    if len(levels) > 1:
        out["by_repeats"] = {}
        for level in levels:
            part = data[~data["member"] | (data["repeats"] == level)]
            if int(part["member"].sum()) >= 2:
                out["by_repeats"][str(level)] = {
                    n: {k: v for k, v in s.items() if k in ("auc", "auc_ci", "n_members")}
                    for n, s in compare_sets(part, compared, n_boot=args.n_boot,
                                             seed=args.seed,
                                             orientation=orientation)["measures"].items()}
    return out


def human_table(result: dict[str, Any]) -> str:
    """A small table of the result and a sentence answer."""
    def iv(x: Any) -> str:
        return "" if not x else f"[{x[0]:.2f}, {x[1]:.2f}]"

    def num(x: Any) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    lines = [f"{'measure':<16}{'AUC':>6} {'95% CI':<14}{'TPR@1%':>7}{'TPR@0.1%':>9}"
             f"{'AUC-blind':>10}"]
    for name, s in result["measures"].items():
        lines.append(f"{name:<16}{num(s['auc']):>6} {iv(s['auc_ci']):<14}"
                     f"{num(s['tpr_at_1pct_fpr']):>7}{num(s['tpr_at_0.1pct_fpr']):>9}"
                     f"{num(s['auc_minus_blind']):>10}")
    lines.append(f"{'blind baseline':<16}{num(result['blind_auc']):>6} "
                 f"{iv(result['blind_auc_ci'])}")
    di = result["dataset_inference"]
    fpr = di.get("false_positive_rate")
    p = "p undefined" if di.get("p_value") is None else f"p = {di['p_value']:.3g}"
    lines.append(f"dataset inference, members against non-members: {p}"
                 + (f"; false-positive rate over {fpr['halvings']} halvings of the non-members "
                    f"{fpr['rate']:.3f}" if fpr else ""))
    size = (di.get("smallest_detecting_size") or {}).get("size")
    if di.get("smallest_detecting_size"):
        alpha = di["smallest_detecting_size"]["alpha"]
        lines.append(f"smallest set at which dataset inference detects the members "
                     f"(p < {alpha:g}): "
                     + (f"{size} documents each" if size else "none, all documents included"))
    if result["measures"]:
        best, s = max(result["measures"].items(), key=lambda kv: kv[1]["auc"] or 0)
        ci = s["auc_ci"]
        detects = ci is not None and ci[0] > 0.5
        lines.append(f"Answer: the best measure, {best}, separates members from non-members "
                     f"with AUC {num(s['auc'])}" + (f" (95% CI {iv(ci)})" if ci else "")
                     + (": it detects membership" if detects
                        else ": not distinguishable from chance at this sample size") + ".")
    if result["small_sample_warning"]:
        lines.append(result["small_sample_warning"])
    return "\n".join(lines)


#: inference.AGGREGATES' names, default first (not imported here: the CLI starts fast)
DI_AGGREGATES = ("twice_median", "harmonic")


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "membership-score",
        help="membership scores of documents (loss, zlib, Min-k%%, Min-k%%++, reference), "
             "and with --truth how well each detects membership",
        description="Score each document in one teacher-forced pass (cached) and write the "
                    "standard membership scores as Parquet. With --truth (doc_id, member, "
                    "repeats) print, as JSON, each score's AUC and TPR at 1%% and 0.1%% FPR "
                    "with bootstrap intervals, the blind baseline, and dataset inference of "
                    "members against non-members (docs/membership.md).")
    s.add_argument("--model-config", required=True,
                   help="a YAML file holding one model entry (the keys of a models: entry)")
    s.add_argument("--documents", required=True,
                   help="a JSONL file: one object per line with doc_id and text")
    s.add_argument("--out", required=True, help="the per-document scores (Parquet) to write")
    s.add_argument("--truth", help="a Parquet file with doc_id, member and repeats")
    s.add_argument("--reference-config",
                   help="a second model entry (same tokenizer): adds reference_ratio")
    s.add_argument("--scores", help="comma-separated scores (default: every standard score)")
    s.add_argument("--max-tokens", type=int, default=512,
                   help="score each document's first N tokens")
    s.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")
    s.add_argument("--fpr-halvings", type=int, default=200,
                   help="random halvings of the non-members that measure dataset inference's "
                        "false-positive rate")
    s.add_argument("--di-aggregate", choices=DI_AGGREGATES, default=DI_AGGREGATES[0],
                   help="how dataset inference combines its splits' p-values (harmonic: the "
                        "authors' code, measured anti-conservative)")
    s.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the splits")
    s.add_argument("--cache-dir", default=DEFAULT_CACHE,
                   help="the call cache, shared with the workflow's")
    s.set_defaults(func=cmd_membership_score)
