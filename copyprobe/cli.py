"""copyprobe: audit language models for verbatim regurgitation of their training data.

The Snakemake workflow is the main tool: ``snakemake --cores N`` in the project folder runs a
whole study (collect documents, build prompts, generate, match, statistics, tables, figures)
with caching and incremental reruns; ``--configfile mine.yaml --replace-workflow-config`` runs
your own config instead of the demo's. The commands below run single steps outside it: check a
config, run one model of a config on one prompts table, re-score released generations.

Results are JSON on stdout; an error is one line on stderr (exit status 1). Each command's
options: copyprobe COMMAND --help; all commands: README.md (Commands).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from copyprobe.cli_help import HelpFormatter
from copyprobe.extras import explain
from copyprobe.listing import KINDS
from copyprobe.listing import add_command as add_list_command
from copyprobe.spans.cli import add_commands as add_index_commands
from copyprobe.studies import studies


def cmd_validate_config(args: argparse.Namespace) -> dict:
    from copyprobe.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    out = {"valid": True, "models": list(cfg["models"]), "sources": list(cfg["sources"])}
    for study in studies():
        out.update(study.summary(cfg))
    return out


def cmd_collect(args: argparse.Namespace) -> dict:
    from copyprobe.config import ConfigError, load_config, source_cutoffs, source_spec
    from copyprobe.sources.collect import collect, summary, write_result

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    if args.source not in cfg["sources"]:
        raise SystemExit(f"copyprobe: source {args.source!r} is not in {args.config}; known: "
                         f"{', '.join(cfg['sources'])}")
    out = Path(args.out)
    stem = out.name.removesuffix(".parquet")
    paths = {"corpus": out,
             "skipped": Path(args.skipped or out.with_name(f"{stem}.skipped.parquet")),
             "manifest": Path(args.manifest or out.with_name(f"{stem}.manifest.parquet"))}
    spec = source_spec(cfg, args.source)
    result = collect(args.source, spec, source_cutoffs(cfg, args.source))
    write_result(result, args.source, spec, **paths)
    return {**summary(result, args.source), **{f"{k}_file": str(v) for k, v in paths.items()}}


def _source_count(text: str) -> tuple[str, int]:
    name, sep, count = text.partition("=")
    if not sep or not name or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected SOURCE=N (a source name and a count), "
                                         f"got {text!r}")
    return name, int(count)


def cmd_cost(args: argparse.Namespace) -> dict | None:
    from copyprobe import cost
    from copyprobe.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    rows = cost.estimate(cfg, dict(args.documents or []))
    if args.markdown:
        sys.stdout.write(cost.markdown(rows))
        return None
    return {"models": cost.by_model(rows), "runs": rows, "total": cost.summary(rows)}


def cmd_generate(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
    from copyprobe.config import ConfigError, load_config, run_slice, variant_names
    from copyprobe.generation import generate_shard
    from copyprobe.generation.base import backend_facts, job_threads
    from copyprobe.models import prepare

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    if not Path(args.prompts).is_file():
        raise SystemExit(f"copyprobe: {args.prompts}: no such file")
    if args.model not in cfg["models"]:
        raise SystemExit(f"copyprobe: model {args.model!r} is not in {args.config}")
    if args.variant not in variant_names(cfg):
        raise SystemExit(f"copyprobe: variant {args.variant!r} is not in {args.config}; "
                         f"known: {', '.join(variant_names(cfg))}")
    # the same slice and thread count as the workflow's generate job
    spec = run_slice(cfg, args.model, args.variant)
    if not backend_facts(spec["backend"])["remote"]:
        spec["n_threads"] = job_threads(spec)
    manifest = prepare(spec.get("model_file"), Path(spec["cache_dir"]))
    df, summary = generate_shard(read_table(args.prompts, PROMPTS), spec, manifest,
                                 shard=args.shard)
    write_table(df, args.out, GENERATIONS,
                provenance("generate", {k: v for k, v in spec.items() if k != "cache_dir"},
                           summary=summary.as_dict()))
    report = summary.failure_report(spec.get("requests", {}).get("max_failure_share", 0.05))
    if report is not None:
        # the table (failed rows included) is written; answers received are in the cache
        raise SystemExit(f"copyprobe: {report} (table written to {args.out})")
    return {"out": args.out, **summary.as_dict()}


class _MainHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The top-level description (the module docstring) as written."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="copyprobe", description=__doc__.rstrip(),
                                formatter_class=_MainHelpFormatter)
    p.add_argument("--traceback", action="store_true",
                   help="on an error, print the full Python traceback instead of one line")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           title="commands")
    v = sub.add_parser("validate-config", help="validate a workflow config file",
                       description="Validate a workflow config file (schema, names, model "
                                   "files) and list its models, sources and what each "
                                   "study lists (its datasets, ...).")
    v.add_argument("config", help="the YAML config file")
    v.set_defaults(func=cmd_validate_config)
    c = sub.add_parser("collect", help="run one configured source (what the workflow's "
                                       "collect_corpus rule does)",
                       description="Run one source of a config outside Snakemake (same code, "
                                   "same HTTP cache) and write its corpus, skipped and manifest "
                                   "tables; prints documents, skipped and the skip reasons.")
    c.add_argument("config", help="the YAML config file")
    c.add_argument("--source", required=True, help="a source name from the config's sources")
    c.add_argument("--out", required=True, help="the corpus Parquet file to write")
    c.add_argument("--skipped", help="the skipped table (default: OUT's stem + .skipped.parquet)")
    c.add_argument("--manifest",
                   help="the manifest table (default: OUT's stem + .manifest.parquet)")
    c.set_defaults(func=cmd_collect)
    k = sub.add_parser("cost", help="what a config costs to run: calls, tokens, USD per "
                                    "model (planned from the config alone)",
                       description="Plan every request a full first run of a config sends, "
                                   "from the config alone (nothing is crawled or called): "
                                   "calls, prompt and completion tokens and USD at the "
                                   "models' prices (the prices table), per model and run. "
                                   "Upper bounds: each source gives its limit, each answer "
                                   "is as long as max_tokens allows (docs/paper-setups.md).")
    k.add_argument("config", help="the YAML config file")
    k.add_argument("--documents", action="append", type=_source_count, metavar="SOURCE=N",
                   help="the documents a source gives, for a source without a limit "
                        "(repeatable), e.g. copyguard=250")
    k.add_argument("--markdown", action="store_true",
                   help="print the per-model table as Markdown instead of JSON")
    k.set_defaults(func=cmd_cost)
    g = sub.add_parser("generate", help="run one model of a config on a prompts table "
                                        "(what the workflow's generate rule does)",
                       description="Run one model of a config on a prompts table and write "
                                   "its generations table (answers come from the cache when "
                                   "it has them).")
    g.add_argument("prompts", help="a prompts Parquet file (results/prompts/<model>/<variant>/<source>.parquet)")
    g.add_argument("--config", default="config/config.yaml", help="the workflow config file")
    g.add_argument("--model", required=True, help="a model name from the config's models")
    g.add_argument("--variant", default="main",
                   help="a variant from the config's variants (main: no override)")
    g.add_argument("--shard", default="00000-of-00001",
                   help="which part of the prompts to run, INDEX-of-COUNT")
    g.add_argument("--out", required=True, help="the generations Parquet file to write")
    g.set_defaults(func=cmd_generate)
    add_index_commands(sub)  # the span index (core: every study and the guard use it)
    listers: dict[str, list] = {}
    for study in studies():  # each study adds its own commands and its parts of the listings
        study.add_commands(sub)
        for kind in KINDS:
            if (lister := study.lister(kind)) is not None:
                listers.setdefault(kind, []).append(lister)
    add_list_command(sub, listers)
    for command in _commands(sub):
        command.formatter_class = HelpFormatter
    return p


def _commands(sub: argparse._SubParsersAction) -> list[argparse.ArgumentParser]:
    """Every command parser, those of a command group (``copyprobe guard ...``) included."""
    out = []
    for command in sub.choices.values():
        out.append(command)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                out.extend(_commands(action))
    return out


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, (ValueError, OSError, RuntimeError)) and text:
        return f"copyprobe: {text}"
    return f"copyprobe: {type(exc).__name__}: {text} (--traceback shows where)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "k_min", 1) > getattr(args, "k_max", 1):
        raise SystemExit("copyprobe: --k-min must not exceed --k-max")
    try:
        result = args.func(args)
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print("copyprobe: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every error becomes one line; --traceback keeps the traceback
        if args.traceback:
            raise
        print(_one_line(explain(exc)), file=sys.stderr)  # a missing extra: which to install
        return 1
    if result is not None:  # None: the command printed its own output (JSON lines)
        json.dump(result, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
