"""``copyprobe`` command line. The Snakemake workflow (``snakemake --cores N`` in the project
folder) is the main tool: it runs whole studies with caching and incremental reruns. These
commands serve single steps outside it: checking a config, running one model on one prompts
table, and re-scoring other people's released generations.

    copyprobe validate-config config/config.yaml
    copyprobe generate results/prompts/M/S.parquet --model M --out gen.parquet
    copyprobe msr-score FILE... --document-col C --reference-col C --generation-col C
                        [--mode paper|words] [--k-min 5 --k-max 12] [--out per_document.parquet]
    copyprobe msr-stats --pre v1,v2,... --post v1,v2,...

Results are printed as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from copyprobe.msr.cli import add_commands as add_msr_commands


def cmd_validate_config(args: argparse.Namespace) -> dict:
    from copyprobe.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    return {"valid": True, "models": list(cfg["models"]), "sources": list(cfg["sources"]),
            "datasets": list(cfg["datasets"])}


def cmd_generate(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import GENERATIONS, PROMPTS, provenance, read_table, write_table
    from copyprobe.config import ConfigError, load_config, model_slice
    from copyprobe.generation import generate_shard
    from copyprobe.models import prepare

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: {exc}")
    if args.model not in cfg["models"]:
        raise SystemExit(f"copyprobe: model {args.model!r} is not in {args.config}")
    spec = model_slice(cfg, args.model)
    manifest = prepare(spec.get("model_file"), Path(spec["cache_dir"]))
    df, summary = generate_shard(read_table(args.prompts, PROMPTS), spec, manifest,
                                 shard=args.shard)
    write_table(df, args.out, GENERATIONS,
                provenance("generate", {k: v for k, v in spec.items() if k != "cache_dir"},
                           summary=summary.as_dict()))
    return {"out": args.out, **summary.as_dict()}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="copyprobe", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    add_msr_commands(sub)
    g = sub.add_parser("generate", help="run one model of a config on a prompts table "
                                        "(what the workflow's generate rule does)")
    g.add_argument("prompts", help="a prompts Parquet file (results/prompts/<model>/<source>)")
    g.add_argument("--config", default="config/config.yaml")
    g.add_argument("--model", required=True)
    g.add_argument("--shard", default="00000-of-00001")
    g.add_argument("--out", required=True)
    g.set_defaults(func=cmd_generate)
    v = sub.add_parser("validate-config", help="validate a workflow config file")
    v.add_argument("config")
    v.set_defaults(func=cmd_validate_config)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "k_min", 1) > getattr(args, "k_max", 1):
        raise SystemExit("copyprobe: --k-min must not exceed --k-max")
    result = args.func(args)
    json.dump(result, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
