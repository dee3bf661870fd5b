"""Responses produced by any tool, read as a manifest and generations that
:func:`copyprobe.copyright.response_scoring.score_responses` scores, and written back in the authors' format.

Reference: docs/copyright.md.
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.notices import (
    GENERIC_NOTICE,
    NOTICE_FORMS,
    check_form,
    notice_for,
    notice_place,
    original_notice,
)
from copyprobe.copyright.queries import BENIGN_TASKS, TASK_ALIASES, TASKS, passage_of
from copyprobe.sources.base import text_id

ERROR_PREFIX = "[ERROR]"
TABLE_COLUMNS = ("material", "form", "task", "query", "response")
TABLE_SUFFIXES = (".jsonl", ".csv", ".parquet")
#: copyprobe's task -> the authors' category name.
AUTHOR_CATEGORY = {v: k for k, v in TASK_ALIASES.items()}
#: SCORED_RUN column -> the key of the authors' metrics module holding the same quantity.
AUTHOR_KEYS = {"rouge_l_precision": "ROUGE-L", "bertscore_f1": "BERTScore_F1",
               "embedding_cosine": "Cosine_Similarity"}
_EXTRA_KEYS = ("request_id", "status", "task", "notice_form", "reference", "rouge_l_precision",
               "rouge_l_recall", "rouge_l_f1", "bertscore_f1", "embedding_cosine",
               "refusal_rule", "refusal_judge", "refused", "judge_status", "error_class",
               "error")


class ResponsesError(ValueError):
    """A responses file that cannot be scored (the message names the file, sample or row)."""


@dataclass
class Responses:
    """What was read: the manifest rows and generations of the responses, in file order."""

    manifest: pd.DataFrame
    generations: pd.DataFrame
    #: the authors' samples (a responses JSON), else None
    samples: list[dict[str, Any]] | None = None
    #: per manifest row: (sample index, response index) in ``samples``
    positions: list[tuple[int, int]] = field(default_factory=list)
    form_basis: str = ""
    models: list[str] = field(default_factory=list)


def _task(name: Any, where: str) -> str:
    name = str(name).strip() if isinstance(name, str) else ""
    task = TASK_ALIASES.get(name, name)
    if task not in TASKS and task not in BENIGN_TASKS:
        raise ResponsesError(f"{where}: task {name!r} is not one of {list(TASKS)}, "
                             f"{list(BENIGN_TASKS)} or the released {list(TASK_ALIASES)}")
    return task


def _outcome(response: Any, status: Any = "ok", error: Any = None
             ) -> tuple[str, str | None, str | None, str | None]:
    """(status, text, error_class, error) of one response."""
    if isinstance(status, str) and status.strip() and status.strip() != "ok":
        return "failed", None, "status", str(error or status)
    if not isinstance(response, str):
        return "failed", None, "missing", "no response"
    if not response.strip():
        return "failed", None, "empty_response", "the answer is empty"
    if response.lstrip().startswith(ERROR_PREFIX):
        return "failed", None, "error_response", response.lstrip()[len(ERROR_PREFIX):].strip()
    return "ok", response, None, None


class _Builder:
    """Collects manifest rows and generations, keeping request ids unique."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.gens: list[dict[str, Any]] = []
        self._seen: Counter[str] = Counter()

    def add(self, material: Mapping[str, Any], form: str, task: str, query: str,
            outcome: tuple[str, str | None, str | None, str | None]) -> None:
        mid = str(material["doc_id"])
        shown = notice_for(form, original_notice(material)) or ("", "none")
        base = text_id(mid, form, task, query, length=20)
        self._seen[base] += 1
        rid = base if self._seen[base] == 1 else f"{base}-{self._seen[base]}"
        text = str(material["text"])
        year = material.get("rights_year")
        year = None if year is None or (isinstance(year, float) and math.isnan(year)) \
            else int(year)
        self.rows.append({
            "request_id": rid, "material_id": mid, "title": material["title"],
            "category": material.get("category") or "",
            "rights_holder": material.get("rights_holder") or "", "rights_year": year,
            "notice_form": form, "notice_text": shown[0], "notice_basis": shown[1],
            "notice_place": notice_place(form), "task": task, "benign": task in BENIGN_TASKS,
            "query_id": f"{task}:{text_id(query, length=8)}", "query": query,
            "query_origin": "responses", "passage": passage_of(query)
            if task == "extraction" else "", "text": text,
            "text_sha256": text_id(text, length=64), "image_paths": [], "image_sha256": [],
            "render_settings": "", "truncated": False, "image_origin": "none",
            "image_file": ""})
        status, out, error_class, error = outcome
        self.gens.append({"request_id": rid, "status": status, "text": out,
                          "error_class": error_class, "error": error, "from_cache": None})

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return (pd.DataFrame(self.rows, columns=COPYRIGHT_MANIFEST.columns),
                pd.DataFrame(self.gens, columns=["request_id", "status", "text", "error_class",
                                                 "error", "from_cache"]))


