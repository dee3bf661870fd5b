"""The copyright benchmark's commands.

    copyprobe copyright-manifest MATERIALS --out manifest.parquet [--queries SEEDS_JSON]
                                 [--notices notices.csv] [--images DIR] [--benign]

MATERIALS is a folder in the released layout (read with the ``copyright_dataset`` source) or
a corpus Parquet file from any copyright-material source.
"""

from __future__ import annotations

import argparse
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
