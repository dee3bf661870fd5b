"""The benchmark's manifest: one row per (material, notice form, task, query) with every field
needed to rebuild the prompt, and the :class:`~copyprobe.prompt.Prompt` built from a row.

Reference: docs/copyright-benchmark.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec
from copyprobe.copyright.excerpt import cut_words
from copyprobe.copyright.notices import (
    NOTICE_FORMS,
    check_form,
    notice_for,
    notice_place,
    original_notice,
)
from copyprobe.copyright.queries import BENIGN_TASKS, TASKS, Query, off_task
from copyprobe.prompt import Prompt
from copyprobe.sources.base import text_id

COPYRIGHT_MANIFEST = TableSpec(
    "copyright_manifest",
    pa.schema(
        [
            # sha256 prefix of everything that makes the prompt (stable across rebuilds)
            ("request_id", pa.string()),
            ("material_id", pa.string()),
            ("title", pa.string()),
            ("category", pa.string()),
            ("rights_holder", pa.string()),
            ("rights_year", pa.int32()),
            ("notice_form", pa.string()),
            # the notice this row shows ("" for the form none)
            ("notice_text", pa.string()),
            # "generic", "rights_notice" or "composed from rights_holder and rights_year"
            ("notice_basis", pa.string()),
            ("notice_place", pa.string()),  # "none" | "text" | "image"
            ("task", pa.string()),
            ("benign", pa.bool_()),
            ("query_id", pa.string()),
            ("query", pa.string()),
            # "copyprobe" (own seeds) or the seeds file
            ("query_origin", pa.string()),
            # the passage the query names ("sentence:2"), "" = the whole text
            ("passage", pa.string()),
            ("text", pa.string()),
            ("text_sha256", pa.string()),
            ("image_paths", pa.list_(pa.string())),
            ("image_sha256", pa.list_(pa.string())),
            # the render settings and font (JSON), "" without images
            ("render_settings", pa.string()),
            # the text shown was cut: a max_words excerpt, or a render that left lines out
            # (overflow "truncate")
            ("truncated", pa.bool_()),
            # "rendered" (copyprobe's pages), "released" (the authors' images) or "none"
            ("image_origin", pa.string()),
            # the released image as the release names it ("" unless released)
            ("image_file", pa.string()),
        ]
    ),
)

_MATERIAL_COLUMNS = ("doc_id", "title", "text", "category", "rights_holder", "rights_year",
                     "rights_notice")


class ManifestError(ValueError):
    """Bad input to the manifest (the message names the material or column)."""


def _footer_for(form: str, notice: str) -> str | None:
    return notice if notice_place(form) == "image" else None


def _render(text: str, footer: str | None, settings: Any, images_dir: Path,
            cache: dict[tuple[str, str | None], tuple[list[str], list[str], bool]]
            ) -> tuple[list[str], list[str], bool]:
    from copyprobe.copyright.render import render_to_files

    key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), footer)
    if key not in cache:
        pages = render_to_files(text, settings, footer, images_dir)
        cache[key] = ([str(Path(p.path).resolve()) for p in pages], [p.sha256 for p in pages],
                      any(p.truncated for p in pages))
    return cache[key]


def _request_id(material_id: str, text_sha: str, form: str, notice: str, q: Query,
                image_sha: Sequence[str]) -> str:
    return text_id(material_id, text_sha, form, notice, q.task, q.query_id, q.query,
                   *image_sha, length=20)


def build_manifest(materials: pd.DataFrame, queries: Sequence[Query], *,
                   forms: Iterable[str] = NOTICE_FORMS, images_dir: str | Path | None = None,
                   settings: Any = None, benign_forms: Iterable[str] | None = None,
                   released: Any = None, max_words: int | None = None
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The manifest rows and the build report for ``materials`` (a corpus table) x ``forms`` x
    ``queries``; the benign queries only under ``benign_forms`` when given (default: every
    form).

    With ``images_dir``, every material is rendered (``settings``: a
    :class:`~copyprobe.copyright.render.RenderSettings`, default settings when None) into
    content-addressed PNG files there. With ``released`` (a
    :class:`~copyprobe.copyright.released_images.ReleasedImages`) the released images are shown
    instead and ``images_dir`` is not used. With ``max_words`` each material is shown (and
    scored against) only up to its ``max_words``-th word; its rows say ``truncated``.
    """
    forms = [check_form(f) for f in forms]
    benign_under = set(forms if benign_forms is None else map(check_form, benign_forms))
    missing = [c for c in _MATERIAL_COLUMNS if c not in materials.columns]
    if missing:
        raise ManifestError(f"materials table lacks column(s) {missing} (a corpus table has "
                            f"them; got {list(materials.columns)})")
    if not queries:
        raise ManifestError("no queries: give a seeds.json or use copyprobe's own seeds")
    ids = materials["doc_id"]
    dup = sorted(set(ids[ids.duplicated()]))
    if dup:
        raise ManifestError(f"materials table: doc_id(s) {dup[:5]} appear more than once")
    render_json = ""
    img_dir = None
    if released is not None:
        render_json = released.settings()
        images_dir = None
    if images_dir is not None:
        from copyprobe.copyright.render import RenderSettings, font_info

        settings = settings if settings is not None else RenderSettings()
        render_json = json.dumps({**settings.as_dict(), "font_file": font_info(settings)},
                                 sort_keys=True)
        img_dir = Path(images_dir)
        img_dir.mkdir(parents=True, exist_ok=True)
    cache: dict[tuple[str, str | None], tuple[list[str], list[str], bool]] = {}

    rows: list[dict[str, Any]] = []
    without: list[dict[str, str]] = []
    excerpted = 0
    no_image: list[dict[str, str]] = []
    for m in materials.to_dict("records"):
        mid = str(m["doc_id"])
        text = m["text"]
        if not isinstance(text, str) or not text.strip():
            raise ManifestError(f"material {mid!r}: empty or missing text")
        cut = False
        if max_words is not None:
            text, cut = cut_words(text, max_words)
            excerpted += cut
        original = original_notice(m)
        shown_images = None
        if released is not None:
            from copyprobe.copyright.released_images import MissingReleasedImage

            try:  # only the images of the forms this material gets
                shown_images = released.for_material(
                    m, [f for f in forms if notice_for(f, original) is not None])
            except MissingReleasedImage as exc:
                if released.on_error == "raise":
                    raise ManifestError(f"{exc} (released_images.on_error: skip leaves such "
                                        "materials out)") from None
                no_image.append({"material_id": mid, "title": str(m["title"]),
                                 "reason": str(exc)})
                continue
        text_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if original is None:
            without.append({"material_id": mid, "title": str(m["title"]),
                            "category": str(m["category"] or "")})
        year = m["rights_year"]
        year = None if year is None or (isinstance(year, float) and year != year) else int(year)
        base = {"material_id": mid, "title": m["title"], "category": m["category"] or "",
                "rights_holder": m["rights_holder"] or "", "rights_year": year,
                "text": text, "text_sha256": text_sha, "render_settings": render_json}
        for form in forms:
            shown = notice_for(form, original)
            if shown is None:
                continue
            notice, basis = shown
            paths: list[str] = []
            shas: list[str] = []
            truncated = cut
            origin, image_file = "none", ""
            if shown_images is not None:
                img = shown_images[form]
                paths, shas, origin, image_file = [str(img.path)], [img.sha256], "released", \
                    img.file
            elif img_dir is not None:
                paths, shas, render_cut = _render(text, _footer_for(form, notice), settings,
                                                  img_dir, cache)
                truncated = truncated or render_cut
                origin = "rendered"
            for q in queries:
                if q.benign and form not in benign_under:
                    continue
                rows.append({**base, "request_id": _request_id(mid, text_sha, form, notice, q,
                                                               shas),
                             "notice_form": form, "notice_text": notice, "notice_basis": basis,
                             "notice_place": notice_place(form), "task": q.task,
                             "benign": q.benign, "query_id": q.query_id, "query": q.query,
                             "query_origin": q.origin, "passage": q.passage,
                             "image_paths": paths, "image_sha256": shas,
                             "truncated": truncated, "image_origin": origin,
                             "image_file": image_file})
    df = pd.DataFrame(rows, columns=COPYRIGHT_MANIFEST.columns)
    report = build_report(materials, df, without, queries, forms)
    report["max_words"] = max_words
    report["excerpted_materials"] = excerpted
    if released is not None:
        report["images_origin"] = "released"
        report["materials_without_released_image"] = no_image
    return df, report


