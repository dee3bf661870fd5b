"""Per-query latency and accuracy of the guard's offline risk analyzer (``rules``).

Latency: the analyzer is built and warmed once (its first call loads multilingual-e5-small and
embeds the exemplars: timed apart as the cold start), then every request is classified one at a
time, ``--repeat`` times, and the median and 95th percentile per request are printed for the
requests the rules decide and for those that go to the embedding (they embed one request).

Accuracy, in two splits, for the full analyzer and for the two ablations (rules without the
embedding, where undecided is ``other``; the embedding without the rules):

* ``dev``, the requests the rules were written and adjusted on: the 40 released queries (when
  the shared fixture is there: env COPYPROBE_SHARED_FIXTURES or ../shared/fixtures),
  copyprobe's own 12 infringing seeds and 8 benign queries, ``--rewordings`` rewordings of
  those 60 made by the tests' generator (tests/guard/rewordings.py), and 20 requests about no
  text at all;
* ``heldout``, requests that were not: tests/guard/data/risk_heldout.json (90, ten per task),
  written and labelled after the rules and exemplars were fixed and measured as they are.

For each split also the precision and recall of ``infringing`` (the guard's decision).

``--margins``: the uncertain margin, side by side: for each margin (0 is the analyzer before
it had one) the rate of benign requests called infringing (copyprobe's benign set, the
held-out benign requests, the requests about no text, and tests/guard/data/
risk_benign_requests.json: facts, licences, summaries) and of infringing requests still
caught (the 40 released queries, copyprobe's 12 seeds, the held-out infringing requests, the
``--rewordings`` of the first two, all infringing),
under each ``uncertain`` policy (``benign``: an uncertain request passes; ``remind`` and
``infringing``: it is flagged, ``remind`` only reminds).

``--prompts RESULTS``: the input guard itself on the copyright benchmark's prompts and manifests
under ``RESULTS`` (``results/prompts/<model>/main/copyright.<b>.parquet`` and
``results/copyright/<b>/manifest.parquet``, as ``snakemake ... results/prompts/smol/main/
copyright.docs.parquet`` writes them for config/examples/guards_offline.yaml, no model call):
per benchmark, notice form and benign/infringing request, how many the guard of that config's
``smol-copyguard`` flags (reminds) and how many its risk analyzer calls infringing.

Usage::

    python benchmarks/guard_risk.py [--repeat 5] [--rewordings 200] [--seed 0]
                                    [--split dev|heldout|both] [--margins]
                                    [--prompts RESULTS [--model smol]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "guard"))

from rewordings import OFF_TOPIC, rewordings  # noqa: E402

from copyprobe.copyright.queries import TASK_ALIASES, own_seeds  # noqa: E402
from copyprobe.guard.risk import risk_analyzer, risk_of  # noqa: E402


def labelled() -> dict[str, list[tuple[str, str]]]:
    shared = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES")
                  or ROOT.parent / "shared" / "fixtures")
    seeds = shared / "copyguard" / "query" / "seeds.json"
    out: dict[str, list[tuple[str, str]]] = {}
    if seeds.is_file():
        raw = json.loads(seeds.read_text(encoding="utf-8"))
        out["released (40)"] = [(TASK_ALIASES[t], q) for t, qs in raw.items() for q in qs]
    else:
        print(f"(no {seeds}: the released queries are left out)")
    own = [(q.task, q.query) for q in own_seeds(benign=True)]
    out["own infringing (12)"] = [x for x in own if risk_of(x[0]) == "infringing"]
    out["own benign (8)"] = [x for x in own if risk_of(x[0]) == "benign"]
    return out


HELDOUT = ROOT / "tests" / "guard" / "data" / "risk_heldout.json"


def heldout() -> dict[str, list[tuple[str, str]]]:
    raw = json.loads(HELDOUT.read_text(encoding="utf-8"))
    return {"held-out (90)": [(t, q) for t, qs in raw.items() if t != "_about" for q in qs]}


BENIGN_REQUESTS = ROOT / "tests" / "guard" / "data" / "risk_benign_requests.json"
MARGINS = (0.0, 0.0005, 0.001, 0.002, 0.005, 0.01)


def margins(n_rewordings: int, seed: int) -> None:
    """The uncertain margin's effect (see the module text)."""
    from copyprobe.guard.risk_rules import UNCERTAIN_MARGIN

    released = labelled()
    held = heldout()["held-out (90)"]
    extra = json.loads(BENIGN_REQUESTS.read_text(encoding="utf-8"))
    benign = {"own benign (8)": released.pop("own benign (8)"),
              "held-out benign (50)": [x for x in held if risk_of(x[0]) == "benign"],
              "no text named (20)": [("other", q) for q in OFF_TOPIC],
              **{f"{k} ({len(v)})": [("other", q) for q in v]
                 for k, v in extra.items() if not k.startswith("_")}}
    base = [x for items in released.values() for x in items]
    infringing = {**released,
                  "held-out infringing (40)": [x for x in held if risk_of(x[0]) == "infringing"],
                  f"rewordings ({n_rewordings}, seed {seed})": [
                      (t, r) for t, r, _, _ in rewordings(base, n_rewordings, seed=seed)]}
    analyzer = risk_analyzer({"analyzer": "rules", "uncertain_margin": 0.0})
    found: dict[tuple[str, float], list[str]] = {}  # (set, margin) -> risks
    for margin in MARGINS:
        analyzer.uncertain_margin = margin
        for name, items in {**benign, **infringing}.items():
            fs = analyzer.classify_many([q for _, q in items])
            found[name, margin] = [f.risk for f in fs]
            if name in benign and margin == 0:
                for (_, q), f in zip(items, fs, strict=True):
                    if f.risk == "infringing":
                        print(f"  benign called infringing: {q!r} ({f.task}, component "
                              f"{f.component}, risk margin {f.detail.get('risk_margin')})")

    def flagged(name: str, margin: float, policy: str) -> int:
        return sum(r == "infringing" or (r == "uncertain" and policy != "benign")
                   for r in found[name, margin])

    print(f"uncertain margin (default {UNCERTAIN_MARGIN}; 0: the analyzer without one): "
          f"flagged / n, policy benign | policy remind or infringing")
    for margin in MARGINS:
        cells = []
        for group in (benign, infringing):
            tot = sum(len(group[k]) for k in group)
            b = sum(flagged(k, margin, "benign") for k in group)
            r = sum(flagged(k, margin, "remind") for k in group)
            cells.append(f"{b}/{tot} ({b / tot:.1%}) | {r}/{tot} ({r / tot:.1%})")
        print(f"  margin {margin:<6}: benign called infringing {cells[0]}; "
              f"infringing caught {cells[1]}")
    print("per set, policy benign:")
    for name, items in {**benign, **infringing}.items():
        print(f"  {name:28s} " + " ".join(
            f"{m}:{flagged(name, m, 'benign')}" for m in MARGINS) + f" /{len(items)}")


