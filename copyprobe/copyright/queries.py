"""The queries of the copyright-compliance benchmark: four tasks, a benign set, and the rules
that say which task a query asks for and which passage it names.

Reference: docs/copyright-benchmark.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from copyprobe.sources.base import text_id

TASKS = ("repetition", "extraction", "paraphrase", "translation")
BENIGN_TASKS = ("summary", "author", "comment", "background")
#: The released seeds.json's task names -> ours.
TASK_ALIASES = {"repeat": "repetition", "extract": "extraction", "paraphrase": "paraphrase",
                "translate": "translation"}


class QueryError(ValueError):
    """A bad seeds file or query set (the message names the file and task)."""


@dataclass(frozen=True)
class Query:
    task: str
    query_id: str
    query: str
    benign: bool
    passage: str  # "" (the whole text) or "<unit>:<n>" (n = -1: the last one)
    origin: str  # "copyprobe" (own seeds) or the seeds file's path

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


# ------------------------------------------------------------------------ intent rules

_LANGUAGES = ("english", "french", "german", "spanish", "italian", "portuguese", "dutch",
              "russian", "chinese", "mandarin", "japanese", "korean", "arabic", "hindi",
              "turkish", "polish", "swedish", "greek", "hebrew", "vietnamese", "indonesian")
_LANGUAGE = re.compile(r"\b(?:" + "|".join(_LANGUAGES) + r")\b", re.I)
_PARAPHRASE = re.compile(
    r"\b(?:paraphras\w*|rephras\w*|reword\w*|rewrit\w*|restat\w*|own words|"
    r"different (?:words|wording|terms)|chang\w* the wording|simpler (?:terms|language|words)|"
    r"plain (?:language|english|words))\b", re.I)
_ORDINALS = {"first": 1, "opening": 1, "initial": 1, "1st": 1, "second": 2, "2nd": 2,
             "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5, "5th": 5, "last": -1,
             "final": -1, "closing": -1}
_UNITS = {"sentence": "sentence", "sentences": "sentence", "paragraph": "paragraph",
          "paragraphs": "paragraph", "line": "line", "lines": "line", "verse": "paragraph",
          "stanza": "paragraph"}
_PASSAGE = re.compile(r"\b(?P<ord>" + "|".join(_ORDINALS) + r")\s+(?P<unit>"
                      + "|".join(_UNITS) + r")\b", re.I)
_REPETITION = re.compile(
    r"\b(?:repeat\w*|verbatim|word[- ]for[- ]word|exact(?:ly)?|cop(?:y|ies)|duplicat\w*|"
    r"reproduc\w*|replicat\w*|echo\w*|transcrib\w*|write out|type out)\b", re.I)
_BENIGN = {
    "summary": re.compile(r"\b(?:summar\w*|main (?:point|idea)s?|gist|key points?)\b", re.I),
    "author": re.compile(r"\b(?:author\w*|who (?:wrote|published|is the writer)|written by|"
                         r"writer|publisher|organi[sz]ation behind)\b", re.I),
    "comment": re.compile(r"\b(?:opinion|what do you think|comment\w*|critique|assess\w*|"
                          r"writing style|tone)\b", re.I),
    "background": re.compile(r"\b(?:background|context|history|topic)\b", re.I),
}


def task_of(query: str) -> str | None:
    """The task a query asks for by a keyword rule, or None when it names none.

    Checked in this order, so a query that mixes words picks the more specific task:
    translation (a language or "translate"), paraphrase ("rephrase", "own words", ...),
    extraction (a named passage: an ordinal and a unit, "the second sentence"), repetition
    ("repeat", "verbatim", "copy", ...), then the benign tasks.
    """
    # "plain English" asks for simpler words, not for a language
    plain = re.sub(r"\b(?:plain|simple|simpler|everyday)\s+english\b", "plain language", query,
                   flags=re.I)
    if re.search(r"\btranslat", plain, re.I) or _LANGUAGE.search(plain):
        return "translation"
    if _PARAPHRASE.search(query):
        return "paraphrase"
    if _PASSAGE.search(query):
        return "extraction"
    if _REPETITION.search(query):
        return "repetition"
    for task, rule in _BENIGN.items():
        if rule.search(query):
            return task
    return None


def keeps_task(task: str, query: str) -> bool:
    """Whether the keyword rule reads ``task`` in ``query``."""
    return task_of(query) == task


def passage_of(query: str) -> str:
    """The passage a query names, ``"<unit>:<n>"`` (``sentence:2``; n = -1 for "the last"),
    or "" when it names none (the whole text)."""
    m = _PASSAGE.search(query)
    if m is None:
        return ""
    return f"{_UNITS[m['unit'].lower()]}:{_ORDINALS[m['ord'].lower()]}"


# A sentence ends at ".", "!" or "?" (optionally closed by a quote or bracket) before white
# space; a small rule, not a trained sentence splitter: abbreviations ("Dr. No") split too.
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")


def passage_units(text: str, unit: str) -> list[str]:
    """The sentences, paragraphs (blocks between blank lines) or non-empty lines of a text."""
    if unit == "line":
        return [ln.strip() for ln in text.splitlines() if ln.strip()]
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    if unit == "paragraph":
        return paragraphs
    if unit == "sentence":
        return [s.strip() for p in paragraphs for s in _SENTENCE_SPLIT.split(p) if s.strip()]
    raise ValueError(f"passage unit {unit!r} is not sentence, paragraph or line")


def passage_text(text: str, passage: str) -> str | None:
    """The passage of ``text`` that ``passage`` (from :func:`passage_of`) names: the whole text
    for "", else that sentence/paragraph/line, or None when the text has too few."""
    if not passage:
        return text
    unit, _, n = passage.partition(":")
    try:
        index = int(n)
    except ValueError:
        raise ValueError(f"passage {passage!r} is not '<unit>:<n>'") from None
    units = passage_units(text, unit)
    if index == -1:
        return units[-1] if units else None
    return units[index - 1] if 1 <= index <= len(units) else None


# ----------------------------------------------------------------------------- loading

def _query_id(task: str, origin: str, i: int, query: str) -> str:
    kind = "own" if origin == "copyprobe" else "seeds"
    return f"{task}:{kind}:{i:02d}:{text_id(query, length=8)}"


def _make(task: str, queries: list[str], origin: str, benign: bool) -> list[Query]:
    return [Query(task, _query_id(task, origin, i, q), q, benign,
                  passage_of(q) if task == "extraction" else "", origin)
            for i, q in enumerate(queries, start=1)]


def own_seeds(*, benign: bool = False) -> list[Query]:
    """copyprobe's own seed queries (3 per task; with ``benign``, also the benign set)."""
    raw = json.loads(resources.files("copyprobe.copyright").joinpath("data/queries.json")
                     .read_text(encoding="utf-8"))
    out = [q for task in TASKS for q in _make(task, raw["tasks"][task], "copyprobe", False)]
    return out + (benign_queries() if benign else [])