def build_report(materials: pd.DataFrame, df: pd.DataFrame, without: list[dict[str, str]],
                 queries: Sequence[Query], forms: Sequence[str]) -> dict[str, Any]:
    """What the build used and left out: materials, materials without an original notice,
    rows per form and task, queries per task and those whose keyword rule reads another task."""
    per_form = Counter(df["notice_form"]) if len(df) else Counter()
    per_task = Counter(df["task"]) if len(df) else Counter()
    return {
        "rows": int(len(df)),
        "materials": int(len(materials)),
        "materials_per_category": {str(k): int(v) for k, v in
                                   Counter(materials["category"].fillna("")).items()},
        "materials_without_original_notice": without,
        "forms": list(forms),
        "rows_per_form": {f: int(per_form.get(f, 0)) for f in forms},
        "rows_per_task": {t: int(per_task.get(t, 0)) for t in (*TASKS, *BENIGN_TASKS)
                          if per_task.get(t, 0)},
        "queries_per_task": dict(Counter(q.task for q in queries)),
        "queries_off_task": off_task(list(queries)),
        "images": int(len({p for ps in df["image_paths"] for p in ps})) if len(df) else 0,
        "truncated_rows": int(df["truncated"].sum()) if len(df) else 0,
    }


def prompt_for(row: Mapping[str, Any]) -> Prompt:
    """The chat prompt of a manifest row: one user message whose text is the notice (text
    forms) and the query, followed by the rendered pages as ``image_url`` parts (``file://``
    URLs). A row built without images carries the material's text after the query instead; an
    image-notice row without images is an error (its notice would not be shown)."""
    notice = row["notice_text"] if row["notice_place"] == "text" else ""
    query = f"{notice}\n{row['query']}" if notice else str(row["query"])
    paths = list(row["image_paths"] if row["image_paths"] is not None else [])
    if not paths:
        if row["notice_place"] == "image":
            raise ManifestError(f"manifest row {row['request_id']}: notice form "
                                f"{row['notice_form']!r} needs the rendered images; build "
                                "the manifest with an images folder")
        return Prompt("chat", messages=({"role": "user",
                                         "content": f"{query}\n\n{row['text']}"},))
    parts: list[dict[str, Any]] = [{"type": "text", "text": query}]
    parts += [{"type": "image_url", "image_url": {"url": Path(p).resolve().as_uri()}}
              for p in paths]
    return Prompt("chat", messages=({"role": "user", "content": parts},))