# ------------------------------------------------------------------------- authors' JSON

def _form_of(query: str, sample: Mapping[str, Any], form: str | None, where: str
             ) -> tuple[str, str]:
    """(form, bare query) of one response of the authors' JSON."""
    notice = sample.get("copyright_text") or ""
    prefixes = [("text_generic", f"{GENERIC_NOTICE}\n")]
    if notice.strip():
        prefixes.append(("text_original", f"{notice}\n"))
    seen = next(((f, query[len(p):]) for f, p in prefixes if query.startswith(p)), None)
    if form is None:
        return seen if seen is not None else ("none", query)
    if seen is not None and seen[0] != form:
        raise ResponsesError(f"{where}: the query starts with the {seen[0]} notice, but the "
                             f"form is {form!r}")
    return (form, seen[1]) if seen is not None else (form, query)


def read_authors_json(path: str | Path, materials: pd.DataFrame, *, form: str | None = None
                      ) -> Responses:
    """The responses of an authors' responses JSON at ``path``; ``materials``: a corpus table
    holding each sample's material (its ``page_id`` is the sample's
    ``<category>_copyright/<name>.txt``, as the copyright_json and copyright_dataset sources
    write it). ``form``: the notice form of the run (None: read from the queries' prefix)."""
    from copyprobe.sources.base import SourceError
    from copyprobe.sources.materials.dataset_json import material_file, read_samples

    path = Path(path)
    if form is not None:
        check_form(form)
    try:
        samples = read_samples(path)
    except SourceError as exc:
        raise ResponsesError(str(exc)) from None
    by_file = {str(p): r for p, r in zip(materials["page_id"], materials.to_dict("records"),
                                         strict=True)}
    b = _Builder()
    positions: list[tuple[int, int]] = []
    for i, sample in enumerate(samples):
        where = f"{path}, sample {i}"
        if not isinstance(sample, Mapping) or not isinstance(sample.get("txt_file"), str):
            raise ResponsesError(f"{where}: must be an object with a 'txt_file' string")
        material = by_file.get(material_file(sample["txt_file"]))
        if material is None:
            raise ResponsesError(f"{where}: txt_file {sample['txt_file']!r} is not among the "
                                 "materials")
        responses = sample.get("responses")
        if not isinstance(responses, list):
            raise ResponsesError(f"{where}: 'responses' must be a list of {{category, query, "
                                 f"response}}, got {type(responses).__name__}")
        for j, r in enumerate(responses):
            rw = f"{where}, response {j}"
            if not isinstance(r, Mapping) or not isinstance(r.get("query"), str):
                raise ResponsesError(f"{rw}: must be an object with a 'query' string")
            f, query = _form_of(r["query"], sample, form, rw)
            b.add(material, f, _task(r.get("category"), rw), query, _outcome(r.get("response")))
            positions.append((i, j))
    if not b.rows:
        raise ResponsesError(f"{path}: holds no responses (an empty list)")
    manifest, gens = b.frames()
    basis = (f"given: {form}" if form is not None else
             "read from the queries' notice prefix (no prefix: none; an image-form run "
             "needs --form)")
    return Responses(manifest, gens, samples=samples, positions=positions, form_basis=basis)


# ------------------------------------------------------------------------------- tables

