"""A constructed WINDOWS table for the tables and figures tests: three D_pre documents whose
windows are likely, three D_post documents whose windows are not, one failed window and one
document shorter than one window."""

from __future__ import annotations

import numpy as np
import pandas as pd

from copyprobe.extraction.tables import WINDOWS

NS, PS = [1, 10, 100, 1000], [0.001, 0.01, 0.1, 0.5]


def windows_table() -> pd.DataFrame:
    rows = []
    # D_pre: p_z = 0.9, 0.6, 0.2, 0.05 (window 0..3) in doc0; lower in the others
    pre = {"doc0": [0.9, 0.6, 0.2, 0.05], "doc1": [0.3, 0.7, 1e-3, 1e-4],
           "doc2": [0.01, 0.02, 0.8, 1e-6]}
    post = {"doc3": [1e-9, 1e-12, 1e-8, 1e-10], "doc4": [1e-20, 1e-5, 1e-7, 1e-9],
            "doc5": [1e-30, 1e-15, 1e-4, 1e-11]}
    for split, docs in (("pre", pre), ("post", post)):
        for doc, pzs in docs.items():
            for i, pz in enumerate(pzs):
                lp = float(np.log(pz))
                rows.append(dict(model="m", source="s", doc_id=doc, split=split,
                                 window_index=i, start_token=50 * i, n_prefix_tokens=50,
                                 n_tokens=50, log_pz=lp, mean_logprob=lp / 50,
                                 greedy_match=pz > 0.5, path="one_pass", method="exact",
                                 status="scored", error_class="", error="",
                                 from_cache=False, latency_s=0.01))
    rows.append(dict(model="m", source="s", doc_id="doc0", split="pre", window_index=4,
                     start_token=200, n_prefix_tokens=50, n_tokens=50, path="one_pass",
                     method="exact", status="failed", error_class="NonFiniteLogprob",
                     error="non-finite log-probability at target token(s) [3]"))
    rows.append(dict(model="m", source="s", doc_id="short", split="post", window_index=-1,
                     start_token=0, n_prefix_tokens=0, n_tokens=0, method="exact",
                     status="skipped", error_class="TooShort",
                     error="12 tokens, fewer than one window of 50+50"))
    return pd.DataFrame(rows, columns=WINDOWS.columns)


CORPUS = pd.DataFrame({"doc_id": ["doc0", "doc1", "doc2", "doc3", "doc4", "doc5", "short"],
                       "text": ["an old licence text"] * 3 + ["an invented story"] * 4})
