"""Ground truth by insertion: a document set split at random (seeded) into members and
non-members, members spread evenly over duplication levels, written as a Parquet artifact
whose digest names the plan (docs/membership.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from copyprobe.artifacts import TableSpec, provenance, read_meta, read_table, write_table
from copyprobe.store import content_key

#: the plan: each document's id, whether it is inserted, and how many times (0: not)
INSERTION = TableSpec("insertion_plan", pa.schema([
    ("doc_id", pa.string()), ("member", pa.bool_()), ("repeats", pa.int64()),
]))


class PlanError(ValueError):
    """Bad input to a plan; the message names the file, row or option."""


def parse_repeats(text: str) -> tuple[int, ...]:
    """``"1,4"`` -> (1, 4): distinct positive duplication levels (``--repeats``)."""
    try:
        levels = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise PlanError(f"--repeats {text!r}: expected comma-separated integers, e.g. 1,4") \
            from None
    if not levels or min(levels) < 1 or len(set(levels)) != len(levels):
        raise PlanError(f"--repeats {text!r}: levels must be distinct integers of at least 1")
    return levels


def check_documents(docs: pd.DataFrame, source: str) -> None:
    """Every document has a unique id and non-blank text; errors name ``source`` and the row."""
    seen: dict[str, int] = {}
    for row, (doc_id, text) in enumerate(zip(docs["doc_id"], docs["text"], strict=True), 1):
        if doc_id in seen:
            raise PlanError(f"{source} document {row}: doc_id {doc_id!r} appears twice "
                            f"(first in document {seen[doc_id]})")
        seen[doc_id] = row
        if not str(text).strip():
            raise PlanError(f"{source} document {row} (doc_id {doc_id!r}): empty text")


def make_plan(doc_ids: Sequence[str], *, seed: int, member_fraction: float = 0.5,
              repeats: Sequence[int] = (1, 4)) -> pd.DataFrame:
    """The insertion plan of ``doc_ids`` (in their order): ``round(fraction * n)`` members
    drawn at random with ``seed``, dealt to the levels of ``repeats`` in turn (so the levels
    differ in size by at most one); non-members get 0 repeats."""
    if not 0.0 < member_fraction < 1.0:
        raise PlanError(f"--member-fraction {member_fraction}: must lie strictly between 0 "
                        "and 1 (both members and non-members are needed)")
    n = len(doc_ids)
    n_members = int(round(member_fraction * n))
    if n_members < len(repeats) or n - n_members < 1:
        raise PlanError(f"--member-fraction {member_fraction} of {n} documents gives "
                        f"{n_members} member(s) and {n - n_members} non-member(s); each of "
                        f"the {len(repeats)} duplication level(s) needs a member and there "
                        "must be non-members")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    reps = np.zeros(n, dtype=np.int64)
    for i, doc in enumerate(order[:n_members]):
        reps[doc] = repeats[i % len(repeats)]
    return pd.DataFrame({"doc_id": [str(d) for d in doc_ids], "member": reps > 0,
                         "repeats": reps})


def plan_digest(plan: pd.DataFrame) -> str:
    """sha256 of the plan's rows (doc_id, member, repeats), sorted by doc_id: the same plan
    gives the same digest whatever the row order or file."""
    rows = sorted((str(d), bool(m), int(r))
                  for d, m, r in zip(plan["doc_id"], plan["member"], plan["repeats"],
                                     strict=True))
    return content_key(rows)


def documents_digest(docs: pd.DataFrame) -> str:
    """sha256 of the documents' (doc_id, text) pairs, sorted by doc_id."""
    return content_key(sorted(zip(docs["doc_id"].astype(str), docs["text"].astype(str),
                                  strict=True)))


def write_plan(plan: pd.DataFrame, path: str | Path, **settings: Any) -> str:
    """Write the plan atomically with its settings and digest as provenance; return the
    digest."""
    digest = plan_digest(plan)
    write_table(plan, path, INSERTION,
                provenance("membership_insertion", settings, plan_digest=digest))
    return digest


def read_plan(path: str | Path, expected_digest: str | None = None) -> pd.DataFrame:
    """A plan (or a canary record) whose rows still give the digest it was written with (and
    ``expected_digest`` when given): a changed row is an error naming the file."""
    plan = read_table(path, INSERTION)
    digest, stored = plan_digest(plan), read_meta(path).get("plan_digest")
    for want, what in ((stored, "the digest it was written with"),
                       (expected_digest, "the expected digest")):
        if want is not None and digest != want:
            raise PlanError(f"{path}: its rows' digest {digest[:12]}... is not {what} "
                            f"({want[:12]}...): the record was changed")
    return plan


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def cut_to_words(text: str, words: int) -> str:
    """``text``'s first whole sentences, as many as bring the count nearest ``words`` words
    (whitespace collapsed)."""
    kept: list[str] = []
    count = 0
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        n = len(sentence.split())
        if kept and abs(count + n - words) > abs(count - words):
            break
        kept.append(sentence)
        count += n
    return " ".join(kept)


def control_documents(folder: str | Path, words: int = 120) -> pd.DataFrame:
    """The invented control documents of ``folder`` (its metadata.csv's files, in order) as
    ``doc_id`` (the file's stem) and ``text``: :func:`cut_to_words` of each."""
    folder = Path(folder)
    return pd.DataFrame([{"doc_id": Path(name).stem,
                          "text": cut_to_words((folder / name).read_text(encoding="utf-8"),
                                               words)}
                         for name in pd.read_csv(folder / "metadata.csv")["file"]])
