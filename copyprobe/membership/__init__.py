"""The membership study: was a document in a model's training data? (docs/membership.md)

The library math lives in modules without a model:

* :mod:`copyprobe.membership.scores` -- the per-document scores (loss, zlib ratio, Min-k%,
  Min-k%++, reference ratio) from one teacher-forced pass's per-token numbers.
* :mod:`copyprobe.membership.compare` -- members against non-members: AUC, TPR at low FPR,
  bootstrap intervals, beside the blind baseline.
* :mod:`copyprobe.membership.inference` -- dataset inference (Maini et al. 2024) and its
  measured false-positive rate.
* :mod:`copyprobe.membership.sets` / :mod:`.tables` -- D_pre against D_post on the scores,
  under MSR's and the extraction study's tables.
"""
