"""Curation: D_pre / D_post per (model, source), with length filters and duplicate removal.

Every document of a model appears in its curated table, kept or not; a dropped document carries
the reason, so a reader can always account for the whole corpus. ``split`` holds the cutoff
and length rules, ``dedup`` exact and near-duplicate detection, ``table`` the CURATED table,
``report`` the per-model curation report.
"""

from copyprobe.curation.dedup import DedupSettings
from copyprobe.curation.split import EXCLUSIONS, SplitRules, assign_split, word_count
from copyprobe.curation.table import curate, models_rows

__all__ = ["EXCLUSIONS", "DedupSettings", "SplitRules", "assign_split", "curate", "models_rows",
           "word_count"]
