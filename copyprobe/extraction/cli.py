"""The extraction study's command: an extraction map of a user's own text, outside Snakemake.

Reference: docs/extraction.md.
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
    from copyprobe.extraction.engine import score_with_model, window_unit
    from copyprobe.extraction.tables import WINDOWS
    from copyprobe.models import prepare

    paths = [Path(t) for t in args.text_file]
    names = [p.name for p in paths]
    if len(set(names)) != len(names):  # the file name is the document's id
        names = [str(p) for p in paths]
    docs = []
    for path, doc_id in zip(paths, names, strict=True):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"copyprobe: {path}: cannot read it as UTF-8 text ({exc})") \
                from None
        docs.append({"source": "text", "doc_id": doc_id, "split": "none", "text": text})
    name, entry = model_entry(args.model_config)
    cfg = validated(name, entry, args)
    spec = model_slice(cfg, name)
    settings = job_settings(cfg, name)
    unit = window_unit(spec, settings["method"])
    manifest = prepare(spec.get("model_file"), Path(cfg["cache_dir"]))
    df = score_with_model(pd.DataFrame(docs), spec, manifest, settings)
    write_table(df, args.out, WINDOWS,
                provenance("extraction_map", settings, text=[str(p) for p in paths],
                           model_config=str(args.model_config), unit=unit))
    grid = analysis_settings(cfg)
    head = grid["headline"]
    real = df[df["status"] != "skipped"]
    counts = {st: int((df["status"] == st).sum()) for st in ("scored", "failed")}
    lines = [f"{name} on {len(paths)} text(s): {counts['scored']} window(s) scored, "
             f"{counts['failed']} failed; windows and their lengths in {unit}"
             + ("" if unit == "tokens" else " (the server has no tokenizer: Monte Carlo "
                "windows are cut in whitespace-delimited words)") + f"; written to {args.out}"]
    for r in df[df["status"] == "skipped"].itertuples():
        lines.append(f"{r.doc_id}: not scored, shorter than one window "
                     f"({str(r.error).replace(' tokens', ' ' + unit)})")
    lines.append(text_table(real, names, head["n"], head["p"], unit))
    if len(real):
        lines.append(fraction_table(np_curve(real, grid["ns"], grid["ps"]), grid["ns"],
                                    grid["ps"]))
    if args.figure:
        from copyprobe.extraction.figures import plot_extraction_map

        plot_extraction_map(df, args.figure, top=len(paths), unit=unit,
                            title=f"{name}: {', '.join(names)}"[:120])
        lines.append(f"figure: {args.figure}")
    print("\n".join(lines))
    return None


def text_table(windows: Any, doc_ids: list[str], n: int, p: float, unit: str) -> str:
    """One row per text: windows scored, the largest p_z, the median log p_z, the mean
    log-probability per token (or word), the greedy windows (``-`` for Monte Carlo), the longest run of consecutive windows
    extractable at the headline (n,p) and their share; ``-`` where no window was scored."""
    import numpy as np

    from copyprobe.extraction.discoverability import document_summary, verdict_column

    col = verdict_column(n, p)
    summ = (document_summary(windows, [n], [p]).set_index("doc_id") if len(windows) else None)
    head = (f"{'text':<24}{'windows':>8}{'max p_z':>11}{'median log p_z':>16}"
            f"{'log-prob/' + unit[:-1]:>16}{'greedy':>8}{'longest run':>12}"
            f"{f'share (n={n},p={p:g})':>20}")
    lines = [f"per text (largest p_z; log p_z natural; a run: consecutive windows extractable "
             f"at n={n}, p={p:g}):", head]
    for doc in doc_ids:
        w = windows[(windows["doc_id"] == doc) & (windows["status"] == "scored")]
        if summ is None or doc not in summ.index or not len(w):
            lines.append(f"{doc[:23]:<24}{0:>8}" + f"{'-':>11}{'-':>16}{'-':>16}{'-':>8}"
                         f"{'-':>12}{'-':>20}")
            continue
        r = summ.loc[doc]
        lp = w["log_pz"].astype(float).to_numpy()
        g = w["greedy_match"].astype("boolean")
        greedy = "-" if g.isna().all() else str(int(g.fillna(False).sum()))  # Monte Carlo: -
        lines.append(f"{doc[:23]:<24}{int(r['n_scored']):>8}{r['max_pz']:>11.3g}"
                     f"{float(np.median(lp)):>16.2f}{r['mean_log_pz_per_token']:>16.3f}"
                     f"{greedy:>8}{int(r[f'longest_run_{col}']):>12d}"
                     f"{r[f'frac_{col}']:>20.4f}")
    return "\n".join(lines)


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
                                   "as Parquet and print, per text, the largest p_z, median log "
                                   "p_z, mean log-probability per token, greedy windows, the "
                                   "longest extractable run and the share extractable, then "
                                   "the share at each (n,p).")
    s.add_argument("text_file", nargs="+",
                   help="UTF-8 text files (each whole file is one document; one table of all)")
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
