"""MSR attribution: where each generation's long verbatim spans come from, beyond the one
document it was prompted with.

Reference: docs/msr.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import ATTRIBUTION, SPANS, TableSpec
from copyprobe.prompt import Prompt
from copyprobe.spans.attribution import attribute, doc_key
from copyprobe.spans.encoding import encode_doc, encode_query
from copyprobe.spans.types import SpanLookup

MSR_SPANS = TableSpec(
    "msr_spans",
    pa.schema(list(SPANS.schema) + [
        pa.field("dataset", pa.string()),
        pa.field("variant", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("split", pa.string()),
        pa.field("own_doc", pa.bool_()),
        pa.field("in_prompt", pa.bool_()),
        pa.field("cross_doc", pa.bool_()),
        pa.field("pre_doc", pa.bool_()),
    ]),
)

MSR_ATTRIBUTION = TableSpec(
    "msr_attribution",
    pa.schema(list(ATTRIBUTION.schema) + [
        pa.field("dataset", pa.string()),
        pa.field("variant", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("split", pa.string()),
        pa.field("n_in_prompt", pa.int32()),
        pa.field("n_cross_doc", pa.int32()),
        pa.field("longest_cross_doc_words", pa.int32()),
        pa.field("longest_cross_doc_text", pa.string()),
        pa.field("post_to_pre_leak", pa.bool_()),
        # the D_pre documents ("source:doc_id") a D_post generation's spans are found in
        pa.field("leak_docs", pa.list_(pa.string())),
    ]),
)


def shown_text(prompt_json: str) -> str:
    """What the model was shown of the document: the chat turns after the system message
    (segments 1..n-1), or the completion prompt."""
    prompt = Prompt.from_json(prompt_json)
    if prompt.format == "completion":
        return prompt.text
    parts = []
    for m in prompt.messages:
        if m.get("role") == "system":
            continue
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if p.get("type") == "text")
    return " ".join(parts)


class _Occurs:
    """Whether a word sequence occurs in a text, word-aligned in the index's unit (texts are
    encoded once and reused)."""

    def __init__(self, index: SpanLookup) -> None:
        self.index = index
        self._encoded: dict[str, bytes] = {}

    def __call__(self, words: Sequence[str], text: str | None) -> bool:
        if not isinstance(text, str) or not words:
            return False
        hay = self._encoded.get(text)
        if hay is None:
            hay = self._encoded[text] = encode_doc(self.index.tokenize(text).tokens)
        return encode_query(words) in hay


def pre_documents(curated: pd.DataFrame) -> set[str]:
    """The ``source:doc_id`` of the documents curation kept in D_pre."""
    kept = curated[curated["kept"] & (curated["split"] == "pre")]
    return {doc_key(s, d) for s, d in zip(kept["source"], kept["doc_id"])}


def attribute_run(generations: pd.DataFrame, prompts: pd.DataFrame, curated: pd.DataFrame,
                  index: SpanLookup, *, min_words: int, max_docs: int, name: str,
                  dataset: str, variant: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The :data:`MSR_SPANS` and :data:`MSR_ATTRIBUTION` tables of one run: ``generations``
    and ``prompts`` of the dataset's sources (concatenated), ``curated`` the model's curation
    of them."""
    if max_docs < 1:
        raise ValueError(f"max_docs must be >= 1 for MSR attribution, got {max_docs}")
    ready = prompts[prompts["status"] == "ready"].set_index("request_id")
    missing = set(generations["request_id"]) - set(ready.index)
    if missing:
        raise ValueError(f"generations refer to unknown request_id(s): {sorted(missing)[:5]}")
    if "source" not in generations.columns:  # a GENERATIONS table: its prompt's source
        generations = generations.assign(source=generations["request_id"].map(ready["source"]))
    spans, summary = attribute(generations, index, min_words=min_words, max_docs=max_docs,
                               name=name)
    pre = pre_documents(curated)
    occurs = _Occurs(index)

    def flags(row: Mapping[str, Any]) -> dict[str, Any]:
        p = ready.loc[row["request_id"]]
        own = doc_key(p["source"], p["doc_id"])
        words = row["text"].split(" ")
        listed = [doc_key(d["source"], d["doc_id"]) for d in row["docs"]]
        in_prompt = occurs(words, shown_text(p["prompt"]))
        has_other = any(k != own for k in listed) or row["n_docs"] > len(listed)
        return {"doc_id": p["doc_id"], "split": p["split"],
                "own_doc": occurs(words, p["document"]), "in_prompt": in_prompt,
                "cross_doc": has_other and not in_prompt,
                "pre_doc": not in_prompt and any(k != own and k in pre for k in listed),
                "_leaks": [k for k in listed if k != own and k in pre] if not in_prompt else []}

    extra = pd.DataFrame([flags(r) for r in spans.to_dict("records")],
                         columns=["doc_id", "split", "own_doc", "in_prompt", "cross_doc",
                                  "pre_doc", "_leaks"])
    spans = pd.concat([spans.reset_index(drop=True), extra], axis=1)
    spans["dataset"], spans["variant"] = dataset, variant

    by_gen = {key: rows for key, rows in spans.groupby(["request_id", "sample_index"])}
    rows = []
    for r in summary.to_dict("records"):
        p = ready.loc[r["request_id"]]
        mine = by_gen.get((r["request_id"], r["sample_index"]))
        ok = r["status"] == "ok"
        cross = mine[mine["cross_doc"]] if mine is not None else None
        longest = (cross.loc[cross["n_words"].idxmax()]
                   if cross is not None and len(cross) else None)
        leaks = sorted({k for ks in mine["_leaks"] for k in ks}) if mine is not None else []
        leak = p["split"] == "post" and bool(leaks)
        rows.append({**r, "dataset": dataset, "variant": variant, "doc_id": p["doc_id"],
                     "split": p["split"],
                     "n_in_prompt": (int(mine["in_prompt"].sum()) if mine is not None else 0)
                     if ok else None,
                     "n_cross_doc": (len(cross) if cross is not None else 0) if ok else None,
                     "longest_cross_doc_words": (int(longest["n_words"])
                                                 if longest is not None else 0) if ok else None,
                     "longest_cross_doc_text": (longest["text"] if longest is not None else "")
                     if ok else None,
                     "post_to_pre_leak": leak if ok else None,
                     "leak_docs": (leaks if p["split"] == "post" else []) if ok else None})
    spans = spans.drop(columns="_leaks")
    return (spans.loc[:, MSR_SPANS.columns],
            pd.DataFrame(rows, columns=MSR_ATTRIBUTION.columns))