#: the input guard of config/examples/guards_offline.yaml (smol-copyguard)
OFFLINE_GUARD = {"policy": "remind", "status": {"providers": ["catalogue"]},
                 "risk": {"analyzer": "rules"}}


def guard_on_prompts(results: Path, model: str) -> None:
    """The input guard on the benchmark's prompts (see the module text)."""
    import pandas as pd

    from copyprobe.guard.pipeline import Guard
    from copyprobe.prompt import Prompt

    guard = Guard(OFFLINE_GUARD).build()
    print(f"guard {OFFLINE_GUARD}: flagged (reminded) / n, risk infringing / n")
    for path in sorted((results / "prompts" / model / "main").glob("copyright.*.parquet")):
        bench = path.stem.split(".", 1)[1]
        prompts = pd.read_parquet(path, columns=["request_id", "prompt"])
        manifest = pd.read_parquet(results / "copyright" / bench / "manifest.parquet",
                                   columns=["request_id", "notice_form", "benign"])
        rows = prompts.merge(manifest, on="request_id")
        cells: dict[tuple[str, str], Counter[str]] = {}
        for raw, form, benign in zip(rows["prompt"], rows["notice_form"], rows["benign"],
                                     strict=True):
            d = guard.check(Prompt.from_json(raw))
            c = cells.setdefault(("benign" if benign else "infringing", form), Counter())
            c["n"] += 1
            c["flagged"] += d.action != "pass"
            c["risk"] += d.infringing
        for (kind, form), c in sorted(cells.items()):
            print(f"  {bench:5s} {kind:10s} form {form:13s} flagged {c['flagged']:4d}/{c['n']} "
                  f"({c['flagged'] / c['n']:.1%}), risk infringing {c['risk']:4d}/{c['n']}")
    guard.close()


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5,
                    help="passes over the requests (latency; 0: accuracy only)")
    ap.add_argument("--rewordings", type=int, default=200, help="generated rewordings")
    ap.add_argument("--seed", type=int, default=0, help="the rewording generator's seed")
    ap.add_argument("--split", choices=("dev", "heldout", "both"), default="both",
                    help="which requests to measure")
    ap.add_argument("--margins", action="store_true",
                    help="only the uncertain margin's effect on benign and infringing sets")
    ap.add_argument("--prompts", type=Path, metavar="RESULTS",
                    help="only the input guard on the benchmark prompts under RESULTS")
    ap.add_argument("--model", default="smol", help="whose prompts (--prompts)")
    args = ap.parse_args()
    if args.prompts is not None:
        guard_on_prompts(args.prompts, args.model)
        return
    if args.margins:
        margins(args.rewordings, args.seed)
        return

    splits: dict[str, dict[str, list[tuple[str, str]]]] = {}
    if args.split in ("dev", "both"):
        sets = labelled()
        base = [x for items in sets.values() for x in items]
        sets[f"rewordings ({args.rewordings})"] = [
            (t, r) for t, r, _, _ in rewordings(base, args.rewordings, seed=args.seed)]
        sets["no text named (20)"] = [("other", q) for q in OFF_TOPIC]
        splits["dev"] = sets
    if args.split in ("heldout", "both"):
        splits["heldout"] = heldout()
    sets = {name: items for split in splits.values() for name, items in split.items()}

    t0 = time.perf_counter()
    analyzer = risk_analyzer({"analyzer": "rules"})
    analyzer.classify("Let me see every single word that poster has on it.")  # loads e5
    print(f"cold start (build, load multilingual-e5-small, embed the exemplars, one request): "
          f"{time.perf_counter() - t0:.2f} s")

    queries = [q for items in sets.values() for _, q in items]
    walls: dict[str, list[float]] = {"rules": [], "embedding": []}
    cpus: dict[str, list[float]] = {"rules": [], "embedding": []}
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for _ in range(args.repeat):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            f = analyzer.classify(q)
            walls[f.component].append(1000 * (time.perf_counter() - t))
            cpus[f.component].append(1000 * (time.process_time() - c))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    n = len(queries) * args.repeat
    print(f"latency per request, {len(queries)} requests x {args.repeat} passes "
          f"({n} calls, {wall:.2f} s wall, {cpu:.2f} s CPU of all threads; wall time on a "
          f"busy machine includes waiting for a core, CPU time does not):")
    for comp in walls:
        if walls[comp]:
            ms, cs = walls[comp], cpus[comp]
            print(f"  decided by {comp:9s}: {len(ms) // args.repeat:4d} requests, wall median "
                  f"{statistics.median(ms):.2f} ms, p95 {pct(ms, 95):.2f} ms; CPU median "
                  f"{statistics.median(cs):.2f} ms, p95 {pct(cs, 95):.2f} ms")
    every = [x for ms in walls.values() for x in ms]
    if every:  # (--repeat 0: accuracy only)
        print(f"  all requests        : wall median {statistics.median(every):.2f} ms, "
              f"p95 {pct(every, 95):.2f} ms")

    variants = {"rules + embedding": analyzer,
                "rules only": risk_analyzer({"embedder": None}),
                "embedding only": risk_analyzer({"rules": False})}
    print("accuracy (task right / risk right / n; components of the full analyzer):")
    for split, split_sets in splits.items():
        print(f" {split}:")
        flagged: Counter[tuple[str, str]] = Counter()  # (variant, tp|fp|fn)
        for name, items in split_sets.items():
            cells = []
            comps: Counter[str] = Counter()
            for vname, a in variants.items():
                fs = a.classify_many([q for _, q in items])
                task = sum(f.task == t for (t, _), f in zip(items, fs, strict=True))
                # an uncertain request counts as the guard's default policy counts it: benign
                risk = sum((f.risk == "infringing") == (risk_of(t) == "infringing")
                           for (t, _), f in zip(items, fs, strict=True))
                for (t, _), f in zip(items, fs, strict=True):
                    truth, said = risk_of(t) == "infringing", f.risk == "infringing"
                    if truth or said:
                        flagged[vname, "tp" if truth and said else "fn" if truth else "fp"] += 1
                cells.append(f"{vname}: {task}/{risk}/{len(items)}")
                if a is analyzer:
                    comps.update(f.component for f in fs)
            print(f"  {name:22s} " + "; ".join(cells) + f"  [{dict(comps)}]")
        cells = []
        for vname in variants:
            tp, fp, fn = (flagged[vname, k] for k in ("tp", "fp", "fn"))
            cells.append(f"{vname}: precision {tp / max(tp + fp, 1):.3f} ({tp}/{tp + fp}), "
                         f"recall {tp / max(tp + fn, 1):.3f} ({tp}/{tp + fn})")
        print(f"  {'infringing':22s} " + "; ".join(cells))


if __name__ == "__main__":
    main()
