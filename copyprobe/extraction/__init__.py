"""The extraction study: how much of a text a model can reproduce, measured exactly.

A document is cut into sliding windows in the model's own tokens (a prefix and a suffix,
Cooper et al. 2025: 50 + 50). Each window is scored teacher-forced in one forward pass:
``p_z`` is the product over the suffix tokens of ``p(token | everything before it)``, and a
window is *(n,p)-discoverable* when ``1 - (1 - p_z)^n >= p`` (Hayes et al. 2024). Models
without prompt log-probabilities get a Monte Carlo estimate of ``p_z`` with a sequential
Clopper-Pearson test instead. Per-document extractability is compared between D_pre and
D_post beside the blind text-only baseline.

The library math lives in modules without a model:

* :mod:`copyprobe.extraction.windows` -- window geometry (:class:`WindowSpec`, cutting, skips).
* :mod:`copyprobe.extraction.discoverability` -- (n,p) thresholds, verdicts, document
  summaries and (n,p) curves.
* :mod:`copyprobe.extraction.montecarlo` -- Clopper-Pearson intervals and the sequential test.
* :mod:`copyprobe.extraction.analysis` -- D_pre vs D_post, and model AUC minus blind AUC.
"""
