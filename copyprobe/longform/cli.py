"""The long-form study's command: how much of a book one model writes out, outside Snakemake.

Reference: docs/longform.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DEFAULT_CACHE = ".cache/copyprobe"


def _read(path: str, flag: str) -> Any:
    import yaml

    p = Path(path)
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{flag} {p}: cannot read it as YAML ({exc})") from None


def _model(args: argparse.Namespace) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(name, entry, longform block) from --model-config: one model entry, or a workflow
    config (its ``models``, one chosen by --model, and its ``longform`` block)."""
    from copyprobe.config import model_entry

    data = _read(args.model_config, "--model-config")
    if not (isinstance(data, dict) and isinstance(data.get("models"), dict)):
        return (*model_entry(args.model_config), {})
    models = data["models"]
    name = args.model or (next(iter(models)) if len(models) == 1 else None)
    if name not in models:
        raise ValueError(f"--model-config {args.model_config}: name one of its models with "
                         f"--model ({', '.join(models)})")
    entry = {k: v for k, v in models[name].items() if k not in ("studies", "cutoff")}
    return name, entry, dict(data.get("longform") or {})


def _settings_block(args: argparse.Namespace, block: dict[str, Any]) -> dict[str, Any]:
    block = dict(block)
    if args.settings:
        data = _read(args.settings, "--settings")
        if not isinstance(data, dict):
            raise ValueError(f"--settings {args.settings}: expected a mapping of longform keys")
        block.update(data.get("longform", data))
    for key in ("attempts", "max_turns"):
        if getattr(args, key) is not None:
            block[key] = getattr(args, key)
    return block


def validated(name: str, entry: dict[str, Any], block: dict[str, Any],
              args: argparse.Namespace) -> dict[str, Any]:
    """A config of one model in the study, validated with the workflow's machinery."""
    from copyprobe.config import ConfigError, validate_config

    cfg = {"cache_dir": str(args.cache_dir),
           "sources": {"text": {"kind": "local", "path": "."}},
           "datasets": {"text": ["text"]},
           "models": {name: {"cutoff": "1970-01-01", **entry, "studies": ["longform"]}},
           "longform": block}
    try:
        return validate_config(cfg)
    except ConfigError as exc:
        raise ValueError(f"extract-book: {exc}") from None


def answer(s: dict[str, Any]) -> str:
    """One sentence: what the run found."""
    if s["nv_recall"] is None:
        return (f"No measurement: every one of the {s['calls']} request(s) failed "
                f"({s['stopped']}); a rerun retries them.")
    if s["passing_attempt"] is None:
        return (f"The model never continued the opening near-verbatim in {s['attempts']} "
                f"attempt(s) ({s['refusals']} refusal(s)), so nothing of the book was extracted.")
    return (f"The model wrote out {100 * s['nv_recall']:.1f}% of the book near-verbatim "
            f"(longest block {s['longest_block_words']} words) after {s['attempts']} probe "
            f"attempt(s) and {s['turns']} continuation turn(s); it stopped: {s['stopped']}.")


def table(s: dict[str, Any]) -> str:
    cells = [("nv_recall", "n/a" if s["nv_recall"] is None else f"{s['nv_recall']:.4f}"),
             ("longest_block_words", s["longest_block_words"]),
             ("matched_words", s["matched_words"]),
             ("rouge_l", "n/a" if s["rouge_l"] is None else f"{s['rouge_l']:.4f}"),
             ("attempts", s["attempts"]), ("refusals", s["refusals"]), ("turns", s["turns"]),
             ("completion_tokens", s["completion_tokens"]),
             ("cost_usd", "n/a" if s["cost_usd"] is None else f"{s['cost_usd']:.4f}"),
             ("stopped", s["stopped"])]
    return "\n".join(f"{k:<20} {v}" for k, v in cells)


def cmd_extract_book(args: argparse.Namespace) -> None:
    from copyprobe.artifacts import provenance, write_table
    from copyprobe.config import model_slice
    from copyprobe.longform.engine import Caller, Settings, extract
    from copyprobe.longform.figures import plot_blocks
    from copyprobe.longform.tables import BLOCKS
    from copyprobe.models import ModelFile, prepare

    book_path = Path(args.book)
    try:
        book = book_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"copyprobe: {book_path}: cannot read it as UTF-8 text ({exc})") \
            from None
    name, entry, block = _model(args)
    cfg = validated(name, entry, _settings_block(args, block), args)
    settings = Settings.from_config(cfg["longform"])
    if not book.split():
        raise ValueError(f"{book_path}: the book is empty")
    spec = model_slice(cfg, name)
    model_file = ModelFile.from_manifest(prepare(spec.get("model_file"),
                                                 Path(cfg["cache_dir"])))
    if model_file is not None:
        spec.setdefault("model_id", model_file.path.name)
    caller = Caller(spec, model_file, cfg["cache_dir"], settings.probe_max_tokens)
    try:
        outcome = extract(book, settings, caller, doc_id=book_path.name, model=name)
    finally:
        caller.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = provenance("extract_book", cfg["longform"], book=str(book_path),
                      model_config=str(args.model_config))
    write_table(outcome.blocks, out / "blocks.parquet", BLOCKS, meta)
    outcome.calls.drop(columns=["created_at"], errors="ignore").to_parquet(
        out / "calls.parquet", index=False)
    s = outcome.summary
    (out / "summary.json").write_text(json.dumps(s, indent=2) + "\n", encoding="utf-8")
    plot_blocks(outcome.blocks, s["book_words"], out / "blocks.png",
                f"{name}: {book_path.name}, nv-recall "
                + ("n/a" if s["nv_recall"] is None else f"{100 * s['nv_recall']:.1f}%"))
    print(json.dumps(s, indent=2))
    print(answer(s))
    print(table(s))


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("extract-book",
                       help="long-form extraction: how much of a book a chat model writes out",
                       description="Probe a chat model with the book's opening (Best-of-N "
                                   "perturbed attempts until an answer continues it "
                                   "near-verbatim), ask it to continue turn by turn, and "
                                   "measure nv-recall: the share of the book written out "
                                   "near-verbatim (docs/longform.md).")
    s.add_argument("book", help="a UTF-8 text file (the whole file is the book)")
    s.add_argument("--model-config", required=True,
                   help="a YAML file holding one model entry (the keys of a models: entry)")
    s.add_argument("--model", help="the model of a workflow config given as --model-config "
                   "(its longform block applies too); default: its only model")
    s.add_argument("--out", required=True, help="the folder to write the results to")
    s.add_argument("--attempts", type=int, help="phase 1: requests at most (default 10)")
    s.add_argument("--max-turns", type=int, help="phase 2: continuation turns at most "
                   "(default 20)")
    s.add_argument("--settings", help="a YAML file of longform keys (a longform: block or "
                   "its keys), under --attempts and --max-turns")
    s.add_argument("--cache-dir", default=DEFAULT_CACHE,
                   help="the call cache, shared with the workflow's")
    s.set_defaults(func=cmd_extract_book)
