"""Ground truth by insertion, as commands (docs/membership.md):

    copyprobe membership-train --model-config BASE.yaml --documents DOCS.jsonl --out DIR
        [--seed S] [--member-fraction 0.5] [--repeats 1,4] [--epochs E] [--lora]
    copyprobe membership-canaries --n N --seed S --out DIR

Every input is checked before the model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.membership.insertion import PlanError


def _plan(args: argparse.Namespace, doc_ids: list[str]) -> Any:
    from copyprobe.membership.insertion import make_plan, parse_repeats

    try:
        return make_plan(doc_ids, seed=args.seed, member_fraction=args.member_fraction,
                         repeats=parse_repeats(args.repeats))
    except PlanError as exc:
        raise SystemExit(f"copyprobe: {exc}") from None


def level_table(plan: pd.DataFrame, losses: list[dict[str, Any]]) -> str:
    """Per duplication level: members, training steps, and the members' mean training loss
    the first and the last time each was seen."""
    curve = pd.DataFrame(losses)
    lines = [f"{'repeats':>7} {'documents':>9} {'steps':>6} {'loss first seen':>16} "
             f"{'loss last seen':>15}"]
    for level, part in plan.groupby("repeats"):
        ids = set(part["doc_id"])
        seen = curve[curve["doc_id"].isin(ids)] if len(curve) else curve
        if level == 0 or seen.empty:
            lines.append(f"{level:>7} {len(ids):>9} {0:>6} {'(not trained on)':>16}")
            continue
        by_doc = seen.groupby("doc_id")["loss"]
        lines.append(f"{level:>7} {len(ids):>9} {len(seen):>6} {by_doc.first().mean():>16.3f} "
                     f"{by_doc.last().mean():>15.3f}")
    return "\n".join(lines)


def cmd_membership_train(args: argparse.Namespace) -> dict[str, Any]:
    from copyprobe.membership.cli import load_model, read_documents
    from copyprobe.membership.insertion import check_documents
    from copyprobe.membership.train import MODEL_YAML, PLAN, TrainSettings, train_model

    docs = read_documents(args.documents)
    try:
        check_documents(docs, f"--documents {args.documents}")
    except PlanError as exc:
        raise SystemExit(f"copyprobe: {exc}") from None
    plan = _plan(args, docs["doc_id"].tolist())
    for flag, value in (("--epochs", args.epochs), ("--max-tokens", args.max_tokens),
                        ("--lora-rank", args.lora_rank)):
        if value < 1:
            raise SystemExit(f"copyprobe: {flag} {value}: must be at least 1")
    if args.lr is not None and not args.lr > 0:
        raise SystemExit(f"copyprobe: --lr {args.lr}: must be positive")
    settings = TrainSettings(seed=args.seed, epochs=args.epochs, lr=args.lr, lora=args.lora,
                             lora_rank=args.lora_rank, lora_alpha=2 * args.lora_rank,
                             max_tokens=args.max_tokens, checkpoint_every=args.checkpoint_every)
    base = load_model(args.model_config, "--model-config", Path(args.cache_dir))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = train_model(base.name, base.spec, base.model_file, docs, plan, settings, out,
                         plan_settings={"seed": args.seed, "member_fraction": args.member_fraction,
                                        "repeats": args.repeats,
                                        "documents": str(args.documents)})
    members = plan[plan["member"]]
    how = {"reused": "reused the completed run of the same settings (nothing trained)",
           "trained": "trained",
           "resumed": f"resumed from the checkpoint at step {record['resumed_from_step']}"}
    print(f"membership-train: {how[record['outcome']]}: {base.name} fine-tuned on "
          f"{len(members)} of {len(plan)} documents, {record['steps']} steps "
          f"({'LoRA rank ' + str(settings.lora_rank) if settings.lora else 'full fine-tune'}, "
          f"lr {settings.learning_rate:g}, {settings.epochs} epoch(s)), "
          f"{record['tokens_trained']} tokens in {record['seconds']:.0f} s on "
          f"{record['device']}", file=sys.stderr)
    print(level_table(plan, record["loss_curve"]), file=sys.stderr)
    print(f"Answer: {out / MODEL_YAML} is a model config of the trained model; the truth is "
          f"{out / PLAN}. Measure it with: copyprobe membership-score --model-config "
          f"{out / MODEL_YAML} --documents {args.documents} --truth {out / PLAN} --out "
          "scores.parquet", file=sys.stderr)
    return {"outcome": record["outcome"], "resumed_from_step": record["resumed_from_step"],
            "model_config": str(out / MODEL_YAML), "insertion": str(out / PLAN),
            "plan_digest": record["plan_digest"], "key": record["key"],
            "steps": record["steps"], "tokens_trained": record["tokens_trained"],
            "seconds": record["seconds"]}


def cmd_membership_canaries(args: argparse.Namespace) -> dict[str, Any]:
    from copyprobe.artifacts import write_text
    from copyprobe.membership.canaries import make_canaries

    try:
        canaries = make_canaries(args.n, args.seed)
    except ValueError as exc:
        raise SystemExit(f"copyprobe: {exc}") from None
    plan = _plan(args, canaries["doc_id"].tolist())
    from copyprobe.membership.insertion import write_plan

    out = Path(args.out)

    def jsonl(df: pd.DataFrame) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in df.to_dict("records"))

    inserted = canaries.merge(plan, on="doc_id")
    inserted = inserted[inserted["member"]][["doc_id", "text", "repeats"]]
    write_text(out / "canaries.jsonl", jsonl(canaries))
    write_text(out / "insert.jsonl", jsonl(inserted))
    digest = write_plan(plan, out / "record.parquet", seed=args.seed, n=args.n,
                        member_fraction=args.member_fraction, repeats=args.repeats)
    write_text(out / "record.sha256", f"{digest}  record.parquet\n")
    print(f"membership-canaries: {args.n} canaries in {out / 'canaries.jsonl'}; insert the "
          f"{len(inserted)} of {out / 'insert.jsonl'} into the training data, each its "
          f"'repeats' times. Sealed record {out / 'record.parquet'}, digest {digest}: keep "
          "the digest apart from the files. After training: copyprobe membership-score "
          f"--documents {out / 'canaries.jsonl'} --truth {out / 'record.parquet'} ...",
          file=sys.stderr)
    return {"canaries": str(out / "canaries.jsonl"), "insert": str(out / "insert.jsonl"),
            "record": str(out / "record.parquet"), "record_digest": digest,
            "members": int(len(inserted)), "non_members": int(args.n - len(inserted))}


def _plan_args(s: argparse.ArgumentParser, seed_help: str) -> None:
    s.add_argument("--seed", type=int, default=0, help=seed_help)
    s.add_argument("--member-fraction", type=float, default=0.5,
                   help="share of the documents made members")
    s.add_argument("--repeats", default="1,4",
                   help="duplication levels, members split evenly over them")


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "membership-train",
        help="ground truth by insertion: fine-tune a local model on a random half of "
             "documents at several duplication levels",
        description="Split the documents at random into members and non-members "
                    "(insertion.parquet), fine-tune the base model on the members, each its "
                    "level's number of times (transformers; full fine-tune or LoRA), and write "
                    "the model folder, train.json and model.yaml, a model config the other "
                    "commands take. A completed run with the same key is reused; a killed "
                    "one resumes from its last checkpoint (docs/membership.md).")
    s.add_argument("--model-config", required=True,
                   help="the base model: an hf entry, or one with a GGUF model_file")
    s.add_argument("--documents", required=True,
                   help="a JSONL file: one object per line with doc_id and text")
    s.add_argument("--out", required=True, help="the folder to write")
    _plan_args(s, "seed of the split, the training order and LoRA's initialisation")
    s.add_argument("--epochs", type=int, default=1, help="passes over the members")
    s.add_argument("--lr", type=float, default=None,
                   help="learning rate (default 1e-5, with --lora 5e-4)")
    s.add_argument("--lora", action="store_true", help="train LoRA adapters (peft), merged "
                   "into the written weights")
    s.add_argument("--lora-rank", type=int, default=4, help="LoRA rank")
    s.add_argument("--max-tokens", type=int, default=256,
                   help="train on each document's first N tokens")
    s.add_argument("--checkpoint-every", type=int, default=25,
                   help="steps between checkpoints, 0 for none")
    s.add_argument("--cache-dir", default=".cache/copyprobe",
                   help="where an assembled base model file is kept")
    s.set_defaults(func=cmd_membership_train)

    c = sub.add_parser(
        "membership-canaries",
        help="canary texts for a model trained elsewhere, and the sealed record of which "
             "to insert",
        description="Write N random but natural-looking canaries made from the seed "
                    "(canaries.jsonl), those to insert with their repeats (insert.jsonl), and "
                    "the sealed record (record.parquet, doc_id, member, repeats; its digest "
                    "printed and in record.sha256) that membership-score --truth reads "
                    "(docs/membership.md).")
    c.add_argument("--n", type=int, required=True, help="number of canaries")
    c.add_argument("--out", required=True, help="the folder to write")
    _plan_args(c, "seed of the texts and of the split")
    c.set_defaults(func=cmd_membership_canaries)
