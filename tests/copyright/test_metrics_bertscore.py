"""BERTScore F1 with the packaged all-MiniLM-L6-v2, on pairs whose order is clear by hand."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.copyright.metrics.bertscore import BertScorer, default_model_path

ORIGINAL = ("The old lighthouse keeper climbed the spiral stairs every evening to light the "
            "great lamp before the fishing boats came home.")
PARAPHRASE = ("Each night, before the fishing fleet returned, the elderly keeper of the "
              "lighthouse went up the winding steps to switch on its big lamp.")
UNRELATED = ("Quarterly revenue rose by twelve percent, driven mainly by strong demand for "
             "cloud storage subscriptions in Europe.")


@pytest.fixture(scope="module")
def scorer() -> BertScorer:
    return BertScorer()


def test_identical_related_unrelated(scorer: BertScorer) -> None:
    f1 = scorer.score([ORIGINAL, PARAPHRASE, UNRELATED, ORIGINAL],
                      [ORIGINAL, ORIGINAL, ORIGINAL, "   "])
    assert f1.dtype == np.float64 and f1.shape == (4,)
    assert f1[0] == pytest.approx(1.0, abs=1e-5)
    assert f1[1] > f1[2] + 0.15  # a paraphrase beats an unrelated text clearly
    assert 0.0 < f1[2] < f1[1] < 0.99
    assert f1[3] == 0.0  # a blank side scores 0 (bert-score's own empty path fails)


def test_default_model_and_settings(scorer: BertScorer) -> None:
    assert (default_model_path() / "model.safetensors").is_file()
    s = scorer.settings()
    assert s["num_layers"] == 6 and s["model"] == str(default_model_path())
    assert s["rescale_with_baseline"] is False


def test_bad_input_is_named(scorer: BertScorer) -> None:
    with pytest.raises(TypeError, match=r"BERTScore: row 1: the prediction is NoneType"):
        scorer.score(["a", None], ["a", "b"])
    with pytest.raises(ValueError, match="1 predictions but 2 references"):
        scorer.score(["a"], ["a", "b"])


def test_unknown_model_needs_a_layer_and_t5_paths_are_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="give num_layers"):
        BertScorer(model_path="some-org/unknown-model")
    t5 = tmp_path / "matt5"
    t5.mkdir()
    (t5 / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 6}')
    with pytest.raises(ValueError, match="'t5' in its path"):
        BertScorer(model_path=t5)