def read_table_file(path: str | Path) -> pd.DataFrame:
    """A JSONL, CSV or Parquet table (by suffix); errors name the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ResponsesError(f"{path}: expected the authors' responses JSON (.json) or a table "
                             f"({', '.join(TABLE_SUFFIXES)})")
    try:
        if suffix == ".jsonl":
            return pd.read_json(path, lines=True, dtype=False)
        if suffix == ".csv":
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        return pd.read_parquet(path)
    except Exception as exc:  # pandas and pyarrow raise many kinds
        raise ResponsesError(f"{path}: cannot read it as {suffix[1:]}: {exc}") from exc


def _material_index(materials: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    index: dict[str, list[dict[str, Any]]] = {}
    for m in materials.to_dict("records"):
        for key in dict.fromkeys([m["doc_id"], m.get("page_id"), m.get("title")]):
            if isinstance(key, str) and key:
                index.setdefault(key, []).append(m)
    return index


def read_table_responses(path: str | Path, materials: pd.DataFrame) -> Responses:
    """The responses of a table with :data:`TABLE_COLUMNS` (see the module text)."""
    path = Path(path)
    df = read_table_file(path)
    if not len(df):
        raise ResponsesError(f"{path}: holds no responses (no rows)")
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise ResponsesError(f"{path}: lacks column(s) {missing} (has {list(df.columns)}); "
                             f"a responses table has {list(TABLE_COLUMNS)}")
    from copyprobe.sources.materials.dataset_json import material_file

    index = _material_index(materials)
    b = _Builder()
    line = 2 if path.suffix.lower() == ".csv" else 1
    for i, r in enumerate(df.to_dict("records")):
        where = f"{path}, row {i + 1} (line {i + line})"
        key = str(r["material"]).strip() if r["material"] is not None else ""
        found = index.get(key) or index.get(material_file(key), []) if key else []
        if len(found) != 1:
            why = "names no material" if not found else \
                f"names {len(found)} materials ({[m['doc_id'] for m in found][:3]})"
            raise ResponsesError(f"{where}: material {key!r} {why}; give a doc_id, released "
                                 "file or title of the materials")
        form = str(r["form"]).strip() if isinstance(r["form"], str) else ""
        if form not in NOTICE_FORMS:
            raise ResponsesError(f"{where}: form {r['form']!r} is not one of "
                                 f"{list(NOTICE_FORMS)}")
        if not isinstance(r["query"], str):
            raise ResponsesError(f"{where}: query must be a string, got {r['query']!r}")
        b.add(found[0], form, _task(r["task"], where), r["query"].strip(),
              _outcome(r["response"], r.get("status", "ok"), r.get("error")))
    manifest, gens = b.frames()
    models = sorted({str(m) for m in df["model"] if isinstance(m, str) and m}) \
        if "model" in df.columns else []
    return Responses(manifest, gens, form_basis="the table's form column", models=models)


# -------------------------------------------------------------------- authors' format out

def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _scores(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col, key in AUTHOR_KEYS.items():
        value = _plain(row[col])
        if value is not None:
            out[key] = value
    if row["status"] == "ok":
        judged = _plain(row["refused"])
        out["Is_Rejection"] = bool(judged if judged is not None else row["refusal_rule"])
    extra = {k: _plain(row[k]) for k in _EXTRA_KEYS if k in row}
    extra["refusal_basis"] = ("judge" if _plain(row.get("refused")) is not None else
                              "rule detector" if row["status"] == "ok" else None)
    out["copyprobe"] = extra
    return out


def authors_json(responses: Responses, scored: pd.DataFrame) -> list[dict[str, Any]]:
    """The scored responses in the authors' JSON format: their samples (a responses JSON read
    here) or one sample per material (a table), each response with :func:`_scores` added."""
    by_id = {r["request_id"]: r for r in scored.to_dict("records")}
    rows = responses.manifest.to_dict("records")
    if responses.samples is not None:
        out = copy.deepcopy(responses.samples)
        for m, (i, j) in zip(rows, responses.positions, strict=True):
            out[i]["responses"][j].update(_scores(by_id[m["request_id"]]))
        return out
    samples: dict[str, dict[str, Any]] = {}
    gens = responses.generations.set_index("request_id")
    for m in rows:
        s = samples.setdefault(m["material_id"], {
            "txt_file": m["material_id"], "text": m["text"],
            "copyright_text": m["notice_text"] if m["notice_form"].endswith("_original")
            else "", "responses": []})
        if m["notice_form"].endswith("_original"):
            s["copyright_text"] = m["notice_text"]
        g = gens.loc[m["request_id"]]
        text = g["text"] if g["status"] == "ok" else f"{ERROR_PREFIX} {g['error']}"
        s["responses"].append({"category": AUTHOR_CATEGORY.get(m["task"], m["task"]),
                               "query": m["query"], "response": text,
                               **_scores(by_id[m["request_id"]])})
    return list(samples.values())


def write_authors_json(path: str | Path, samples: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``samples`` as the authors' scripts do (UTF-8, indent 4), atomically."""
    from copyprobe.artifacts import write_text

    return write_text(path, json.dumps(list(samples), ensure_ascii=False, indent=4) + "\n")
