"""TEMP stand-in (drop at merge): the math helper's module replaces it."""

from __future__ import annotations

from copyprobe.stats import blind_baseline
from copyprobe.stats.common import cliffs_delta


def compare_splits(docs_df, *, metrics, n_boot, seed, blind_folds, ci=0.95):
    from sklearn.metrics import roc_auc_score

    y = (docs_df["split"] == "D_pre").astype(int)
    out = {"metrics": {}, "notes": []}
    b = blind_baseline(docs_df["text"].tolist(), y.tolist(), folds=blind_folds, seed=seed, warn_auc=0.75, n_boot=n_boot)
    out["blind"] = b
    for m in metrics:
        x = docs_df[m].astype(float).fillna(-1e9)
        auc = float(roc_auc_score(y, x)) if y.nunique() == 2 else None
        out["metrics"][m] = {"auc": auc, "auc_ci": [auc, auc],
                             "cliffs_delta": float(cliffs_delta(x[y == 1], x[y == 0]))}
        out.setdefault("auc_minus_blind", {})[m] = {"value": None, "ci": [None, None]}
    return out
