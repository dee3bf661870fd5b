"""Precision and recall of the guard's notice identifier (``find_notice``) on real lines.

The lines are ``tests/guard/data/notice_lines.tsv`` (columns ``split, label, kind, source,
text``): lines that carry a copyright notice (``notice``) and lines that do not (``none``:
licence terms that talk about notices, prose about copyright, list items marked ``(c)``,
ordinary text), each with where it was read (``source``). ``dev`` lines were used to write
and adjust the patterns; ``heldout`` lines were not (a whole source file is in one split).
See docs/guard-notice-status.md for how they were collected and labelled.

When the shared fixtures are there (env COPYPROBE_SHARED_FIXTURES or ../shared/fixtures),
the lines of the benchmark's news and code-documentation excerpts (``copyguard/``) are a
third split, ``fixtures``, read where they lie and never copied here (they are copyrighted
excerpts): the only distinct lines in them that mention copyright, ``©`` or reserved rights
are three news-site footers (CNN's), each a notice; every other line is ordinary text.

``--readmes``: the distinct lines of the READMEs of the installed Python distributions (the
long descriptions the guard evaluation's ``package_docs`` materials show, at least 100 words):
how many lines ``find_notice`` flags and which (unlabelled: read the list; a README's own
notice line is a true find, prose about copyright a false alarm).

A line counts as found when ``find_notice`` returns a notice for it alone. Printed: for each
split, the counts, precision and recall, and per kind of source the recall; with
``--errors dev``, the dev lines the identifier gets wrong (the held-out errors are counted,
not shown, unless asked for after the patterns are final).

Usage::

    python benchmarks/guard_notice.py [--errors dev|heldout] [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from copyprobe.guard.notice import find_notice  # noqa: E402

LINES = ROOT / "tests" / "guard" / "data" / "notice_lines.tsv"


def read_lines(path: Path = LINES) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL))


SHARED = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES") or ROOT.parent / "shared" / "fixtures")
#: how the fixture lines are labelled (see the module text)
FIXTURE_NOTICE = re.compile(r"copyright|©|rights reserved", re.I)


def fixture_lines(shared: Path = SHARED) -> list[dict[str, str]]:
    """The distinct lines of the shared news and code excerpts, labelled (empty when the
    fixtures are absent)."""
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for folder, kind in (("news_copyright", "news"), ("code_copyright", "code docs")):
        for path in sorted((shared / "copyguard" / folder).glob("*.txt")):
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                text = " ".join(line.split())
                if not text or text in seen:
                    continue
                seen.add(text)
                rows.append({"split": "fixtures", "kind": kind, "text": text,
                             "label": "notice" if FIXTURE_NOTICE.search(text) else "none",
                             "source": f"fixture:copyguard/{folder}/{path.name}:{i}"})
    return rows


def readme_lines() -> list[str]:
    """The distinct non-empty lines of the installed distributions' long descriptions of at
    least 100 words (whitespace-normalised)."""
    from copyprobe.sources.materials.package_docs import PackageDocs

    seen: dict[str, None] = {}
    for doc in PackageDocs().documents():
        for line in doc.text.splitlines():
            text = " ".join(line.split())
            if text:
                seen.setdefault(text)
    return list(seen)


def measure(rows: list[dict[str, str]]) -> dict[str, dict]:
    """Per split: tp, fp, fn, tn, precision, recall, recall per kind, and the wrong lines."""
    out: dict[str, dict] = {}
    for split in sorted({r["split"] for r in rows}):
        c: Counter = Counter()
        by_kind: dict[str, Counter] = {}
        wrong = []
        for r in (r for r in rows if r["split"] == split):
            found = find_notice(r["text"]) is not None
            truth = r["label"] == "notice"
            c[("tp" if found else "fn") if truth else ("fp" if found else "tn")] += 1
            if truth:
                by_kind.setdefault(r["kind"], Counter())["found" if found else "missed"] += 1
            if found != truth:
                wrong.append({**r, "found": found})
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 1.0
        rec = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 1.0
        out[split] = {"lines": sum(c.values()), **{k: c[k] for k in ("tp", "fp", "fn", "tn")},
                      "precision": round(p, 4), "recall": round(rec, 4),
                      "recall_by_kind": {k: f"{v['found']}/{v['found'] + v['missed']}"
                                         for k, v in sorted(by_kind.items())},
                      "wrong": wrong}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--errors", choices=("dev", "heldout", "fixtures"),
                    help="show that split's errors")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--readmes", action="store_true",
                    help="only the lines of the installed READMEs that are flagged")
    args = ap.parse_args()
    if args.readmes:
        lines = readme_lines()
        flagged = [(t, n) for t in lines if (n := find_notice(t)) is not None]
        mention = sum(bool(FIXTURE_NOTICE.search(t)) for t in lines)
        print(f"README lines: {len(lines)}, mentioning copyright / © / reserved rights: "
              f"{mention}, flagged: {len(flagged)}")
        for t, n in flagged:
            print(f"  {n!r:70.70}  <- {t[:100]!r}")
        return
    result = measure(read_lines() + fixture_lines())
    if args.json:
        print(json.dumps({s: {k: v for k, v in m.items() if k != "wrong"}
                          for s, m in result.items()}, indent=2))
    else:
        print(f"{'split':8} {'lines':>5} {'tp':>4} {'fp':>4} {'fn':>4} {'tn':>4} "
              f"{'precision':>9} {'recall':>7}  recall by kind")
        for s, m in result.items():
            kinds = ", ".join(f"{k} {v}" for k, v in m["recall_by_kind"].items())
            print(f"{s:8} {m['lines']:5} {m['tp']:4} {m['fp']:4} {m['fn']:4} {m['tn']:4} "
                  f"{m['precision']:9.3f} {m['recall']:7.3f}  {kinds}")
    if args.errors:
        for r in result[args.errors]["wrong"]:
            kind = "missed" if not r["found"] else "false alarm"
            print(f"{kind:11} {r['source']}\n            {r['text']}")


if __name__ == "__main__":
    main()
