"""A configured benchmark: its queries, render settings and manifest, and the prompts table a
model is run on (the generation layer's ``PROMPTS``).

A benchmark (a ``copyright.benchmarks.<name>`` config entry) names the corpus tables of its
materials, the queries (copyprobe's own seeds or a released-format seeds.json, optionally the
first ``per_task`` of each task, plus the benign set), the notice forms and the render settings.
Everything here is a pure function of that entry and its inputs, so the workflow and the
``copyright-manifest`` command build the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.copyright.manifest import build_manifest, prompt_for
from copyprobe.copyright.notices import NOTICE_FORMS
from copyprobe.copyright.queries import Query, benign_queries, load_seeds_json, own_seeds

def benchmark_queries(spec: Mapping[str, Any]) -> list[Query]:
    """The queries of a benchmark entry: seeds (own or ``queries``), the first ``per_task`` of
    each task when set, and the benign set when ``benign``."""
    queries = load_seeds_json(spec["queries"]) if spec.get("queries") else own_seeds()
    if spec.get("benign", True):
        queries = queries + benign_queries()
    per_task = spec.get("per_task")
    if per_task is None:
        return queries
    kept: list[Query] = []
    seen: dict[str, int] = {}
    for q in queries:
        seen[q.task] = seen.get(q.task, 0) + 1
        if seen[q.task] <= per_task:
            kept.append(q)
    return kept


def render_settings(spec: Mapping[str, Any]) -> Any:
    """The :class:`~copyprobe.copyright.render.RenderSettings` of a benchmark entry (None when
    it shows the text or the released images instead of renders)."""
    if not spec.get("images", True) or spec.get("images") == "released":
        return None
    from copyprobe.copyright.render import RenderSettings

    return RenderSettings.from_dict(spec.get("render") or {})


def released_images(spec: Mapping[str, Any]) -> Any:
    """The :class:`~copyprobe.copyright.released_images.ReleasedImages` of a benchmark entry
    with ``images: released`` (from its ``released_images`` entry), else None."""
    if spec.get("images") != "released":
        if spec.get("released_images"):
            raise ValueError("released_images is set but images is not 'released': set "
                             "images: released to show the released images")
        return None
    from copyprobe.copyright.released_images import ReleasedImages

    return ReleasedImages.from_spec(spec.get("released_images"))


def materials_table(corpora: Sequence[pd.DataFrame], names: Sequence[str]) -> pd.DataFrame:
    """The materials of a benchmark: its sources' corpus tables stacked (doc_ids are unique
    per source and carry the source's name, so they stay unique)."""
    frames = [df for df in corpora if len(df)]
    if not frames:
        raise ValueError(f"the benchmark's material sources {list(names)} hold no documents")
    return pd.concat(frames, ignore_index=True)


def build_benchmark(corpora: Sequence[pd.DataFrame], spec: Mapping[str, Any], *,
                    images_dir: str | Path | None, names: Sequence[str] = ()
                    ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The manifest and build report of a benchmark entry over its materials' corpus tables;
    pages are drawn into ``images_dir`` (content-addressed: files already there are reused)."""
    settings = render_settings(spec)
    df, report = build_manifest(materials_table(corpora, names), benchmark_queries(spec),
                                forms=spec.get("forms") or NOTICE_FORMS,
                                images_dir=images_dir if settings is not None else None,
                                settings=settings, benign_forms=spec.get("benign_forms"),
                                released=released_images(spec),
                                max_words=spec.get("max_words"))
    report["benign_forms"] = spec.get("benign_forms")
    report["per_task"] = spec.get("per_task")
    report["benign"] = bool(spec.get("benign", True))
    report["queries"] = spec.get("queries") or "copyprobe"
    return df, report


def manifest_prompts(manifest: pd.DataFrame, *, model: str, source: str) -> pd.DataFrame:
    """The generation layer's prompts table (``PROMPTS``) for one model: one ready chat prompt
    per manifest row, keyed by the manifest's request_id. ``reference`` is the material's text
    (a ``max_tokens_per_reference_word`` decoding then scales with it); ``split`` is the
    notice form, ``doc_id`` the material."""
    rows = []
    for row in manifest.to_dict("records"):
        text = row["text"]
        rows.append({
            "request_id": row["request_id"], "model": model, "source": source,
            "doc_id": row["material_id"], "split": row["notice_form"], "status": "ready",
            "reason": "", "prompt_format": "chat", "prompt": prompt_for(row).to_json(),
            "reference": text, "document": text, "n": 0, "num_words": len(text.split()),
        })
    return pd.DataFrame(rows, columns=["request_id", "model", "source", "doc_id", "split",
                                       "status", "reason", "prompt_format", "prompt",
                                       "reference", "document", "n", "num_words"])
