"""The extraction study's command: an extraction map of a user's own text, outside Snakemake.

    copyprobe extraction-map --model-config M.yaml TEXT_FILE --out map.parquet
                             [--prefix-tokens 50 --suffix-tokens 50 --stride 50]
                             [--cache-dir DIR] [--figure map.png]

The model entry (the keys of a ``models:`` entry, or one name mapped to them) is validated as
the workflow validates a config's, with the study's keys (``method``, ``extraction_format``);
the whole text is one document, cut into windows in the model's tokens and scored through the
same cache as the workflow's. It prints the share of windows extractable at each (n,p).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from copyprobe.config import model_entry

DEFAULT_CACHE = ".cache/copyprobe"
__all__ = ["add_commands", "fraction_table", "model_entry", "validated"]


def validated(name: str, entry: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The config of one model in the extraction study, validated with the workflow's
    machinery (schema, backend keys, model file, scoring capability), with the command's
    window settings; errors name the model-config file."""
    from copyprobe.config import ConfigError, validate_config

    windows = {k: v for k, v in (("prefix_tokens", args.prefix_tokens),
                                 ("suffix_tokens", args.suffix_tokens),
                                 ("stride", args.stride)) if v is not None}
    mc = {k: v for k, v in (("max_samples", args.max_samples), ("batch", args.batch))
          if v is not None}
    entry = {"cutoff": "1970-01-01", **entry, "studies": ["extraction"]}
    cfg = {"cache_dir": str(args.cache_dir), "sources": {"text": {"kind": "local",
                                                                  "path": "."}},
           "datasets": {"text": ["text"]}, "models": {name: entry},
           "extraction": {"windows": windows, "monte_carlo": mc}}
    try:
        return validate_config(cfg)
    except ConfigError as exc:
        raise SystemExit(f"copyprobe: --model-config {args.model_config}: {exc}") from None


def cmd_extraction_map(args: argparse.Namespace) -> None:
    import pandas as pd

    from copyprobe.artifacts import provenance, write_table
    from copyprobe.config import model_slice
    from copyprobe.extraction.config import analysis_settings, job_settings
    from copyprobe.extraction.discoverability import np_curve
    from copyprobe.extraction.engine import score_with_model
    from copyprobe.extraction.tables import WINDOWS
    from copyprobe.models import prepare

    text_path = Path(args.text_file)
    try:
        text = text_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"copyprobe: {text_path}: cannot read it as UTF-8 text ({exc})") \
            from None
    name, entry = model_entry(args.model_config)
    cfg = validated(name, entry, args)
    spec = model_slice(cfg, name)
    settings = job_settings(cfg, name)
    manifest = prepare(spec.get("model_file"), Path(cfg["cache_dir"]))
    docs = pd.DataFrame([{"source": "text", "doc_id": text_path.name, "split": "none",
                          "text": text}])
    df = score_with_model(docs, spec, manifest, settings)
    write_table(df, args.out, WINDOWS,
                provenance("extraction_map", settings, text=str(text_path),
                           model_config=str(args.model_config)))
    grid = analysis_settings(cfg)
    curve = np_curve(df, grid["ns"], grid["ps"])
    counts = {st: int((df["status"] == st).sum()) for st in ("scored", "failed", "skipped")}
    lines = [f"{name} on {text_path}: {counts['scored']} window(s) scored, "
             f"{counts['failed']} failed; written to {args.out}"]
    skipped = df[df["status"] == "skipped"]
    if len(skipped):
        lines.append(f"skipped: {skipped['error'].iloc[0]}")
    lines.append(fraction_table(curve, grid["ns"], grid["ps"]))
    if args.figure:
        from copyprobe.extraction.figures import plot_extraction_map

        plot_extraction_map(df, args.figure, top=1, title=f"{name}: {text_path.name}")
        lines.append(f"figure: {args.figure}")
    print("\n".join(lines))
    return None


def fraction_table(curve: Any, ns: list[int], ps: list[float]) -> str:
    """The share of windows extractable at each (n,p): a row per n, a column per p."""
    head = "n \\ p  " + "".join(f"{p:>9g}" for p in ps)
    lines = ["extractable fraction of the windows, 1 - (1 - p_z)^n >= p:", head]
    for n in ns:
        cells = []
        for p in ps:
            v = curve[(curve["n"] == n) & (curve["p"] == p)]["fraction"]
            f = float(v.iloc[0]) if len(v) else float("nan")
            cells.append(f"{'n/a' if f != f else f'{f:.4f}':>9}")
        lines.append(f"{n:<7d}" + "".join(cells))
    return "\n".join(lines)


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("extraction-map",
                       help="score every window of a text: an extraction map (p_z per window)",
                       description="Cut a text into windows in the model's own tokens, score "
                                   "each suffix's probability p_z given its prefix (exactly, or "
                                   "by Monte Carlo for method: monte_carlo), write the windows "
                                   "as Parquet and print the share extractable at each (n,p).")
    s.add_argument("text_file", help="a UTF-8 text file (the whole file is one document)")
    s.add_argument("--model-config", required=True,
                   help="a YAML file holding one model entry (the keys of a models: entry)")
    s.add_argument("--out", required=True, help="the windows table (Parquet) to write")
    s.add_argument("--prefix-tokens", type=int, help="tokens of each prefix (default 50)")
    s.add_argument("--suffix-tokens", type=int, help="tokens of each suffix (default 50)")
    s.add_argument("--stride", type=int, help="tokens between window starts (default 50)")
    s.add_argument("--max-samples", type=int,
                   help="method monte_carlo: samples of a window at most (default 100)")
    s.add_argument("--batch", type=int, help="method monte_carlo: samples between two looks "
                   "of the sequential test (default 10)")
    s.add_argument("--cache-dir", default=DEFAULT_CACHE,
                   help="the call cache, shared with the workflow's")
    s.add_argument("--figure", help="also draw the text's extraction map (PNG)")
    s.set_defaults(func=cmd_extraction_map)
