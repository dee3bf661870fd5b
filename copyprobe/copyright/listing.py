"""The copyright study's part of ``copyprobe list metrics``: its task metrics, and the
embedding backends of :data:`~copyprobe.copyright.metrics.embedding.EMBEDDERS` from their
declarations (nothing imported)."""

from __future__ import annotations

from copyprobe.copyright.metrics.embedding import EMBEDDERS
from copyprobe.extras import PROVIDERS
from copyprobe.listing import Entry, Metric, describe, metric_entries

#: the benchmark's task metrics (copyprobe.copyright.response_scoring), with the modules computing them
METRICS = (
    Metric("rouge-l", "ROUGE-L precision, recall, F1 with stemming (rouge-score's numbers)",
           "copyprobe.copyright.metrics.rouge", ("repetition", "extraction")),
    Metric("bertscore", "BERTScore F1, packaged all-MiniLM-L6-v2 by default",
           "copyprobe.copyright.metrics.bertscore", ("paraphrase",)),
)


def metrics() -> list[Entry]:
    out = metric_entries(METRICS)
    for decl in EMBEDDERS.declarations():
        # the backend's own package (its class imports it): an extra's, or one of no extra
        package = str(decl.facts.get("package", ""))
        top = package.replace("-", "_")
        need = PROVIDERS[top][1][:1] if top in PROVIDERS else ()
        shown = ("translation", *(["offline"] if decl.facts.get("offline") else []))
        out.append(Entry(f"embedding:{decl.name}", f"embedding cosine: {describe(decl.target)}",
                         shown, need, (package,) if package and not need else ()))
    return out
