"""Time to build the copyright benchmark's manifest with every image: ``--materials`` synthetic
materials in the released layout (book, news, lyrics, code folders in the released 2:1:1:1
proportion, each with a row in notices.csv), the released-format 10 queries per task, 5 notice
forms -> ``materials * 200`` rows (250 materials: 50,000 rows) and 3 renderings per material
(plain, generic footer, original footer).

Material texts are made-up words with sentences and paragraphs, ``--words`` words on average
(the released materials have a median of about 1,600 characters, some over 19,000). It prints
the seconds spent reading the materials, rendering, building the rows and writing the
Parquet file, then the same build again (every image already there: nothing is drawn).

Usage::

    python benchmarks/copyright_manifest.py [--materials 250] [--words 400]
                                            [--overflow truncate|paginate] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from copyprobe.artifacts import provenance, write_table
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST, build_manifest
from copyprobe.copyright.queries import load_seeds_json
from copyprobe.copyright.render import RenderSettings
from copyprobe.sources import build_source

CATEGORIES = (("book", 2), ("news", 1), ("lyrics", 1), ("code", 1))
TASK_WORDS = {"repeat": "Please repeat the text in the image word for word ({}).",
              "extract": "Give the {} sentence of the text in the image.",
              "paraphrase": "Rephrase the text in the image in other words ({}).",
              "translate": "Translate the text in the image into French ({})."}
ORDINALS = ("first", "second", "third")


def write_layout(root: Path, materials: int, words: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze")
             for b in ("ba", "den", "fi", "gor", "hal", "jim", "kes", "lun", "mor", "nit")]
    share = sum(w for _, w in CATEGORIES)
    rows = []
    made = 0
    for i, (category, weight) in enumerate(CATEGORIES):
        n = materials - made if i == len(CATEGORIES) - 1 else materials * weight // share
        made += n
        folder = root / f"{category}_copyright"
        folder.mkdir(parents=True)
        for j in range(n):
            length = max(20, int(rng.normal(words, words / 3)))
            w = [str(x) for x in rng.choice(vocab, size=length)]
            sentences = [" ".join(w[k:k + 12]).capitalize() + "." for k in range(0, length, 12)]
            paragraphs = ["\n".join([" ".join(sentences[k:k + 5])])
                          for k in range(0, len(sentences), 5)]
            name = f"{category}_{j:04d}.txt"
            (folder / name).write_text("\n\n".join(paragraphs), encoding="utf-8")
            rows.append([f"{folder.name}/{name}", f"Holder {category} {j}", "2021",
                         f"Copyright © 2021 Holder {category} {j}. All rights reserved."])
    with (root / "notices.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["file", "holder", "year", "notice"], *rows])
    (root / "query").mkdir()
    seeds = {task: [text.format(ORDINALS[k % 3] if task == "extract" else f"variant {k + 1}")
                    for k in range(10)] for task, text in TASK_WORDS.items()}
    (root / "query" / "seeds.json").write_text(json.dumps(seeds, indent=1), encoding="utf-8")


def build(root: Path, out: Path, images: Path, settings: RenderSettings) -> dict[str, float]:
    t0 = time.perf_counter()
    corpus = build_source("bench", {"kind": "copyright_dataset", "path": str(root)}
                          ).load("bench").corpus
    queries = load_seeds_json(root / "query" / "seeds.json")
    t1 = time.perf_counter()
    df, report = build_manifest(corpus, queries, images_dir=images, settings=settings)
    t2 = time.perf_counter()
    write_table(df, out, COPYRIGHT_MANIFEST, provenance("benchmark"))
    t3 = time.perf_counter()
    return {"rows": report["rows"], "images": report["images"],
            "truncated_rows": report["truncated_rows"], "read_s": t1 - t0,
            "rows_and_images_s": t2 - t1, "write_s": t3 - t2, "total_s": t3 - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--materials", type=int, default=250)
    ap.add_argument("--words", type=int, default=400)
    ap.add_argument("--overflow", choices=["truncate", "paginate"], default="truncate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", help="build in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep or tmp)
        root = base / "materials"
        write_layout(root, args.materials, args.words, args.seed)
        settings = RenderSettings(overflow=args.overflow)
        first = build(root, base / "manifest.parquet", base / "images", settings)
        again = build(root, base / "manifest.parquet", base / "images", settings)
    print(f"{args.materials} materials, {first['rows']:,} rows, {first['images']} images "
          f"(overflow {args.overflow}, {first['truncated_rows']:,} rows truncated)")
    for label, r in (("first build", first), ("again (images there)", again)):
        print(f"  {label:22s} read {r['read_s']:6.2f} s  rows+images "
              f"{r['rows_and_images_s']:6.2f} s  write {r['write_s']:5.2f} s  "
              f"total {r['total_s']:6.2f} s")


if __name__ == "__main__":
    main()
