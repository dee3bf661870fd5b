"""Scoring the windows of documents: curated documents -> the model's tokenizer -> windows ->
exact scores (one :class:`~copyprobe.generation.logprob_scoring.ScoreRequest` per window, through
:func:`~copyprobe.generation.logprob_runner.run_scoring`) or a Monte Carlo estimate (sampled
continuations through :func:`~copyprobe.generation.runner.run_generation`) -> the WINDOWS
table, one row per window.

Reference: docs/extraction.md.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.extraction.discoverability import pz_threshold
from copyprobe.extraction.montecarlo import MCResult, SequentialTest, run_sequential
from copyprobe.extraction.tables import WINDOWS
from copyprobe.extraction.windows import Window, WindowSpec, cut_windows, skip_reason
from copyprobe.generation.logprob_scoring import ScoreRequest, Tokenizer
from copyprobe.generation.shards import parse_shard
from copyprobe.prompt import Prompt

__all__ = ["WindowJob", "cut_documents", "score_documents", "score_exact", "score_monte_carlo"]


@dataclass(frozen=True)
class WindowJob:
    """One window of one document, with the texts of its prefix and suffix."""

    row: Mapping[str, Any]  # the WINDOWS columns known before scoring
    window: Window
    prefix_text: str
    suffix_text: str

    def request(self, fmt: str) -> ScoreRequest:
        if fmt == "chat":
            return ScoreRequest(prompt=chat_prompt(self.prefix_text), target=self.suffix_text)
        return ScoreRequest(context_ids=self.window.prefix_ids,
                            target_ids=self.window.suffix_ids)

    def prompt(self, fmt: str) -> Prompt:
        return chat_prompt(self.prefix_text) if fmt == "chat" else Prompt(
            "completion", text=self.prefix_text)


def chat_prompt(prefix_text: str) -> Prompt:
    """The prefix as the one user turn of a chat (the model's template renders it)."""
    return Prompt("chat", messages=({"role": "user", "content": prefix_text},))


def window_texts(tokenizer: Tokenizer, window: Window) -> tuple[str, str]:
    """The prefix's and the suffix's text. The suffix is the text the whole window adds to
    its prefix (a tokenizer that drops a leading space when a piece is decoded alone would
    otherwise change it); the suffix decoded alone where the two do not line up."""
    prefix = tokenizer.detokenize(window.prefix_ids)
    whole = tokenizer.detokenize([*window.prefix_ids, *window.suffix_ids])
    if whole.startswith(prefix):
        return prefix, whole[len(prefix):]
    return prefix, tokenizer.detokenize(window.suffix_ids)


def _base_row(model: str, doc: Any, method: str) -> dict[str, Any]:
    return {"model": model, "source": doc.source, "doc_id": doc.doc_id, "split": doc.split,
            "method": method}


def cut_documents(docs: pd.DataFrame, tokenizer: Tokenizer, spec: WindowSpec, *, model: str,
                  method: str, max_windows: int | None = None
                  ) -> tuple[list[WindowJob], list[dict[str, Any]]]:
    """The windows of every document of ``docs`` (columns source, doc_id, split, text), and a
    ``skipped`` row for each document shorter than one window (reason in ``error``)."""
    jobs: list[WindowJob] = []
    skipped: list[dict[str, Any]] = []
    for doc in docs.itertuples(index=False):
        ids = tokenizer.tokenize(doc.text or "")
        reason = skip_reason(len(ids), spec)
        if reason is not None:
            skipped.append({**_base_row(model, doc, method), "window_index": -1,
                            "start_token": 0, "n_prefix_tokens": 0, "n_tokens": 0,
                            "status": "skipped", "error_class": "TooShort", "error": reason})
            continue
        windows = cut_windows(ids, spec)
        for w in windows[:max_windows] if max_windows else windows:
            prefix, suffix = window_texts(tokenizer, w)
            jobs.append(WindowJob({**_base_row(model, doc, method), "window_index": w.index,
                                   "start_token": w.start,
                                   "n_prefix_tokens": len(w.prefix_ids),
                                   "n_tokens": len(w.suffix_ids)}, w, prefix, suffix))
    return jobs, skipped


def score_exact(jobs: Sequence[WindowJob], fmt: str, path: str,
                run: Callable[[list[ScoreRequest]], Sequence[Any]]) -> list[dict[str, Any]]:
    """WINDOWS rows of exact scores: ``run`` scores the requests (``run_scoring`` bound to
    the model, its cache and ``path``) and returns one ScoreResult each, in order."""
    results = run([j.request(fmt) for j in jobs])
    rows = []
    for job, res in zip(jobs, results, strict=True):
        row = {**job.row, "from_cache": res.from_cache, "latency_s": res.latency_s}
        s = res.scores
        if s is None:
            rows.append({**row, "status": "failed", "path": path,
                         "error_class": res.error_class or "ScoringError",
                         "error": res.error or ""})
            continue
        n = len(s.token_ids)
        rows.append({**row, "status": "scored", "path": s.path, "n_tokens": n,
                     "log_pz": s.log_pz, "mean_logprob": s.log_pz / n if n else math.nan,
                     "greedy_match": s.greedy_match, "error_class": "", "error": ""})
    return rows


def is_hit(continuation: str, suffix: str) -> bool:
    """A sample reproduces the suffix: the continuation starts with the suffix's text exactly,
    whitespace before either aside (a chat answer starts its turn without the space that
    joins the suffix to the prefix in the document; a completion may put it in the prompt's
    last token or the answer's first). Nothing else is normalised."""
    return continuation.lstrip().startswith(suffix.lstrip())


def mc_log_pz(hits: int, samples: int) -> float:
    """The Monte Carlo estimate of log p_z, log(hits / samples); -inf with no hit (p_z
    estimated 0: no (n,p) verdict counts the window as extractable, and the interval's upper
    end, mc_hi, says how small p_z is known to be)."""
    return math.log(hits / samples) if hits else -math.inf


class _NeedMore(Exception):
    def __init__(self, upto: int) -> None:
        self.upto = upto


def score_monte_carlo(jobs: Sequence[WindowJob], fmt: str, mc: Mapping[str, Any],
                      generate: Callable[[pd.DataFrame, int], pd.DataFrame]
                      ) -> list[dict[str, Any]]:
    """WINDOWS rows of Monte Carlo estimates. ``generate(prompts, samples)`` runs a PROMPTS
    table of the open windows with ``samples`` samples each (``run_generation`` bound to the
    model, its decoding and cache) and returns its GENERATIONS table."""
    test = SequentialTest(pz_threshold(int(mc["n"]), float(mc["p"])), alpha=mc["alpha"],
                          batch=mc["batch"], max_samples=mc["max_samples"])
    rid = [f"{j.row['model']}:{j.row['doc_id']}:w{j.row['window_index']}" for j in jobs]
    hits: dict[str, list[bool | None]] = {r: [] for r in rid}  # None: a failed sample
    failed: dict[str, tuple[str, str]] = {}
    done: dict[str, MCResult] = {}
    have = 0
    while True:
        wanted = 0
        for r, job in zip(rid, jobs, strict=True):
            if r in done or r in failed:
                continue
            try:
                done[r] = run_sequential(_server(hits[r]), test)
            except _NeedMore as more:
                wanted = max(wanted, more.upto)
        if wanted <= have:
            break
        open_ = [(r, j) for r, j in zip(rid, jobs, strict=True)
                 if r not in done and r not in failed]
        prompts = pd.DataFrame({"request_id": [r for r, _ in open_], "status": "ready",
                                "prompt": [j.prompt(fmt).to_json() for _, j in open_],
                                "reference": None})
        gens = generate(prompts, wanted)
        for r, g in gens.groupby("request_id"):
            g = g.sort_values("sample_index")
            bad = g[g["status"] != "ok"]
            if len(bad):
                failed[r] = (str(bad["error_class"].iloc[0]), str(bad["error"].iloc[0]))
            suffix = next(j.suffix_text for rr, j in open_ if rr == r)
            hits[r] = [is_hit(t, suffix) if s == "ok" else None
                       for t, s in zip(g["text"].fillna(""), g["status"], strict=True)]
        have = wanted
    rows = []
    for r, job in zip(rid, jobs, strict=True):
        if r in failed or r not in done:
            cls, msg = failed.get(r, ("MonteCarloError", "no decision"))
            rows.append({**job.row, "status": "failed", "error_class": cls, "error": msg})
            continue
        res = done[r]
        lp = mc_log_pz(res.hits, res.samples)
        rows.append({**job.row, "status": "scored", "log_pz": lp,
                     "mean_logprob": lp / job.row["n_tokens"], "greedy_match": None,
                     "mc_hits": res.hits, "mc_samples": res.samples, "mc_lo": res.lo,
                     "mc_hi": res.hi, "mc_decision": res.decision, "error_class": "",
                     "error": ""})
    return rows


def _server(pool: list[bool | None]) -> Callable[[int, int], Sequence[bool]]:
    """A sample function for run_sequential over the samples drawn so far: asking beyond
    them raises _NeedMore (the caller draws them for every open window, then asks again)."""

    def sample(start: int, count: int) -> Sequence[bool]:
        if start + count > len(pool):
            raise _NeedMore(start + count)
        return [bool(x) for x in pool[start:start + count]]

    return sample


def score_documents(docs: pd.DataFrame, tokenizer: Tokenizer, settings: Mapping[str, Any], *,
                    model: str, exact: Callable[[list[ScoreRequest]], Sequence[Any]] | None,
                    generate: Callable[[pd.DataFrame, int], pd.DataFrame] | None
                    ) -> pd.DataFrame:
    """The WINDOWS table of ``docs`` for a model's job ``settings``
    (:func:`copyprobe.extraction.config.job_settings`): ``exact`` for ``method: exact``,
    ``generate`` for ``monte_carlo``."""
    method, fmt = settings["method"], settings["extraction_format"]
    spec = WindowSpec.from_config(settings["windows"])
    jobs, skipped = cut_documents(docs, tokenizer, spec, model=model, method=method,
                                  max_windows=settings.get("max_windows_per_document"))
    if not jobs:
        rows: list[dict[str, Any]] = []
    elif method == "exact":
        assert exact is not None
        rows = score_exact(jobs, fmt, settings["path"], exact)
    else:
        assert generate is not None
        rows = score_monte_carlo(jobs, fmt, settings["monte_carlo"], generate)
    return pd.DataFrame([*rows, *skipped], columns=WINDOWS.columns)


def read_documents(corpus: pd.DataFrame, curated: pd.DataFrame) -> pd.DataFrame:
    """The kept documents of a curated table with their text (source, doc_id, split, text)."""
    kept = curated[curated["kept"]][["doc_id", "split"]]
    docs = corpus.merge(kept, on="doc_id", how="inner", validate="one_to_one")
    return docs[["source", "doc_id", "split", "text"]]



def shard_of(doc_id: str, count: int) -> int:
    """The scoring shard of a document: the first 8 bytes of sha256(doc_id) mod ``count``
    (stable across runs, machines and Python versions, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big") % count


def shard_documents(docs: pd.DataFrame, shard: str) -> pd.DataFrame:
    """The documents of ``shard`` (``"00002-of-00005"``, as the generation layer names them)."""
    i, n = parse_shard(shard)
    keep = [shard_of(str(d), n) == i for d in docs["doc_id"]]
    return docs[keep].reset_index(drop=True)


def merge_window_shards(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The shards' WINDOWS tables as one, by document and window; a document in two shards is
    an error (the shards were made with different counts: rerun them)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=WINDOWS.columns)
    seen: dict[str, int] = {}
    for k, f in enumerate(frames):
        for doc in f["doc_id"].unique():
            if doc in seen:
                raise ValueError(f"document {doc!r} is in shards {seen[doc]} and {k}: the shard "
                                 "tables come from different shard counts")
            seen[doc] = k
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["doc_id", "window_index"], kind="stable").reset_index(drop=True)


def windows_unit(paths: Sequence[str | Path]) -> str:
    """What the windows of these WINDOWS tables count, as their provenance says (``unit``:
    ``tokens``, or ``words`` for Monte Carlo windows cut where the server has no tokenizer);
    ``tokens`` for a table written without it. Tables in different units are an error."""
    from copyprobe.artifacts import read_meta

    units = {str(p): read_meta(p).get("unit", "tokens") for p in paths}
    if len(set(units.values())) > 1:
        raise ValueError("window tables count in different units: " + ", ".join(
            f"{p}: {u}" for p, u in units.items()))
    return next(iter(units.values()), "tokens")


def merge_window_files(shard_paths: Sequence[str | Path], out: str | Path) -> pd.DataFrame:
    """Rule extraction_merge: the shards' WINDOWS files as one file at ``out``, which keeps
    their unit (:func:`windows_unit`)."""
    from copyprobe.artifacts import provenance, read_table, write_table

    df = merge_window_shards([read_table(p, WINDOWS) for p in shard_paths])
    write_table(df, out, WINDOWS, provenance("extraction_merge", {}, shards=len(shard_paths),
                                             unit=windows_unit(shard_paths)))
    return df


def failure_report(windows: pd.DataFrame, max_failure_share: float) -> str | None:
    """Why a scoring job fails, when more than ``max_failure_share`` of its windows (skipped
    documents aside) have no score: the share and, per error class, the count and the first
    message; None when the job may pass (the model's ``requests.max_failure_share``, as for
    generation). The scores already received are cached, so a rerun asks only for the rest."""
    tried = windows[windows["status"] != "skipped"]
    failed = tried[tried["status"] == "failed"]
    share = len(failed) / len(tried) if len(tried) else 0.0
    if share <= max_failure_share:
        return None
    lines = [f"{len(failed)} of {len(tried)} window(s) have no score ({share:.1%} > "
             f"max_failure_share {max_failure_share:.1%})"]
    for cls, group in failed.groupby("error_class", sort=True):
        lines.append(f"  {cls}: {len(group)}, first: {str(group['error'].iloc[0])[:500]}")
    return "\n".join(lines)
