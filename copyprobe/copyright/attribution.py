"""Copyright attribution: which of the benchmark's materials each response reproduces
verbatim, and how much of the response they cover.

Reference: docs/copyright.md.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import ATTRIBUTION, TableSpec
from copyprobe.copyright.study import copyright_source
from copyprobe.spans.attribution import attribute, covered_words
from copyprobe.spans.types import SpanLookup

#: The manifest columns carried into the attribution table.
MANIFEST_COLUMNS = ("material_id", "title", "category", "notice_form", "task", "benign",
                    "query_id")

COPYRIGHT_ATTRIBUTION = TableSpec(
    "copyright_attribution",
    pa.schema(list(ATTRIBUTION.schema) + [
        pa.field("benchmark", pa.string()),
        pa.field("material_id", pa.string()),
        pa.field("title", pa.string()),
        pa.field("category", pa.string()),
        pa.field("notice_form", pa.string()),
        pa.field("task", pa.string()),
        pa.field("benign", pa.bool_()),
        pa.field("query_id", pa.string()),
        # the doc_id of every material the response's spans are found in, in index order
        pa.field("materials", pa.list_(pa.string())),
        pa.field("reproduces_own_material", pa.bool_()),
        # words of the response inside spans found in the request's own material
        pa.field("own_covered_words", pa.int32()),
    ]),
)


def _own_covered(spans: pd.DataFrame, own: str) -> int:
    """Words of the response inside spans found in the material ``own``."""
    return covered_words(s for s in spans.itertuples()
                         if any(d["doc_id"] == own for d in s.docs))


def attribute_responses(generations: pd.DataFrame, manifest: pd.DataFrame,
                        index: SpanLookup, *, min_words: int, max_docs: int, name: str,
                        benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The SPANS table and the :data:`COPYRIGHT_ATTRIBUTION` table of one model's responses
    to one benchmark (``manifest``: its manifest, by ``request_id``)."""
    rows = manifest.set_index("request_id")
    missing = set(generations["request_id"]) - set(rows.index)
    if missing:
        raise ValueError(f"responses refer to request_id(s) not in the manifest of "
                         f"{benchmark!r}: {sorted(missing)[:5]}")
    spans, summary = attribute(generations, index, min_words=min_words, max_docs=max_docs,
                               name=name, source=copyright_source(benchmark))
    by_gen = {key: g for key, g in spans.groupby(["request_id", "sample_index"])}
    out = []
    for r in summary.to_dict("records"):
        m = rows.loc[r["request_id"]]
        own = str(m["material_id"])
        mine = by_gen.get((r["request_id"], r["sample_index"]))
        ok = r["status"] == "ok"
        found: list[str] = []
        if mine is not None:
            found = list(dict.fromkeys(d["doc_id"] for docs in mine["docs"] for d in docs))
        own_words = _own_covered(mine, own) if mine is not None else 0
        out.append({**r, "benchmark": benchmark, **{c: m[c] for c in MANIFEST_COLUMNS},
                    "materials": found if ok else None,
                    "reproduces_own_material": (own in found) if ok else None,
                    "own_covered_words": own_words if ok else None})
    return spans, pd.DataFrame(out, columns=COPYRIGHT_ATTRIBUTION.columns)


def task_form_table(attributions: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """One row per (model, task, notice form): responses, failed, the share reproducing any
    material and the request's own, mean coverage, and the longest span."""
    df = pd.concat(list(attributions), ignore_index=True)
    rows = []
    for (model, task, form), g in df.groupby(["model", "task", "notice_form"], sort=True):
        ok = g[g["status"] == "ok"]
        n = len(ok)
        any_material = ok["materials"].map(len) > 0
        own = ok["reproduces_own_material"].astype(bool)
        rows.append({"model": model, "task": task, "notice_form": form, "responses": n,
                     "failed": len(g) - n,
                     "reproducing": int(any_material.sum()),
                     "reproducing_share": any_material.mean() if n else float("nan"),
                     "own_material_share": own.mean() if n else float("nan"),
                     "mean_coverage": ok["coverage"].mean() if n else float("nan"),
                     "longest_span_words": int(ok["longest_span_words"].max()) if n else 0})
    return pd.DataFrame(rows)


def table_markdown(table: pd.DataFrame, *, benchmark: str, model: str, min_words: int,
                   index: str) -> str:
    """The Markdown of :func:`task_form_table` with its notes."""
    lines = [f"# Attribution of {model}'s responses on {benchmark}", "",
             f"Spans of at least {min_words} words of each response found verbatim in the "
             f"benchmark's materials (index `{index}`); coverage is the share of a "
             "response's words inside such spans. Image and text prompts alike.", ""]
    cols = ["task", "notice_form", "responses", "failed", "reproducing", "reproducing_share",
            "own_material_share", "mean_coverage", "longest_span_words"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in table.to_dict("records"):
        cells = [("" if pd.isna(r[c]) else f"{r[c]:.3f}") if isinstance(r[c], float)
                 else str(r[c]) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
