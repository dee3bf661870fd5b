"""Fixtures of the MSR tests: a stats JSON result built by the real analyse() from hand-made
MATCHES rows, and the shared fixtures folder (the MSR authors' OpenStax files)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from copyprobe.artifacts import MATCHES, to_table
from copyprobe.msr.analysis import analyse

STATS = {"n_boot": 200, "seed": 0, "blind_folds": 2, "blind_warn_auc": 0.75}


def _result(docs, *, model="m", dataset="wiki", k_min=5, k_max=12, settings=None):
    """``docs``: {doc_id: (split, paper_lcs_words, longest, lcp, edit_similarity)}; every
    paper match is unique, so a document counts at k when paper_lcs_words > k."""
    ks = range(k_min, k_max + 1)
    rows = [{"model": model, "source": "s", "doc_id": d, "split": split, "request_id": d,
             "sample_index": 0, "status": "ok", "paper_lcs": "x", "paper_lcs_words": words,
             "paper_unique": True, "word_longest": longest, "word_longest_text": "",
             "word_maximal": "[]", "word_kgram_counts": [max(0, longest - k + 1) for k in ks],
             "word_lcp": lcp, "word_edit_similarity": es, "reference_words": 20,
             "generation_words": 20}
            for d, (split, words, longest, lcp, es) in docs.items()]
    m = to_table(pd.DataFrame(rows, columns=MATCHES.columns), MATCHES).to_pandas()
    corpus = pd.DataFrame({"source": "s", "doc_id": list(docs),
                           "text": [f"document {d} text" for d in docs]})
    return analyse(m, corpus, model=model, dataset=dataset, k_min=k_min, k_max=k_max,
                   statistics=STATS, settings=settings)


@pytest.fixture
def make_result():
    return _result


SHARED_FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``../shared/fixtures`` beside the project (the MSR authors' OpenStax CSV files); a test
    that needs it skips, naming the path, when it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES
