"""Similarity metrics of the copyright benchmark, one module per metric: ROUGE-L
(:mod:`.rouge`), BERTScore (:mod:`.bertscore`) and multilingual embedding cosine
(:mod:`.embedding`). Importing this package imports none of them, so ROUGE-L never pulls in
torch."""