def attribution_table(summaries: Iterable[pd.DataFrame], spans: Iterable[pd.DataFrame],
                      *, top_leaks: int = 3) -> pd.DataFrame:
    """One row per (dataset, model, variant, split): generations attributed and failed, those
    with a span, mean coverage, cross-document spans, the longest one, and post-to-pre leaks
    (with the first ``top_leaks`` leaking spans, longest first)."""
    summary = pd.concat(list(summaries), ignore_index=True)
    span_rows = pd.concat(list(spans), ignore_index=True)
    rows = []
    keys = ["dataset", "model", "variant", "split"]
    for key, g in summary.groupby(keys, sort=True):
        ok = g[g["status"] == "ok"]
        s = span_rows.merge(ok[["request_id", "sample_index"]], on=["request_id",
                                                                   "sample_index"])
        cross = s[s["cross_doc"]]
        longest = cross.loc[cross["n_words"].idxmax()] if len(cross) else None
        leaks = s[s["pre_doc"] & (s["split"] == "post")].sort_values(
            ["n_words", "request_id"], ascending=[False, True]).head(top_leaks)
        leak_docs = {(r.request_id, r.sample_index): set(r.leak_docs)
                     for r in ok.itertuples() if r.post_to_pre_leak}
        rows.append({
            **dict(zip(keys, key)), "generations": len(ok), "failed": len(g) - len(ok),
            "with_span": int((ok["n_spans"] > 0).sum()),
            "mean_coverage": float(ok["coverage"].mean()) if len(ok) else float("nan"),
            "with_cross_doc": int((ok["n_cross_doc"] > 0).sum()),
            "cross_doc_spans": len(cross),
            "in_prompt_spans": int(s["in_prompt"].sum()),
            "longest_cross_doc_words": int(longest["n_words"]) if longest is not None else 0,
            "longest_cross_doc_doc": _other_doc(longest) if longest is not None else "",
            "longest_cross_doc_text": longest["text"] if longest is not None else "",
            "post_to_pre_leaks": int(ok["post_to_pre_leak"].fillna(False).astype(bool).sum()),
            "top_leaks": "; ".join(
                f"{r.doc_id} -> {', '.join(_listed(r, leak_docs[(r.request_id, r.sample_index)]))}"
                f": {r.n_words} words" for r in leaks.itertuples()),
        })
    return pd.DataFrame(rows)


def _listed(span: Any, among: set[str]) -> list[str]:
    """The span's listed documents that are in ``among``, in index order."""
    return [k for d in span.docs if (k := doc_key(d["source"], d["doc_id"])) in among]


def _other_doc(span: Mapping[str, Any]) -> str:
    """The first listed document of a span that is not its prompt's own ("" if none is
    listed: the other document lies beyond the first ``max_docs``)."""
    own = doc_key(span["source"], span["doc_id"])
    return next((k for d in span["docs"] if (k := doc_key(d["source"], d["doc_id"])) != own),
                "")


def _clip(text: str, words: int = 12) -> str:
    parts = str(text).split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def table_markdown(table: pd.DataFrame, *, min_words: int, max_docs: int,
                   index: Mapping[str, str]) -> str:
    """``results/tables/msr_attribution.md``: the table with its notes (``index``: each
    dataset's index name)."""
    lines = ["# MSR attribution: verbatim spans found in the corpus", "",
             f"Maximal spans of at least {min_words} words of each generation found in the "
             f"span index (up to {max_docs} documents each). A cross-document span occurs in "
             "a document other than the prompt's own and not in the prompt; a post-to-pre "
             "leak is a D_post generation with a span, outside its prompt, in a D_pre "
             "document.", ""]
    cols = ["dataset", "model", "variant", "split", "generations", "failed", "with_span",
            "mean_coverage", "with_cross_doc", "cross_doc_spans", "in_prompt_spans",
            "longest_cross_doc_words", "longest_cross_doc_doc", "longest_cross_doc_text",
            "post_to_pre_leaks", "top_leaks"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in table.to_dict("records"):
        cells = []
        for c in cols:
            v = r.get(c, "")
            if c == "mean_coverage":
                v = "" if pd.isna(v) else f"{v:.3f}"
            elif c == "longest_cross_doc_text":
                v = _clip(v)
            cells.append(str(v).replace("|", "\\|").replace("\n", " "))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Index per dataset: " + ", ".join(f"{d}: {n}" for d, n in sorted(index.items()))
                 + ".")
    return "\n".join(lines) + "\n"
