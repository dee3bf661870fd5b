"""Score generations against their held-out references, in paper mode and word mode.

A failed generation is carried as a row with ``status='failed'`` and no scores: it is never
matched as text, and the statistics report how many documents were lost that way. A row whose
word-mode match exceeds the memory budget (both texts repeating one phrase thousands of times)
gets ``status='unscorable'``.
"""

from __future__ import annotations

import json
import logging

import pandas as pd

from copyprobe.artifacts import MATCHES
from copyprobe.matching import DEFAULT_MAX_PAIRS, WordMatch, paper_match, word_match
from copyprobe.progress import Progress

log = logging.getLogger(__name__)


def score(prompts: pd.DataFrame, generations: pd.DataFrame, *, k_min: int,
          k_max: int) -> pd.DataFrame:
    """The MATCHES table: one row per generation (request and sample)."""
    ready = prompts[prompts["status"] == "ready"].set_index("request_id")
    missing = set(generations["request_id"]) - set(ready.index)
    if missing:
        raise ValueError(f"generations refer to unknown request_id(s): {sorted(missing)[:5]}")
    rows = []
    progress = Progress(len(generations), "msr_count_matches")
    for g in generations.itertuples(index=False):
        p = ready.loc[g.request_id]
        row = {"model": p["model"], "source": p["source"], "doc_id": p["doc_id"],
               "split": p["split"], "request_id": g.request_id, "sample_index": g.sample_index,
               "status": g.status}
        if g.status != "ok":
            rows.append(row)
            progress.update()
            continue
        pm = paper_match(p["reference"], g.text, p["document"])
        row.update(paper_lcs=pm.lcs, paper_lcs_words=pm.lcs_words, paper_unique=pm.unique)
        wm = _word_match(p["reference"], g.text, k_min, k_max)
        if wm is None:
            row["status"] = "unscorable"
            rows.append(row)
            progress.update()
            continue
        row.update(
            word_longest=wm.longest, word_longest_text=wm.longest_text,
            word_maximal=json.dumps([list(m) for m in wm.maximal]),
            word_kgram_counts=[wm.kgram_counts[k] for k in range(k_min, k_max + 1)],
            word_lcp=wm.lcp, word_edit_similarity=wm.edit_similarity,
            reference_words=wm.reference_words, generation_words=wm.generation_words,
        )
        rows.append(row)
        progress.update()
    progress.close()
    return pd.DataFrame(rows, columns=MATCHES.columns)


def _word_match(reference: str, generation: str, k_min: int, k_max: int) -> WordMatch | None:
    """Word mode, with a larger pair budget for highly repetitive texts (both sides repeating
    one phrase); None when even that is exceeded, so the row is marked, not the job crashed."""
    for max_pairs in (DEFAULT_MAX_PAIRS, 10 * DEFAULT_MAX_PAIRS):
        try:
            return word_match(reference, generation, k_min=k_min, k_max=k_max,
                              max_pairs=max_pairs)
        except ValueError as exc:
            log.warning("word mode: %s (max_pairs=%d)", exc, max_pairs)
    return None