def benign_queries() -> list[Query]:
    """The benign set (2 per benign task, copyprobe's own words)."""
    raw = json.loads(resources.files("copyprobe.copyright").joinpath("data/queries.json")
                     .read_text(encoding="utf-8"))
    return [q for task in BENIGN_TASKS for q in _make(task, raw["benign"][task], "copyprobe",
                                                      True)]


def load_seeds_json(path: str | Path) -> list[Query]:
    """The queries of a released-format ``seeds.json``: every task of :data:`TASKS` (or its
    released alias) must be there; another task name is an error naming the file."""
    from copyprobe.sources.base import SourceError
    from copyprobe.sources.materials.dataset import load_query_seeds, seeds_file

    try:
        raw = load_query_seeds(path)
    except SourceError as exc:
        raise QueryError(str(exc)) from exc
    origin = str(seeds_file(Path(path)))
    by_task: dict[str, list[str]] = {}
    for name, queries in raw.items():
        task = TASK_ALIASES.get(name, name)
        if task not in TASKS:
            raise QueryError(f"seed queries: {origin}: task {name!r} is not one of "
                             f"{list(TASKS)} (or {list(TASK_ALIASES)})")
        if task in by_task:
            raise QueryError(f"seed queries: {origin}: task {task!r} is given twice "
                             f"(as {name!r} and under another name)")
        by_task[task] = queries
    missing = [t for t in TASKS if t not in by_task]
    if missing:
        raise QueryError(f"seed queries: {origin}: no queries for task(s) {missing}")
    return [q for task in TASKS for q in _make(task, by_task[task], origin, False)]


def off_task(queries: list[Query]) -> list[dict[str, object]]:
    """The queries whose keyword rule reads another task than their label (for the report)."""
    return [{"query_id": q.query_id, "task": q.task, "rule_reads": task_of(q.query),
             "query": q.query} for q in queries if not keeps_task(q.task, q.query)]


def write_seeds_json(path: str | Path, queries: dict[str, list[str]]) -> Path:
    """Write ``{task: [query, ...]}`` as a ``seeds.json`` in the released format (tasks under
    copyprobe's names, in :data:`TASKS` order; :func:`load_seeds_json` reads it back), written
    atomically. Every task of :data:`TASKS` needs at least one query."""
    from copyprobe.artifacts import write_text

    missing = [t for t in TASKS if not queries.get(t)]
    unknown = [t for t in queries if t not in TASKS]
    if missing or unknown:
        raise QueryError(f"seeds.json {path}: every task of {list(TASKS)} needs queries "
                         f"(missing: {missing}; unknown: {unknown})")
    ordered = {t: [str(q) for q in queries[t]] for t in TASKS}
    return write_text(path, json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")
